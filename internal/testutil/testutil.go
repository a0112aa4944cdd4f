// Package testutil holds the helpers the tests of several packages share:
// eventually-checks instead of sleeps, a goroutine-safe log sink, a
// metric's value (MetricValue), and a copy of a data directory. It imports
// no dprl package, so that any package's internal tests can use it without
// an import cycle; the real components (embedded NATS, Pebble) are started
// by each package's own constructors.
package testutil

import (
	"bufio"
	"bytes"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Poll is the period between two checks of Eventually.
const Poll = 5 * time.Millisecond

// Eventually checks cond every Poll until it returns nil, and fails the
// test with cond's last error if that has not happened within timeout.
func Eventually(tb testing.TB, timeout time.Duration, cond func() error) {
	tb.Helper()
	if err := Wait(timeout, cond); err != nil {
		tb.Fatalf("condition not met after %v: %v", timeout, err)
	}
}

// EventuallyTrue is Eventually for a condition without an error: it fails
// the test with "timed out waiting for <what>".
func EventuallyTrue(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	if Wait(timeout, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	}) != nil {
		tb.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

type notYet struct{}

func (notYet) Error() string { return "not yet" }

var errNotYet error = notYet{}

// Wait checks cond every Poll until it returns nil, and returns nil then,
// or cond's last error once timeout has passed (for use outside a test's
// goroutine, where Fatal must not be called).
func Wait(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(Poll)
	}
}

// LockedBuffer is a log sink safe for concurrent writers.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Lines counts the newlines written so far.
func (l *LockedBuffer) Lines() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Count(l.b.Bytes(), []byte("\n"))
}

// CopyTree copies the directories and regular files under src to dst,
// keeping their permission bits (a snapshot of a data directory to damage
// or reopen).
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(out, info.Mode().Perm())
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, info.Mode().Perm())
	})
}

// MustCopyTree is CopyTree failing the test on error.
func MustCopyTree(tb testing.TB, src, dst string) {
	tb.Helper()
	if err := CopyTree(src, dst); err != nil {
		tb.Fatal(err)
	}
}

// Child is a copy of the test binary running one test as a child process
// (the child side reads its instructions from an environment variable).
type Child struct {
	Cmd *exec.Cmd
	// Line is the first line the child wrote to stdout, without "\n".
	Line string
	in   io.WriteCloser
	out  *bufio.Reader
	done bool
}

// Send writes line and a newline to the child's stdin.
func (c *Child) Send(line string) error {
	_, err := io.WriteString(c.in, line+"\n")
	return err
}

// ReadLine returns the child's next stdout line, without "\n".
func (c *Child) ReadLine() (string, error) {
	line, err := c.out.ReadString('\n')
	return strings.TrimSuffix(line, "\n"), err
}

// StartChild runs the test binary with -test.run=^test$ and env added,
// waits for the child's first stdout line and returns. Stop (also called
// at cleanup) closes the child's stdin, which tells it to finish, and
// waits for it. The child's stderr is the test's.
func StartChild(tb testing.TB, test string, env ...string) *Child {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	c := &Child{Cmd: cmd, in: in, out: bufio.NewReader(out)}
	tb.Cleanup(func() { c.Stop() })
	line, err := c.out.ReadString('\n')
	if err != nil {
		c.Stop()
		tb.Fatalf("child %s: first line %q: %v", test, line, err)
	}
	c.Line = strings.TrimSuffix(line, "\n")
	return c
}

// Stop closes the child's stdin and waits for it to exit; it returns the
// child's exit error the first time and nil afterwards.
func (c *Child) Stop() error {
	if c.done {
		return nil
	}
	c.done = true
	c.in.Close()
	return c.Cmd.Wait()
}
