package service

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"dprl/agent"
	"dprl/agent/internal/agenttest"
	"dprl/internal/testutil"
	"dprl/ledger"
)

// TestBackups runs the backup schedule against a serving agent: a backup
// is written when the head moved and skipped when it did not, only the
// newest Keep remain, and the newest opens as a data directory the agent
// resumes from at the version it holds.
func TestBackups(t *testing.T) {
	cfg := cartpoleConfig(2)
	a, store, stop := startAgent(t, cfg, t.TempDir())
	defer stop()
	b := Backups{Dir: filepath.Join(t.TempDir(), "backups"), Every: time.Hour, Keep: 2}
	rng := rand.New(rand.NewPCG(1, 2))
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	var last *ledger.BackupResult
	for round := 1; round <= 3; round++ {
		for i := 0; i < 2; i++ {
			playEpisode(t, a, fmt.Sprintf("s%d-%d", round, i), fmt.Sprintf("u%d-%d", round, i), rng, 50)
		}
		testutil.EventuallyTrue(t, 20*time.Second, fmt.Sprintf("version %d", round), func() bool { return a.Version() >= uint64(round) })
		at = at.Add(time.Minute)
		res, err := backupOnce(store, b, at)
		if err != nil || res == nil {
			t.Fatalf("round %d: backup %v, %v", round, res, err)
		}
		if want := fmt.Sprintf("%s-seq%d", at.Format("20060102T150405Z"), res.Head.Seq); filepath.Base(res.Dir) != want {
			t.Fatalf("backup named %s, want %s", filepath.Base(res.Dir), want)
		}
		// Nothing released since: the next tick skips.
		if again, err := backupOnce(store, b, at.Add(time.Second)); err != nil || again != nil {
			t.Fatalf("unchanged head: backup %v, %v; want skipped", again, err)
		}
		last = res
	}
	ents, err := os.ReadDir(b.Dir)
	if err != nil || len(ents) != b.Keep {
		t.Fatalf("%d backups kept (%v), want %d", len(ents), err, b.Keep)
	}
	restored, err := ledger.Open(last.Dir, ledger.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	r, err := agent.New(cfg, restored, agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Version() != last.Head.Version || r.Version() < 3 {
		t.Fatalf("resumed from the backup at version %d, want %d (>= 3)", r.Version(), last.Head.Version)
	}
}

// TestRunBackupsStops: the schedule writes a first backup at once and
// returns when its context ends.
func TestRunBackupsStops(t *testing.T) {
	store := agenttest.OpenStore(t, t.TempDir())
	defer store.Close()
	b := Backups{Dir: filepath.Join(t.TempDir(), "b"), Every: time.Hour, Keep: 1}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { runBackups(ctx, store, b, time.Now, zerolog.Nop()); close(done) }()
	testutil.EventuallyTrue(t, 10*time.Second, "first backup", func() bool {
		n, _ := listBackups(b.Dir)
		return len(n) == 1
	})
	cancel()
	<-done
	if n, _ := listBackups(b.Dir); len(n) != 1 {
		t.Fatalf("%d backups after the schedule stopped, want 1", len(n))
	}
	if err := (Backups{Dir: "x", Every: time.Millisecond, Keep: 1}).Validate(); err == nil {
		t.Fatal("Every 1ms accepted")
	}
	if err := (Backups{Dir: "x", Every: time.Minute}).Validate(); err == nil {
		t.Fatal("Keep 0 accepted")
	}
}

// TestServiceBackups: a service with Backups writes its first backup at
// start (a fresh ledger's included) and each model's into its own
// directory; Close waits for the schedule, and a bad schedule is refused
// before anything starts.
func TestServiceBackups(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "backups")
	svc := startService(t, cartpoleConfig(2), func(sc *ServiceConfig) {
		sc.Backups = Backups{Dir: dir, Every: time.Hour, Keep: 3}
	})
	testutil.EventuallyTrue(t, 10*time.Second, "first backup", func() bool {
		n, _ := listBackups(dir)
		return len(n) == 1
	})
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	names, _ := listBackups(dir)
	if v, err := ledger.VerifyDir(filepath.Join(dir, names[0].name), ledger.Options{}, nil); err != nil || !v.OK {
		t.Fatalf("the backup of a fresh ledger: %v %v", err, v.Problems)
	}
	_, err := StartService(context.Background(), ServiceConfig{Agent: cartpoleConfig(2), DataDir: t.TempDir(), Backups: Backups{Dir: dir, Every: time.Millisecond, Keep: 1}})
	if err == nil {
		t.Fatal("a 1ms backup interval was accepted")
	}
}
