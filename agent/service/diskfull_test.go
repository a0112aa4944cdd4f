package service

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"

	"dprl/agent"
	"dprl/internal/testutil"
	"dprl/ledger"
)

// startFullService starts an agent (K = 4, ops server on) whose ledger is
// on fs.
func startFullService(t *testing.T, fs *testutil.FullFS, dir string, logs *testutil.LockedBuffer) (*Service, error) {
	t.Helper()
	return StartService(context.Background(), ServiceConfig{Agent: cartpoleConfig(4), DataDir: dir, NATS: "embedded",
		HTTPAddr: "127.0.0.1:0", Logger: zerolog.New(logs), ledgerOptions: func(o *ledger.Options) { o.FS = fs }})
}

// playFullUsers plays one short episode for each of users n0..n0+n-1.
func playFullUsers(t *testing.T, a *agent.Agent, rng *rand.Rand, n0, n int) {
	t.Helper()
	for i := n0; i < n0+n; i++ {
		playEpisode(t, a, fmt.Sprintf("s%d", i), fmt.Sprintf("u%d", i), rng, 16)
	}
}

// A full disk under a running agent, at the head record (the commit went
// through) or below the ledger's free-space reserve (nothing written):
// releases pause (a batch waits, and no other is formed, so no session
// is spent on a refused release; the pause is logged once, not in a
// loop), /readyz turns 503 saying the
// disk is full, the last version is served, and everything resumes by
// itself once space is freed. Before, a failed head record made the agent
// retry "release version N after head version N" ~45 times a second, each
// time spending a batch, while /readyz stayed 200.
func TestDiskFullPausesReleases(t *testing.T) {
	for _, c := range []struct {
		name   string
		match  func(string) bool // nil: the whole file system
		paused uint64            // the version served while paused
		used   float64           // sessions used by then
		after  uint64            // the version once the 16 sessions are used
	}{
		// The release is committed, and published; 8 sessions wait.
		{"head record", func(p string) bool { return filepath.Base(p) == "ledger.heads" }, 2, 8, 4},
		// The batch waits for space, with the 8 sessions after it (played
		// at version 1: the last 4 are too stale for version 4).
		{"below the reserve", nil, 1, 4, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := testutil.NewFullFS(vfs.Default)
			dir := t.TempDir()
			var logs testutil.LockedBuffer
			svc, err := startFullService(t, fs, dir, &logs)
			if err != nil {
				t.Fatal(err)
			}
			defer svc.Close()
			a := svc.Agent()
			rng := rand.New(rand.NewPCG(3, 3))
			playFullUsers(t, a, rng, 0, 4)
			testutil.EventuallyTrue(t, 10*time.Second, "version 1", func() bool { return a.Version() == 1 })

			fs.Fill(c.match)
			playFullUsers(t, a, rng, 4, 4)
			testutil.EventuallyTrue(t, 10*time.Second, "/readyz 503 saying the disk is full", func() bool {
				code, body, err := readyz(svc.OpsAddr())
				return err == nil && code == http.StatusServiceUnavailable && strings.Contains(body, "disk is full") && !strings.Contains(body, "corrupt") && a.Version() == c.paused
			})
			if err := a.Blocked(); !errors.Is(err, ledger.ErrDiskFull) || errors.Is(err, ledger.ErrCorrupt) {
				t.Fatalf("Blocked() = %v", err)
			}
			// Sessions wait; none is spent while the disk stays full.
			playFullUsers(t, a, rng, 8, 8)
			time.Sleep(300 * time.Millisecond)
			if v := a.Version(); v != c.paused {
				t.Fatalf("version %d while the disk is full, want %d", v, c.paused)
			}
			if n := strings.Count(logs.String(), "releases are paused"); n != 1 {
				t.Fatalf("the pause logged %d times, want 1:\n%s", n, logs.String())
			}
			if strings.Contains(logs.String(), "after head version") {
				t.Fatalf("the agent retried a committed version:\n%s", logs.String())
			}
			if got := testutil.MetricValue(t, a.Metrics().SessionsUsed); got != c.used {
				t.Fatalf("%v sessions used, want %v", got, c.used)
			}

			fs.Free()
			testutil.EventuallyTrue(t, 10*time.Second, "releases resumed and /readyz 200", func() bool {
				code, _, err := readyz(svc.OpsAddr())
				return a.Version() == c.after && err == nil && code == http.StatusOK
			})
			if r, err := svc.Store().Verify(); err != nil || !r.OK() {
				t.Fatalf("verify after resuming: %+v %v", r, err)
			}
		})
	}
}

// A write-ahead-log write that fails on a full disk stops the agent with
// an error that says the disk is full (never corruption); the ledger
// verifies, and a restart once space is freed serves the last version.
func TestDiskFullWALStopsAgent(t *testing.T) {
	fs := testutil.NewFullFS(vfs.Default)
	dir := t.TempDir()
	var logs testutil.LockedBuffer
	svc, err := startFullService(t, fs, dir, &logs)
	if err != nil {
		t.Fatal(err)
	}
	a := svc.Agent()
	rng := rand.New(rand.NewPCG(4, 4))
	playFullUsers(t, a, rng, 0, 4)
	testutil.EventuallyTrue(t, 10*time.Second, "version 1", func() bool { return a.Version() == 1 })
	fs.Fill(func(p string) bool { return strings.HasSuffix(p, ".log") })
	playFullUsers(t, a, rng, 4, 4)
	select {
	case <-svc.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not stop")
	}
	runErr := svc.Err()
	if !errors.Is(runErr, ledger.ErrDiskFull) || errors.Is(runErr, ledger.ErrCorrupt) || !strings.Contains(runErr.Error(), "intact") {
		t.Fatalf("stopped with %v", runErr)
	}
	if code, body, _ := readyz(svc.OpsAddr()); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz %d %q after the updater stopped", code, body)
	}
	svc.Close()

	// Still full (the whole file system now): the start fails at once,
	// saying so.
	fs.Fill(nil)
	start := time.Now()
	if svc, err := startFullService(t, fs, dir, &logs); err == nil {
		svc.Close()
		t.Fatal("started on a full disk")
	} else if !errors.Is(err, ledger.ErrDiskFull) || errors.Is(err, ledger.ErrCorrupt) || time.Since(start) > 5*time.Second {
		t.Fatalf("start on a full disk: %v after %v", err, time.Since(start))
	}
	fs.Free()
	svc2, err := startFullService(t, fs, dir, &logs)
	if err != nil {
		t.Fatalf("restart with space: %v", err)
	}
	defer svc2.Close()
	if v := svc2.Agent().Version(); v != 1 {
		t.Fatalf("resumed at version %d, want 1", v)
	}
	if r, err := svc2.Store().Verify(); err != nil || !r.OK() {
		t.Fatalf("verify: %+v %v", r, err)
	}
}
