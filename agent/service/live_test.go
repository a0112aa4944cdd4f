package service

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"dprl/internal/testutil"
	"dprl/ledger"
)

// TestReadLedgerOfRunningAgent: an agent process (a child: a real
// embedded NATS server and a real Pebble ledger) learns from simulated
// users over NATS; meanwhile this process reads its ledger, which the
// agent holds locked, through the consistent copy the agent makes on
// request (what dprl ledger show and dprl report do): each read sees a
// verified ledger whose head only moves forward, and no copy stays behind.
// A writable open is refused naming the agent's pid.
func TestReadLedgerOfRunningAgent(t *testing.T) {
	dir := t.TempDir()
	cmd, url, _ := startChild(t, dir)
	defer func() {
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}()
	stop := driveNUsers(context.Background(), t, url, 1, 0, 1000)
	defer stop()
	var last ledger.Head
	reads := 0
	testutil.Eventually(t, 30*time.Second, func() error {
		s, err := ledger.Open(dir, ledger.Options{ReadOnly: true, MustExist: true})
		if err != nil {
			return err
		}
		defer s.Close()
		reads++
		sum, err := s.Summary(1e-5)
		if err != nil {
			return err
		}
		if sum.Head.Seq < last.Seq || len(sum.Entries) != int(sum.Head.Seq) {
			t.Fatalf("read %d: head %+v with %d entries after head %+v", reads, sum.Head, len(sum.Entries), last)
		}
		last = sum.Head
		if sum.Head.Version < 3 {
			return fmt.Errorf("version %d", sum.Head.Version)
		}
		if v, err := s.Verify(); err != nil || !v.OK() {
			t.Fatalf("the live copy at head %d: %+v %v", sum.Head.Seq, v, err)
		}
		return nil
	})
	t.Logf("%d live reads, the last at head %d", reads, last.Seq)
	testutil.EventuallyTrue(t, 5*time.Second, "no copy left", func() bool {
		copies, _ := filepath.Glob(filepath.Join(dir, "live", "copy-*"))
		return len(copies) == 0
	})
	_, err := ledger.Open(dir, ledger.Options{})
	if want := fmt.Sprintf("(pid %d (service.test); its lock is held", cmd.Process.Pid); !errors.Is(err, ledger.ErrLocked) || !strings.Contains(err.Error(), want) {
		t.Errorf("writable open of the running agent's ledger: %v, want ErrLocked naming %q", err, want)
	}
}
