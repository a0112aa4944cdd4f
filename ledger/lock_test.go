package ledger

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dprl/internal/testutil"
)

// TestOpenLockedInProcess: a second Open of a data directory whose store
// is open reports ErrLocked ("in use"), never ErrCorrupt, and leaves the
// first store working.
func TestOpenLockedInProcess(t *testing.T) {
	s, dir := openTemp(t)
	for _, o := range []Options{{}, {ReadOnly: true}, {MustExist: true}} {
		s2, err := Open(dir, o)
		if err == nil {
			s2.Close()
			t.Fatalf("second Open (read-only %v) succeeded", o.ReadOnly)
		}
		if !errors.Is(err, ErrLocked) || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "data directory "+dir+" is in use by another store of this process (its lock is held") {
			t.Errorf("second Open (read-only %v): %v, want ErrLocked naming %s", o.ReadOnly, err, dir)
		}
	}
	if err := CheckUnlocked(dir); !errors.Is(err, ErrLocked) {
		t.Errorf("CheckUnlocked with the store open: %v, want ErrLocked", err)
	}
	if _, err := s.Head(); err != nil {
		t.Errorf("the first store after the refused Open: %v", err)
	}
	s.Close()
	if err := CheckUnlocked(dir); err != nil {
		t.Errorf("CheckUnlocked after Close: %v", err)
	}
	if s, err := Open(dir, Options{}); err != nil {
		t.Errorf("Open after CheckUnlocked: %v", err)
	} else {
		s.Close()
	}
	missing := filepath.Join(t.TempDir(), "missing")
	if err := CheckUnlocked(missing); err != nil {
		t.Errorf("CheckUnlocked of a missing directory: %v", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("CheckUnlocked created %s (%v)", missing, err)
	}
}

// TestOpenLockedByAnotherProcess: while another process holds the store,
// Open reports ErrLocked, "in use by another process", not ErrCorrupt;
// once it exits the directory opens.
func TestOpenLockedByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	stop := holdInChild(t, dir)
	_, err := Open(dir, Options{})
	if !errors.Is(err, ErrLocked) || errors.Is(err, ErrCorrupt) || !strings.HasPrefix(err.Error(), "ledger: data directory "+dir+" is in use by another process (pid ") ||
		!strings.Contains(err.Error(), "(ledger.test); its lock is held: ") || !strings.Contains(err.Error(), "--backup-dir") {
		t.Errorf("Open while another process holds it: %v, want ErrLocked", err)
	}
	if err := CheckUnlocked(dir); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "in use by another process") {
		t.Errorf("CheckUnlocked while another process holds it: %v, want ErrLocked", err)
	}
	// A holder that serves no live view: a read-only Open is refused too.
	if _, err := Open(dir, Options{ReadOnly: true, MustExist: true}); !errors.Is(err, ErrLocked) {
		t.Errorf("read-only Open while a process without a live view holds it: %v, want ErrLocked", err)
	}
	stop()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open after the other process exited: %v", err)
	}
	s.Close()
}

// holdInChild runs this test binary as a child that opens the ledger in
// dir (TestHoldLedgerChild) and holds it until stop is called.
func holdInChild(t *testing.T, dir string) (stop func()) {
	t.Helper()
	c := testutil.StartChild(t, "TestHoldLedgerChild", "DPRL_TEST_HOLD_LEDGER="+dir)
	if c.Line != "held" {
		t.Fatalf("child: %q", c.Line)
	}
	return func() {
		if err := c.Stop(); err != nil {
			t.Errorf("child: %v", err)
		}
	}
}

// TestHoldLedgerChild is the child of holdInChild: it opens the ledger in
// $DPRL_TEST_HOLD_LEDGER, says "held" and keeps it open until its stdin
// closes. Without the variable it does nothing.
func TestHoldLedgerChild(t *testing.T) {
	dir := os.Getenv("DPRL_TEST_HOLD_LEDGER")
	if dir == "" {
		t.Skip("the child of holdInChild")
	}
	s, err := Open(dir, Options{LiveView: os.Getenv("DPRL_TEST_HOLD_LIVE") != ""})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("held")
	in := bufio.NewReader(os.Stdin)
	for {
		// "release N" releases version N (the ledger moves while others
		// read it); anything else, or EOF, ends the child.
		line, err := in.ReadString('\n')
		var v uint64
		if _, serr := fmt.Sscanf(line, "release %d", &v); err != nil || serr != nil {
			break
		}
		if _, err := s.Release(Release{Version: v, Snapshot: []byte("policy"), Entry: releaseEntry(t, 2, 1, true), Users: []UserKey{s.User("u")}}); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("released", v)
	}
	s.Close()
}

