package ledger

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// # Reading a ledger another process holds
//
// Pebble locks a store's directory for the process that opens it, read-only
// opens included (pebble.Open takes the lock whatever Options.ReadOnly
// says), and opening it without the lock while another process writes is
// not safe: that process deletes the tables its compactions replace,
// recycles write-ahead-log files and rewrites the MANIFEST under the
// reader. Serving the ledger over the agent's HTTP address is not an
// option either: that address may be open to other hosts and serves only
// what the guarantee covers, while the ledger holds per-user counters.
//
// So the process holding a ledger opened with Options.LiveView makes a
// consistent copy of it on request (Store.Backup: every key as of one
// moment between two commits, the user key and the head file of that
// moment, verified), and a read-only Open from another process reads that
// copy. The request goes through a Unix socket inside the data directory
// (DIR/live/socket, in a directory only its owner may enter): who may
// connect is who may read the ledger's files, no more. The copy is written
// to DIR/live/copy-*, read by the requester under its own lock and
// removed by the holder when the requester closes the connection (its
// Store's Close, or its exit).

// The live view's names inside a data directory.
const (
	liveDir    = "live"
	liveSocket = "socket"
	liveCopy   = "copy-"
	// liveRequest is the request line of the live view protocol.
	liveRequest = "dprl-ledger-copy v1\n"
	// maxLiveReaders bounds the copies a holder keeps at one time.
	maxLiveReaders = 4
	// maxSocketPath is the longest path a Unix socket may have (Linux's
	// sun_path holds 108 bytes with the terminating NUL).
	maxSocketPath = 107
)

// liveReply is the holder's answer: the copy's name inside DIR/live and
// its head, or why there is none; Holder names the holding process.
type liveReply struct {
	Copy   string `json:"copy,omitempty"`
	Head   Head   `json:"head"`
	Holder string `json:"holder"`
	Error  string `json:"error,omitempty"`
}

// liveServer is a holder's side of the live view.
type liveServer struct {
	s      *Store
	dir    string // DIR/live
	holder string
	ln     *net.UnixListener
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
}

// selfHolder names this process as lockHolder names another.
func selfHolder() string {
	pid := fmt.Sprint(os.Getpid())
	if cmd := commandOf(pid); cmd != "" {
		return "pid " + pid + " (" + cmd + ")"
	}
	return "pid " + pid
}

