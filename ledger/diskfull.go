package ledger

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// ErrDiskFull is returned when a write failed, or was refused before it
// started, because the file system of the data directory has no space
// left (ENOSPC) or the user's quota is spent (EDQUOT). It never wraps
// ErrCorrupt: the ledger is intact (a commit is all or nothing, and the
// head file accepts a commit whose record is missing). The error's text
// says what to do: free space; where it also says to restart, the store
// refuses every write until it is reopened (Pebble's commit pipeline
// stops at a failed write-ahead-log write); otherwise writes resume by
// themselves once space is back (Store.Writable tells).
var ErrDiskFull = errors.New("ledger: the disk is full")

// ErrNeedsRestart marks an ErrDiskFull after which this process cannot
// write to the store again (a failed write-ahead-log write stops Pebble's
// commit pipeline; a failed open): free space and open the ledger again.
var ErrNeedsRestart = errors.New("ledger: the store must be reopened")

// spaceHeadroom is the free space Pebble needs beyond the tables it
// flushes: its MANIFEST and OPTIONS files. Commits are refused
// (ErrDiskFull) below writeReserve, so that a disk filling up stops the
// ledger at a clean point, before Pebble's own writes fail (a failed
// MANIFEST write ends the process).
const spaceHeadroom = 1 << 20

// memTableSize is Pebble's memtable size (its default, set explicitly so
// that the reserve below knows it). Pebble preallocates a new write-ahead
// log in blocks of 110% of it, so a commit needs that much room too.
const memTableSize = 4 << 20

// writeReserve is the free space a commit needs beyond its batch and the
// unflushed write-ahead log: a new log's preallocation and the headroom.
const writeReserve = memTableSize*11/10 + spaceHeadroom

// isDiskFull reports whether err is a full disk or a spent quota.
func isDiskFull(err error) bool {
	return err != nil && (errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || isDiskFullText(err.Error()))
}

// isDiskFullText reports whether a message (a Pebble panic's, which keeps
// only the text of its cause) says the disk is full.
func isDiskFullText(s string) bool {
	return strings.Contains(s, syscall.ENOSPC.Error()) || strings.Contains(s, syscall.EDQUOT.Error())
}

// diskFullError is ErrDiskFull saying what could not be written and what
// to do.
type diskFullError struct {
	dir     string
	what    string // what could not be written
	restart bool   // the store must be reopened
	cause   string
}

func (e *diskFullError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ledger: the disk is full: %s (%s). The ledger is intact: nothing was half-written, and dprl ledger verify passes. ", e.what, e.cause)
	if e.restart {
		fmt.Fprintf(&b, "Free space on the file system of %s, then restart; this process cannot write to the ledger again", e.dir)
	} else {
		fmt.Fprintf(&b, "Writes resume once space is freed on the file system of %s", e.dir)
	}
	return b.String()
}

// Is makes the error ErrDiskFull for errors.Is.
// With restart it is also ErrNeedsRestart.
func (e *diskFullError) Is(target error) bool {
	return target == ErrDiskFull || (e.restart && target == ErrNeedsRestart)
}

func (s *Store) diskFull(what string, restart bool, cause error) error {
	return &diskFullError{dir: s.dir, what: what, restart: restart, cause: causeText(cause)}
}

// causeText is a cause's first line, without Pebble's doubled prefix.
func causeText(err error) string {
	t := firstLine(err.Error())
	for strings.HasPrefix(t, "pebble: pebble: ") {
		t = strings.TrimPrefix(t, "pebble: ")
	}
	return t
}

// fmtBytes prints a size in KiB or MiB.
func fmtBytes(n uint64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d KiB", (n+1023)>>10)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// Writable reports whether the store can take a write now: nil, or the
// error a write would fail with. A store waiting for space (ErrDiskFull
// without a restart: a head record still to write, a flush that failed,
// too little free space) retries here: the pending head record is
// written, so a caller that paused its writes polls Writable to resume.
func (s *Store) Writable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return s.writable(0)
}

// writable checks, before a commit of about n bytes, that the store can
// write: its health, the head record a full disk left pending (written
// now if it can be), Pebble's flushes, and the free space. Called with
// s.mu held.
func (s *Store) writable(n int) error {
	if err := s.health.get(); err != nil {
		if errors.Is(err, ErrDiskFull) {
			return err
		}
		return fmt.Errorf("ledger: refusing to write after an earlier failure: %w", err)
	}
	if s.heads == nil {
		return nil // read-only: commit says so
	}
	if p := s.pendingHead; p != nil {
		if err := s.heads.append(*p); err != nil {
			if isDiskFull(err) {
				return s.diskFull(fmt.Sprintf("entry %d is committed but its head record could not be written to %s yet; no write is accepted before it is", p.Seq, headsFile), false, err)
			}
			err = fmt.Errorf("ledger: entry %d is committed but its head record could not be written to %s (the store refuses further writes; reopening writes the record): %w", p.Seq, headsFile, err)
			s.health.fail(err)
			return err
		}
		s.pendingHead = nil
		s.log.Warn().Uint64("seq", p.Seq).Msg("ledger: wrote the head record a full disk had held back; writes resume")
	}
	if err := s.bg.flushErr(); err != nil {
		return s.diskFull("Pebble cannot flush its write-ahead log to a table", false, err)
	}
	return s.checkSpace(uint64(n))
}

