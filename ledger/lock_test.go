package ledger

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	if !errors.Is(err, ErrLocked) || errors.Is(err, ErrCorrupt) || !strings.HasPrefix(err.Error(), "ledger: data directory "+dir+" is in use by another process (its lock is held: ") || !strings.Contains(err.Error(), "--backup-dir") {
		t.Errorf("Open while another process holds it: %v, want ErrLocked", err)
	}
	if err := CheckUnlocked(dir); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "in use by another process") {
		t.Errorf("CheckUnlocked while another process holds it: %v, want ErrLocked", err)
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
	s, err := Open(dir, Options{})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("held")
	bufio.NewReader(os.Stdin).ReadString('\n')
	s.Close()
}