// startLive serves copies of s to other processes through DIR/live/socket
// (see the section above). It first removes what an earlier holder left
// in DIR/live (the lock is held: no other holder serves there), except a
// copy a reader still holds open. A data directory whose socket path
// would be too long for a Unix socket gets no live view (logged).
func (s *Store) startLive() error {
	dir := filepath.Join(s.dir, liveDir)
	if err := clearLive(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	sock := filepath.Join(dir, liveSocket)
	if len(sock) > maxSocketPath {
		s.log.Warn().Str("socket", sock).Msg("the ledger's live view is off: the data directory's path is too long for a Unix socket (other processes cannot read the ledger while this one holds it)")
		return nil
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return err
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(sock, 0o600); err != nil {
		ln.Close()
		return err
	}
	ls := &liveServer{s: s, dir: dir, holder: selfHolder(), ln: ln, conns: map[net.Conn]bool{}}
	s.live = ls
	ls.wg.Add(1)
	go ls.serve()
	return nil
}

// clearLive removes the socket and the copies in dir that no reader holds
// (a reader holds its copy's lock while it reads).
func clearLive(dir string) error {
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if strings.HasPrefix(e.Name(), liveCopy) && e.IsDir() {
			if l, err := pebble.LockDirectory(filepath.Join(p, pebbleDir), vfs.Default); err == nil {
				l.Close()
			} else if _, serr := os.Stat(filepath.Join(p, pebbleDir)); serr == nil {
				continue // a reader still reads it
			}
		}
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	return nil
}

// serve accepts requests until stop.
func (ls *liveServer) serve() {
	defer ls.wg.Done()
	for {
		c, err := ls.ln.Accept()
		if err != nil {
			return
		}
		ls.mu.Lock()
		if ls.closed {
			ls.mu.Unlock()
			c.Close()
			return
		}
		busy := len(ls.conns) >= maxLiveReaders
		ls.conns[c] = true
		ls.wg.Add(1)
		ls.mu.Unlock()
		go ls.handle(c, busy)
	}
}

// handle answers one request: it copies the store into DIR/live, replies
// with the copy's name, waits for the requester to close the connection
// and removes the copy.
func (ls *liveServer) handle(c net.Conn, busy bool) {
	defer ls.wg.Done()
	defer func() {
		ls.mu.Lock()
		delete(ls.conns, c)
		ls.mu.Unlock()
		c.Close()
	}()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != liveRequest {
		return
	}
	rep := liveReply{Holder: ls.holder}
	var copyDir string
	if busy {
		rep.Error = fmt.Sprintf("%d other copies are being read", maxLiveReaders)
	} else {
		var suffix [8]byte
		rand.Read(suffix[:])
		rep.Copy = liveCopy + hex.EncodeToString(suffix[:])
		copyDir = filepath.Join(ls.dir, rep.Copy)
		res, err := ls.s.Backup(copyDir)
		if err != nil {
			rep.Copy, rep.Error, copyDir = "", err.Error(), ""
		}
		rep.Head = res.Head
	}
	if copyDir != "" {
		defer os.RemoveAll(copyDir)
	}
	b, _ := json.Marshal(rep)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(append(b, '\n')); err != nil || rep.Error != "" {
		return
	}
	// The requester reads the copy until it closes the connection.
	c.SetDeadline(time.Time{})
	var buf [1]byte
	for {
		if _, err := c.Read(buf[:]); err != nil {
			return
		}
	}
}

// stop closes the socket and every connection (their copies are removed)
// and waits for the handlers. A copy being made is finished first.
func (ls *liveServer) stop() {
	if ls == nil {
		return
	}
	ls.mu.Lock()
	ls.closed = true
	ls.ln.Close()
	for c := range ls.conns {
		c.Close()
	}
	ls.mu.Unlock()
	ls.wg.Wait()
}

// errNoLiveView: the holder of a locked ledger serves no copies.
var errNoLiveView = errors.New("ledger: no live view")

// openLive opens, read-only, a consistent copy of the ledger in dir that
// the process holding its lock makes on request (see the section above).
// errNoLiveView when no holder answers on DIR/live/socket.
func openLive(dir string, o Options) (*Store, error) {
	sock := filepath.Join(dir, liveDir, liveSocket)
	if len(sock) > maxSocketPath {
		return nil, errNoLiveView
	}
	c, err := net.DialTimeout("unix", sock, 2*time.Second)
	if err != nil {
		return nil, errNoLiveView
	}
	// A copy is verified before the reply: allow for a large ledger.
	c.SetDeadline(time.Now().Add(10 * time.Minute))
	if _, err := c.Write([]byte(liveRequest)); err != nil {
		c.Close()
		return nil, errNoLiveView
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	var rep liveReply
	if err == nil {
		err = json.Unmarshal([]byte(line), &rep)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%w: data directory %s is in use by another process, which did not answer the request for a copy to read: %w", ErrLocked, dir, err)
	}
	c.SetDeadline(time.Time{})
	if rep.Error != "" || rep.Copy == "" || filepath.Base(rep.Copy) != rep.Copy || !strings.HasPrefix(rep.Copy, liveCopy) {
		c.Close()
		return nil, fmt.Errorf("%w: data directory %s is in use by %s, which could not make a copy to read: %s", ErrLocked, dir, rep.Holder, rep.Error)
	}
	ro := o
	ro.ReadOnly, ro.MustExist, ro.LiveView, ro.WaitLock = true, true, false, 0
	s, err := Open(filepath.Join(dir, liveDir, rep.Copy), ro)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("ledger: the copy of %s made by %s: %w", dir, rep.Holder, err)
	}
	s.liveConn = c
	o.Logger.Info().Str("dir", dir).Str("holder", rep.Holder).Uint64("head", rep.Head.Seq).
		Msg("the ledger is in use: reading a consistent copy its holder made now (entries up to the head; later ones are not in it)")
	return s, nil
}
