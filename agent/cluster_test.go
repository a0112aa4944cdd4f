package agent

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dprl/ledger"
	"dprl/ledger/record"
	"dprl/policy"
	"dprl/stream"
	"dprl/stream/updateq"
)

// clusterKey is the test cluster's shared user key.
var clusterKey = []byte("0123456789abcdef0123456789abcdef")

// learnerProc is one learner process of the test: its ledger, its
// connection's log, lease and consumer.
type learnerProc struct {
	store *ledger.Store
	agent *Agent
	stop  func() error
}

func startLearner(t *testing.T, js jetstream.JetStream, cfg Config, holder string) *learnerProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store, err := ledger.Open(t.TempDir(), ledger.Options{UserKey: clusterKey})
	if err != nil {
		t.Fatal(err)
	}
	log, err := record.Open(ctx, js, record.Config{Name: "m", Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	lease, err := record.OpenLease(ctx, js, record.LeaseConfig{Name: "m", Replicas: 3, TTL: time.Second, Holder: holder})
	if err != nil {
		t.Fatal(err)
	}
	q, err := updateq.Open(ctx, js, updateq.Config{Name: "m", Replicas: 3, MaxValues: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := q.Consumer(ctx, "learner", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, store, Options{Learner: &Learner{Log: log, Lease: lease, Updates: cons, Holder: holder, RenewEvery: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(rctx) }()
	p := &learnerProc{store: store, agent: a}
	p.stop = func() error {
		rcancel()
		err := <-done
		store.Close()
		return err
	}
	return p
}

// publishUpdates plays n serving replicas' sessions: clipped random updates
// of distinct users (keys from the shared user key), computed at version 0.
func publishUpdates(t *testing.T, q *updateq.Queue, keys *ledger.Store, cfg Config, from, n int) {
	t.Helper()
	l, err := policy.NewLearner(cfg.Spec, cfg.Policy)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(from), 1))
	for i := from; i < from+n; i++ {
		g := make([]float64, l.NumParams())
		for j := range g {
			g[j] = rng.NormFloat64()
		}
		cfg.Policy.DP.ClipUpdate(g, l.NumPolicyParams())
		u := &updateq.Update{Session: keys.Session(fmt.Sprint("user", i, "\x00s")).String(), HasUser: true,
			User: keys.User(fmt.Sprint("user", i)), Values: g}
		if err := q.Publish(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLearnerRole runs the learner role on a 3-server cluster with updates
// published as serving replicas would: learner A takes the lease and
// releases from the queue through the ledger of record; A stops (giving the
// lease up) and candidate B, which followed, takes over and releases the
// rest. Every release has K distinct users and sessions, no session enters
// two releases, both ledgers verify and match the log.
func TestLearnerRole(t *testing.T) {
	servers, err := stream.StartCluster("c", 3, t.TempDir(), stream.EmbeddedOptions{Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		t.Cleanup(s.Shutdown)
	}
	conn := func(i int) jetstream.JetStream {
		nc, err := nats.Connect(servers[i].ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	cfg := cartpoleConfig(4)
	cfg.MaxStaleness = 1 << 20 // the test's updates are all computed at version 0
	cfg.FlushTimeout = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	q, err := updateq.Open(ctx, conn(1), updateq.Config{Name: "m", Replicas: 3, MaxValues: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := ledger.Open(t.TempDir(), ledger.Options{UserKey: clusterKey})
	if err != nil {
		t.Fatal(err)
	}
	defer keys.Close()

	a := startLearner(t, conn(0), cfg, "a")
	b := startLearner(t, conn(2), cfg, "b") // a candidate: the lease is a's
	publishUpdates(t, q, keys, cfg, 0, 12)
	waitVersion := func(p *learnerProc, v uint64) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); p.agent.Version() < v; {
			if time.Now().After(deadline) {
				t.Fatalf("version %d, want %d", p.agent.Version(), v)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitVersion(a, 3)
	if b.agent.Version() != 0 {
		t.Fatalf("the candidate released version %d", b.agent.Version())
	}
	if err := a.stop(); err != nil {
		t.Fatalf("learner a: %v", err)
	}
	publishUpdates(t, q, keys, cfg, 12, 8)
	waitVersion(b, 5)
	if err := b.stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("learner b: %v", err)
	}

	// b's ledger, reopened, against the log.
	st, err := ledger.Open(t.TempDir(), ledger.Options{UserKey: clusterKey})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log, err := record.Open(ctx, conn(1), record.Config{Name: "m", Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := record.Sync(ctx, log, st, nil); err != nil {
		t.Fatal(err)
	}
	rep, err := st.Verify()
	if err != nil || !rep.OK() || rep.Releases != 5 {
		t.Fatalf("the log's ledger: %+v %v", rep, err)
	}
	writers, sessions := 0, map[ledger.SessionKey]bool{}
	if err := st.Entries(func(e ledger.Entry) error {
		switch e.Kind {
		case ledger.KindWriter:
			writers++
		case ledger.KindRelease:
			if len(e.Users) != 4 || len(e.Sessions) != 4 {
				return fmt.Errorf("release %d: %d users, %d sessions", e.PolicyVersion, len(e.Users), len(e.Sessions))
			}
			for _, k := range e.Sessions {
				if sessions[k] {
					return fmt.Errorf("session %s in two releases", k)
				}
				sessions[k] = true
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if writers != 2 {
		t.Fatalf("%d writer entries, want 2 (a, then b)", writers)
	}
}