// TestReadLiveLedger: while another process holds a ledger opened with
// LiveView and keeps releasing, a read-only Open reads a consistent copy
// that process makes on request (its head, entries and users as of the
// request), and the copy is removed once the reader closes it; a writable
// Open is refused naming the holder's pid and command. Without LiveView
// the read-only Open is refused as before (TestOpenLockedByAnotherProcess).
func TestReadLiveLedger(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	doRelease(t, s, 1, 2, "a", "b")
	s.Close()
	c := testutil.StartChild(t, "TestHoldLedgerChild", "DPRL_TEST_HOLD_LEDGER="+dir, "DPRL_TEST_HOLD_LIVE=1")
	if c.Line != "held" {
		t.Fatalf("child: %q", c.Line)
	}
	for v := uint64(2); v <= 4; v++ {
		r, err := Open(dir, Options{ReadOnly: true, MustExist: true})
		if err != nil {
			t.Fatalf("read-only Open of the live ledger at version %d: %v", v-1, err)
		}
		h, err := r.Head()
		if err != nil || h.Version != v-1 || h.Seq != v-1 {
			t.Errorf("the live copy's head: %+v %v, want version %d", h, err, v-1)
		}
		if v, err := r.Verify(); err != nil || !v.OK() {
			t.Errorf("the live copy verifies: %+v %v", v, err)
		}
		copies, _ := filepath.Glob(filepath.Join(dir, liveDir, liveCopy+"*"))
		if len(copies) != 1 {
			t.Errorf("copies while one is read: %v", copies)
		}
		r.Close()
		testutil.EventuallyTrue(t, 5*time.Second, "the copy removed after Close", func() bool {
			copies, _ := filepath.Glob(filepath.Join(dir, liveDir, liveCopy+"*"))
			return len(copies) == 0
		})
		if err := c.Send(fmt.Sprintf("release %d", v)); err != nil {
			t.Fatal(err)
		}
		if line, err := c.ReadLine(); err != nil || line != fmt.Sprintf("released %d", v) {
			t.Fatalf("child: %q %v", line, err)
		}
	}
	_, err = Open(dir, Options{})
	want := fmt.Sprintf("is in use by another process (pid %d (ledger.test); its lock is held: ", c.Cmd.Process.Pid)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--wait-lock") {
		t.Errorf("writable Open of the live ledger: %v, want ErrLocked containing %q", err, want)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open after the holder exited: %v", err)
	}
	defer s.Close()
	if h, _ := s.Head(); h.Version != 4 {
		t.Errorf("head after the holder exited: %+v", h)
	}
}

// TestOpenWaitLock: with WaitLock an Open waits for the lock another
// process holds and opens once it is released; without it, or when the
// wait ends first, it fails with ErrLocked at once.
func TestOpenWaitLock(t *testing.T) {
	dir := t.TempDir()
	stop := holdInChild(t, dir)
	start := time.Now()
	if _, err := Open(dir, Options{WaitLock: 300 * time.Millisecond}); !errors.Is(err, ErrLocked) || time.Since(start) < 300*time.Millisecond {
		t.Errorf("Open waiting 300 ms: %v after %v, want ErrLocked after the wait", err, time.Since(start))
	}
	opened := make(chan error, 1)
	go func() {
		s, err := Open(dir, Options{WaitLock: 20 * time.Second})
		if err == nil {
			s.Close()
		}
		opened <- err
	}()
	time.Sleep(500 * time.Millisecond)
	stop()
	if err := <-opened; err != nil {
		t.Fatalf("Open waiting for the holder to exit: %v", err)
	}
}
