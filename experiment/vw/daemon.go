package vw

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// requestTimeout bounds one exchange with the daemon.
const requestTimeout = 10 * time.Second

// startTimeout bounds the daemon's start (until it listens).
const startTimeout = 20 * time.Second

// Daemon is a running VW daemon: vw --cb_explore_adf --daemon --port 0
// --port_file F --foreground --num_children 1 --quiet plus the learner's
// arguments, in a process group of its own. VW picks the port and writes
// it to F; with one child it serves one connection at a time.
type Daemon struct {
	cmd    *exec.Cmd
	addr   string
	dir    string
	stderr *lockedBuffer
	done   chan struct{}
	err    error // the process's exit, set before done closes
}

// lockedBuffer is the daemon's stderr, written by the exec package's copier.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < 1<<16 {
		l.b.Write(p)
	}
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.TrimSpace(l.b.String())
}

// DaemonArgs are the arguments of a daemon that picks a free port and
// writes it to portFile, with the learner's arguments args (for example
// --squarecb -q UA).
func DaemonArgs(portFile string, args []string) []string {
	return append([]string{"--cb_explore_adf", "--daemon", "--port", "0", "--port_file", portFile, "--foreground", "--num_children", "1", "--quiet"}, args...)
}

// StartDaemon starts the VW binary bin as a daemon with the learner's
// arguments args and waits until it listens: VW binds a port it picks
// and writes it to a file in a temporary directory once it listens. VW 9
// has no option to bind one address: the daemon listens on every
// interface until Close stops it; this package connects over loopback.
func StartDaemon(ctx context.Context, bin string, args []string) (*Daemon, error) {
	dir, err := os.MkdirTemp("", "dprl-vw-")
	if err != nil {
		return nil, fmt.Errorf("vw: daemon: %w", err)
	}
	portFile := filepath.Join(dir, "port")
	d := &Daemon{dir: dir, stderr: &lockedBuffer{}, done: make(chan struct{})}
	d.cmd = exec.Command(bin, DaemonArgs(portFile, args)...)
	d.cmd.Stderr = d.stderr
	d.cmd.Stdout = d.stderr
	ownProcessGroup(d.cmd)
	if err := d.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("vw: daemon: %w", err)
	}
	go func() {
		d.err = d.cmd.Wait()
		close(d.done)
	}()
	deadline := time.Now().Add(startTimeout)
	for {
		// The file is complete once it holds a line.
		if b, err := os.ReadFile(portFile); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			port, err := strconv.Atoi(string(bytes.TrimSpace(b)))
			if err != nil || port < 1 || port > 65535 {
				d.Close()
				return nil, fmt.Errorf("vw: daemon wrote port %q, want a port number", clip(b))
			}
			d.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			return d, nil
		}
		select {
		case <-d.done:
			os.RemoveAll(dir)
			return nil, fmt.Errorf("vw: daemon %s exited before serving (%v): %s", strings.Join(args, " "), d.err, d.stderr)
		case <-ctx.Done():
			d.Close()
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.Close()
			return nil, fmt.Errorf("vw: daemon did not listen within %v: %s", startTimeout, d.stderr)
		}
	}
}

// Addr is the daemon's address.
func (d *Daemon) Addr() string { return d.addr }

// Close stops the daemon and its children, waits for it and removes its
// port file.
func (d *Daemon) Close() error {
	if d.dir != "" {
		defer os.RemoveAll(d.dir)
	}
	select {
	case <-d.done:
		return nil
	default:
	}
	killGroup(d.cmd)
	select {
	case <-d.done:
	case <-time.After(5 * time.Second):
		return errors.New("vw: daemon did not stop within 5s")
	}
	return nil
}

// Dial opens a connection to the daemon.
func (d *Daemon) Dial() (*Conn, error) {
	c, err := net.DialTimeout("tcp", d.addr, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("vw: %w", err)
	}
	return &Conn{c: c, r: bufio.NewReaderSize(c, 1<<12), w: bufio.NewWriterSize(c, 1<<14), d: d}, nil
}

// Conn is one connection to a daemon: requests are written in VW's text
// format and each example is answered with one line.
type Conn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
	d *Daemon
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Exchange writes req (n examples) and reads the daemon's n reply lines,
// calling line with each (its slice is valid only during the call).
func (c *Conn) Exchange(req []byte, n int, line func(i int, b []byte) error) error {
	if err := c.c.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		return fmt.Errorf("vw: %w", err)
	}
	if _, err := c.w.Write(req); err != nil {
		return c.fail(err)
	}
	if err := c.w.Flush(); err != nil {
		return c.fail(err)
	}
	for i := range n {
		b, err := c.readLine()
		if err != nil {
			return c.fail(err)
		}
		if err := line(i, b); err != nil {
			return err
		}
	}
	return nil
}

// readLine reads the next non-empty reply line (VW ends a multi-line
// example's prediction with an empty line).
func (c *Conn) readLine() ([]byte, error) {
	for {
		b, err := c.r.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		if t := bytes.TrimSpace(b); len(t) > 0 {
			return t, nil
		}
	}
}

// fail names a transport failure with what the daemon wrote to stderr.
func (c *Conn) fail(err error) error {
	if s := c.d.stderr.String(); s != "" {
		return fmt.Errorf("vw: daemon connection: %w (daemon stderr: %s)", err, clip([]byte(s)))
	}
	return fmt.Errorf("vw: daemon connection: %w", err)
}

// Predict sends one unlabelled example of the user x and parses the PMF
// into pmf (len items).
func (c *Conn) Predict(buf []byte, pmf []float64, x []float64, items int) ([]byte, []float64, error) {
	buf, err := AppendExample(buf[:0], x, items, nil)
	if err != nil {
		return buf, nil, err
	}
	err = c.Exchange(buf, 1, func(_ int, b []byte) error {
		pmf, err = ParsePMF(pmf, b, items)
		return err
	})
	return buf, pmf, err
}
