package record

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"dprl/ledger"
	"dprl/ledger/accountant"
)

// clusterKey is the user key the test cluster's processes share.
var clusterKey = []byte("0123456789abcdef0123456789abcdef")

func openStore(t *testing.T) *ledger.Store {
	t.Helper()
	s, err := ledger.Open(t.TempDir(), ledger.Options{UserKey: clusterKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// release is a DPPG release of version v by users (user keys are
// computed by s: the cluster's processes share one user key).
func release(t *testing.T, s *ledger.Store, v uint64, users ...string) ledger.Release {
	t.Helper()
	g, err := accountant.Analytic{}.Epsilon(1e-5, accountant.Gaussian(2))
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]ledger.UserKey, len(users))
	for i, u := range users {
		keys[i] = s.User(u)
	}
	return ledger.Release{Version: v, Snapshot: []byte(fmt.Sprintf("policy-%d", v)), Users: keys, Entry: ledger.Entry{
		Unit: ledger.UnitSession, Mechanism: "dppg", Events: []accountant.Event{accountant.Gaussian(2)},
		Method: accountant.MethodAnalytic, Epsilon: g.Epsilon, Delta: 1e-5, Z: 2, S: 0.1, K: len(users), Participants: len(users),
	}}
}

// writeThrough releases r on s through the log: the entry lands in the
// log first, then in s.
func writeThrough(ctx context.Context, l *Log, s *ledger.Store, r ledger.Release) (ledger.Entry, error) {
	return s.ReleaseWith(r, func(e ledger.Entry) error { return l.AppendEntry(ctx, e, r.Snapshot, []float64{float64(r.Version)}) })
}

// TestLearnerFailover runs two learners' ledgers on a 3-server cluster:
// A takes the lease, writes its writer entry and three releases through
// the log; B follows (Sync) and holds the same ledger. A pauses past its
// lease; B takes over, catches up, writes its writer entry and a release.
// A wakes up and tries a release: the log fences it and A's own ledger
// is unchanged (no version it computed exists anywhere). A then catches
// up. Both ledgers verify and match the log entry for entry.
func TestLearnerFailover(t *testing.T) {
	servers := startCluster(t, 3)
	logA := openLog(t, connect(t, servers[0]), 3)
	logB := openLog(t, connect(t, servers[1]), 3)
	leaseA, leaseB := openLease(t, logA, "a"), openLease(t, logB, "b")
	a, b := openStore(t), openStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	rev, err := leaseA.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.AppendWriter("a", rev, func(e ledger.Entry) error { return logA.AppendEntry(ctx, e, nil, nil) }); err != nil {
		t.Fatal(err)
	}
	for v := uint64(1); v <= 3; v++ {
		if _, err := writeThrough(ctx, logA, a, release(t, a, v, "alice", fmt.Sprint("u", v))); err != nil {
			t.Fatal(err)
		}
	}
	var seen []uint64
	if n, err := Sync(ctx, logB, b, func(r Release) {
		if r.Entry.Kind == ledger.KindWriter {
			return
		}
		if len(r.Update) != 1 || r.Update[0] != float64(r.Entry.PolicyVersion) || string(r.Snapshot) != fmt.Sprint("policy-", r.Entry.PolicyVersion) {
			t.Errorf("release %d read back with update %v and snapshot %q", r.Entry.PolicyVersion, r.Update, r.Snapshot)
		}
		seen = append(seen, r.Entry.PolicyVersion)
	}); err != nil || n != 4 || len(seen) != 3 || seen[2] != 3 {
		t.Fatalf("follower sync: %d, %v, releases %v", n, err, seen)
	}
	// A pauses (no renewal); B takes the lease once it expires.
	for {
		rev, err = leaseB.Acquire(ctx)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrHeld) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := Sync(ctx, logB, b, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AppendWriter("b", rev, func(e ledger.Entry) error { return logB.AppendEntry(ctx, e, nil, nil) }); err != nil {
		t.Fatal(err)
	}
	if _, err := writeThrough(ctx, logB, b, release(t, b, 4, "bob")); err != nil {
		t.Fatal(err)
	}
	// A resumes, believing it still leads.
	headA, _ := a.Head()
	if _, err := writeThrough(ctx, logA, a, release(t, a, 4, "carol")); !errors.Is(err, ErrFenced) {
		t.Fatalf("stale learner's release: %v, want ErrFenced", err)
	}
	if h, _ := a.Head(); h != headA {
		t.Fatalf("the fenced release moved A's head from %+v to %+v", headA, h)
	}
	if ahead, err := Check(ctx, logA, a); err != nil || ahead != 2 {
		t.Fatalf("A against the log: %d ahead, %v; want 2", ahead, err)
	}
	if n, err := Sync(ctx, logA, a, nil); err != nil || n != 2 {
		t.Fatalf("A catching up: %d, %v", n, err)
	}
	for name, s := range map[string]*ledger.Store{"a": a, "b": b} {
		if ahead, err := Check(ctx, logA, s); err != nil || ahead != 0 {
			t.Fatalf("%s against the log: %d ahead, %v", name, ahead, err)
		}
		rep, err := s.Verify()
		if err != nil || !rep.OK() || rep.Releases != 4 || rep.Entries != 6 {
			t.Fatalf("%s verify: %+v %v", name, rep, err)
		}
		snap, err := s.Snapshot(4)
		if err != nil || string(snap) != "policy-4" {
			t.Fatalf("%s: version 4 is %q (%v), want B's", name, snap, err)
		}
	}
	// A ledger that wrote past the log (an entry the log refused, had it
	// been committed) is reported as diverged.
	c := openStore(t)
	if _, err := c.Release(release(t, c, 1, "x")); err != nil {
		t.Fatal(err)
	}
	if _, err := Check(ctx, logA, c); !errors.Is(err, ErrDiverged) {
		t.Fatalf("diverged ledger: %v", err)
	}
}

// TestSyncLogBehind: a ledger holding entries a log does not (the log
// lost them: a majority of its servers lost power before they synced) has
// diverged; Sync says so even when there is nothing new to apply.
func TestSyncLogBehind(t *testing.T) {
	servers := startCluster(t, 1)
	js := connect(t, servers[0])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	full := openLog(t, js, 1)
	empty, err := Open(ctx, js, Config{Name: "lost", Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := openStore(t)
	if _, err := s.AppendWriter("a", 1, func(e ledger.Entry) error { return full.AppendEntry(ctx, e, nil, nil) }); err != nil {
		t.Fatal(err)
	}
	if n, err := Sync(ctx, full, s, nil); err != nil || n != 0 {
		t.Fatalf("sync with the log it wrote: %d, %v", n, err)
	}
	if _, err := Sync(ctx, empty, s, nil); !errors.Is(err, ErrDiverged) {
		t.Fatalf("sync with a log that lost the ledger's entry: %v, want ErrDiverged", err)
	}
}