// checkSpace refuses a write of n bytes when the data directory's file
// system has less free space than the unflushed write-ahead log, n and
// spaceHeadroom. A file system that cannot tell (an in-memory one) passes.
func (s *Store) checkSpace(n uint64) error {
	u, err := s.fs.GetDiskUsage(s.dir)
	if err != nil {
		return nil
	}
	need := n + writeReserve
	if s.db != nil {
		need += s.db.Metrics().WAL.Size
	}
	if u.AvailBytes < need {
		return s.diskFull(fmt.Sprintf("%s free, below the %s a write needs (its batch, room to flush the unflushed write-ahead log and to start a new one)", fmtBytes(u.AvailBytes), fmtBytes(need)), false, syscall.ENOSPC)
	}
	return nil
}

// checkOpenSpace refuses a writable open of an existing store when the
// file system cannot take the table its write-ahead logs flush into at
// open (Pebble retries a failed flush without end, and Open waits for
// it).
func (s *Store) checkOpenSpace(pdir string) error {
	u, err := s.fs.GetDiskUsage(pdir)
	if err != nil {
		return nil
	}
	names, err := s.fs.List(pdir)
	if err != nil {
		return nil
	}
	var wal uint64
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			if st, err := s.fs.Stat(filepath.Join(pdir, n)); err == nil {
				wal += uint64(st.Size())
			}
		}
	}
	if need := wal + spaceHeadroom; u.AvailBytes < need && len(s.strayTables) > 0 {
		// A flush cut short (a full disk, then SIGKILL) leaves its
		// partial table, which Pebble deletes only after the flush it has
		// no room for: delete it first.
		for _, p := range s.strayTables {
			if err := s.fs.Remove(p); err == nil {
				s.log.Warn().Str("file", p).Msg("ledger: removed a table file the store does not reference (a flush cut short), to make room for the flush at open")
			}
		}
		s.strayTables = nil
		if u, err = s.fs.GetDiskUsage(pdir); err != nil {
			return nil
		}
	}
	if need := wal + spaceHeadroom; u.AvailBytes < need {
		return s.diskFull(fmt.Sprintf("opening the ledger flushes its %s write-ahead log into a table and needs about %s free; %s is free", fmtBytes(wal), fmtBytes(need), fmtBytes(u.AvailBytes)), true, syscall.ENOSPC)
	}
	return nil
}

// bgState is what the store's event listener learned from Pebble's
// background work: a flush that failed on a full disk (cleared by the next
// flush that succeeds), and the backoff of Pebble's retries.
type bgState struct {
	mu        sync.Mutex
	flushFail error
	fails     int // consecutive disk-full background errors
	openFull  chan error
}

func newBGState() *bgState { return &bgState{openFull: make(chan error, 1)} }

func (b *bgState) flushErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.flushFail
}

// flushEnd records a flush's outcome.
func (b *bgState) flushEnd(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if isDiskFull(err) {
		b.flushFail = err
		return
	}
	b.flushFail, b.fails = nil, 0
}

// backgroundFull records a disk-full background error, tells a waiting
// Open, and waits before Pebble retries: Pebble retries a failed flush at
// once and without end (thousands of times a second), holding its mutex
// while this runs, so the wait doubles from 10 ms up to a second.
func (b *bgState) backgroundFull(err error) {
	b.mu.Lock()
	b.fails++
	n := b.fails
	b.mu.Unlock()
	select {
	case b.openFull <- err:
	default:
	}
	d := 10 * time.Millisecond << min(n-1, 7)
	time.Sleep(min(d, time.Second))
}

// openWatched is pebble.Open for writing, which flushes the write-ahead
// log it replays and waits for that flush; on a full disk Pebble retries
// the flush without end and Open never returns. So Open runs in a
// goroutine of its own, and the first disk-full background error ends the
// wait with ErrDiskFull. The abandoned Open keeps retrying (slowly, see
// bgState) and holds the directory's lock until it finishes, when its
// store is closed: in a process that exits on the error, that is never.
func (s *Store) openWatched(pdir string, opts *pebble.Options) (*pebble.DB, error) {
	type result struct {
		db  *pebble.DB
		err error
	}
	var (
		mu        sync.Mutex
		abandoned bool
		done      = make(chan result, 1)
	)
	closeQuietly := func(db *pebble.DB) {
		defer func() { _ = recover() }()
		_ = db.Close()
	}
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r = result{err: s.panicError(p)}
			}
			mu.Lock()
			defer mu.Unlock()
			if abandoned {
				if r.db != nil {
					closeQuietly(r.db)
				}
				return
			}
			done <- r
		}()
		r.db, r.err = pebble.Open(pdir, opts)
	}()
	select {
	case r := <-done:
		return r.db, r.err
	case err := <-s.bg.openFull:
		mu.Lock()
		abandoned = true
		select {
		case r := <-done: // finished meanwhile
			mu.Unlock()
			if r.err == nil {
				return r.db, nil
			}
			return nil, r.err
		default:
		}
		mu.Unlock()
		return nil, s.diskFull(fmt.Sprintf("opening the ledger must flush its write-ahead log into a table in %s, and that write failed", pdir), true, err)
	}
}

// unreferencedTables lists the table files in the store's directory that
// the open store's current version does not reference: what a flush or a
// compaction cut short leaves (Pebble deletes them at a writable open,
// after the flush that replays the write-ahead log). Nil on any doubt.
func (s *Store) unreferencedTables() []string {
	pdir := filepath.Join(s.dir, pebbleDir)
	levels, err := s.db.SSTables()
	if err != nil {
		return nil
	}
	live := make(map[uint64]bool)
	for _, l := range levels {
		for _, t := range l {
			live[uint64(t.BackingSSTNum)] = true
		}
	}
	names, err := s.fs.List(pdir)
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range names {
		num, ok := strings.CutSuffix(n, ".sst")
		if !ok {
			continue
		}
		v, err := strconv.ParseUint(num, 10, 64)
		if err != nil {
			return nil
		}
		if !live[v] {
			out = append(out, filepath.Join(pdir, n))
		}
	}
	return out
}
