package agent

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dprl/internal/testutil"
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
	return startLearnerReplicas(t, js, cfg, holder, 3)
}

// startLearnerReplicas is startLearner on streams of n replicas.
func startLearnerReplicas(t *testing.T, js jetstream.JetStream, cfg Config, holder string, n int) *learnerProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store, err := ledger.Open(t.TempDir(), ledger.Options{UserKey: clusterKey})
	if err != nil {
		t.Fatal(err)
	}
	log, err := record.Open(ctx, js, record.Config{Name: "m", Replicas: n})
	if err != nil {
		t.Fatal(err)
	}
	lease, err := record.OpenLease(ctx, js, record.LeaseConfig{Name: "m", Replicas: n, TTL: time.Second, Holder: holder})
	if err != nil {
		t.Fatal(err)
	}
	q, err := updateq.Open(ctx, js, updateq.Config{Name: "m", Replicas: n, MaxValues: 1 << 16})
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
	conn := jsCluster(t, 3)
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

// TestLearnerKeyExpiredInOutage: the writer lease's key disappears while
// the learner holds it, as a key does whose TTL ran out while its bucket
// elected a leader. No other candidate took it, so the learner takes it
// again at its next renewal and goes on releasing (it used to give the
// lease up and stop).
func TestLearnerKeyExpiredInOutage(t *testing.T) {
	conn := jsCluster(t, 1)
	cfg := cartpoleConfig(4)
	cfg.MaxStaleness = 1 << 20
	cfg.FlushTimeout = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q, err := updateq.Open(ctx, conn(0), updateq.Config{Name: "m", Replicas: 1, MaxValues: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := ledger.Open(t.TempDir(), ledger.Options{UserKey: clusterKey})
	if err != nil {
		t.Fatal(err)
	}
	defer keys.Close()
	a := startLearnerReplicas(t, conn(0), cfg, "a", 1)
	waitVersion := func(v uint64) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); a.agent.Version() < v; {
			if time.Now().After(deadline) {
				t.Fatalf("version %d, want %d", a.agent.Version(), v)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	publishUpdates(t, q, keys, cfg, 0, 4)
	waitVersion(1)
	kv, err := conn(0).KeyValue(ctx, "DPRL_LEASE_m")
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, "writer"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // three renewal periods
	publishUpdates(t, q, keys, cfg, 4, 4)
	waitVersion(2)
	if e, err := kv.Get(ctx, "writer"); err != nil || !strings.HasPrefix(string(e.Value()), "a\n") {
		t.Fatalf("the lease's key after the outage: %v", err)
	}
	if err := a.stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("learner a: %v", err)
	}
}

// TestClusterServesAndLearns runs the roles together on a 3-server cluster:
// one learner and two serving replicas, users playing CartPole episodes on
// the replicas in turn. The replicas publish their sessions' clipped
// updates, the learner releases through the ledger of record, and the
// replicas serve the log's versions: both reach the learner's version,
// every version they serve is in the log, and no session enters two
// releases.
func TestClusterServesAndLearns(t *testing.T) {
	conn := jsCluster(t, 3)
	cfg := cartpoleConfig(4)
	cfg.FlushTimeout = time.Hour
	learner := startLearner(t, conn(0), cfg, "learner")
	defer learner.stop()
	var replicas []*Agent
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		js := conn(1 + i)
		log, err := record.Open(ctx, js, record.Config{Name: "m", Replicas: 3})
		if err != nil {
			t.Fatal(err)
		}
		q, err := updateq.Open(ctx, js, updateq.Config{Name: "m", Replicas: 3, MaxValues: 1 << 16})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		store, err := ledger.Open(t.TempDir(), ledger.Options{UserKey: clusterKey})
		if err != nil {
			t.Fatal(err)
		}
		a, err := New(cfg, store, Options{Replica: &Replica{Log: log, Updates: q, Follow: 50 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		rctx, rcancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Run(rctx) }()
		t.Cleanup(func() {
			rcancel()
			if err := <-done; err != nil {
				t.Errorf("replica: %v", err)
			}
			store.Close()
		})
		replicas = append(replicas, a)
	}
	// Wait for the learner's writer entry to reach the replicas.
	time.Sleep(500 * time.Millisecond)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; learner.agent.Version() < 3; i++ {
		if i > 400 {
			t.Fatalf("learner at version %d after %d sessions: learner %+v; replicas %+v, %+v", learner.agent.Version(), i, learner.agent.Stats(), replicas[0].Stats(), replicas[1].Stats())
		}
		r := replicas[i%2]
		playEpisode(t, r, fmt.Sprint("s", i), fmt.Sprint("u", i), rng, 50)
		time.Sleep(5 * time.Millisecond)
	}
	want := learner.agent.Version()
	for deadline := time.Now().Add(10 * time.Second); replicas[0].Version() < want || replicas[1].Version() < want; {
		if time.Now().After(deadline) {
			t.Fatalf("replicas at versions %d and %d, the learner at %d", replicas[0].Version(), replicas[1].Version(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The served policy is the log's: the learner's snapshot of that version.
	snap, err := learner.store.Snapshot(want)
	if err != nil {
		t.Fatal(err)
	}
	_, theta, _, err := decodeSnapshot(cfg, snap)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range replicas {
		cur := r.current.Load()
		if cur.num == want && !equalFloats(cur.theta, theta) {
			t.Fatalf("replica %d serves version %d with other parameters than the log's", i, want)
		}
	}
	rep, err := learner.store.Verify()
	if err != nil || !rep.OK() {
		t.Fatalf("learner's ledger: %+v %v", rep, err)
	}
	seen := map[ledger.SessionKey]bool{}
	if err := learner.store.Entries(func(e ledger.Entry) error {
		for _, k := range e.Sessions {
			if seen[k] {
				return fmt.Errorf("session %s in two releases", k)
			}
			seen[k] = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) < 12 {
		t.Fatalf("%d sessions in releases, want >= 12", len(seen))
	}
	// The replicas' metrics: every session used was published by one of
	// them, none failed, and each follows the log to the learner's head.
	var published float64
	h, err := learner.store.Head()
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range replicas {
		published += metricValue(t, r.m.Cluster.UpdatesPublished)
		if e := metricValue(t, r.m.Cluster.PublishErrors); e != 0 {
			t.Errorf("replica %d: %v publish errors", i, e)
		}
		testutil.EventuallyTrue(t, 10*time.Second, "the replica follows the log", func() bool {
			return r.ClusterState().LogSeq >= h.Seq && metricValue(t, r.m.Cluster.LogSeq) >= float64(h.Seq)
		})
	}
	if published < float64(len(seen)) {
		t.Errorf("the replicas published %v updates, %d were used", published, len(seen))
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// BenchmarkLearner measures the learner role's sustained rate: b.N
// releases of K = 32 precomputed clipped updates (CartPole's network), all
// queued before the learner starts (replicas simulated by a publisher), on
// one server (R1) and on three (R3). Reported: releases/s and updates/s;
// each release is appended to the ledger of record, then to the learner's
// own ledger (both synced).
func BenchmarkLearner(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("R%d", n), func(b *testing.B) {
			js := jsCluster(b, n)(0)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			cfg := cartpoleConfig(32)
			cfg.MaxStaleness = 1 << 20
			cfg.FlushTimeout = time.Hour
			cfg.MaxUpdatesPerUser = 0
			cfg.UserEpsilon = 0
			cfg.MaxQueuedPerUser = 1 << 10
			q, err := updateq.Open(ctx, js, updateq.Config{Name: "m", Replicas: n, MaxValues: 1 << 16})
			if err != nil {
				b.Fatal(err)
			}
			store, err := ledger.Open(b.TempDir(), ledger.Options{UserKey: clusterKey})
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			l, err := policy.NewLearner(cfg.Spec, cfg.Policy)
			if err != nil {
				b.Fatal(err)
			}
			g := make([]float64, l.NumParams())
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range b.N * 32 {
				for j := range g {
					g[j] = rng.NormFloat64()
				}
				cfg.Policy.DP.ClipUpdate(g, l.NumPolicyParams())
				u := &updateq.Update{Session: store.Session(fmt.Sprint(i)).String(), HasUser: true, User: store.User(fmt.Sprint(i)), Values: g}
				if err := q.Publish(ctx, u); err != nil {
					b.Fatal(err)
				}
			}
			log, err := record.Open(ctx, js, record.Config{Name: "m", Replicas: n})
			if err != nil {
				b.Fatal(err)
			}
			lease, err := record.OpenLease(ctx, js, record.LeaseConfig{Name: "m", Replicas: n, TTL: 3 * time.Second, Holder: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			cons, err := q.Consumer(ctx, "learner", time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			a, err := New(cfg, store, Options{Learner: &Learner{Log: log, Lease: lease, Updates: cons, Holder: "bench", RenewEvery: time.Second}})
			if err != nil {
				b.Fatal(err)
			}
			rctx, rcancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			b.ResetTimer()
			start := time.Now()
			go func() { done <- a.Run(rctx) }()
			for a.Version() < uint64(b.N) {
				time.Sleep(time.Millisecond)
			}
			el := time.Since(start)
			b.StopTimer()
			rcancel()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/el.Seconds(), "releases/s")
			b.ReportMetric(float64(b.N*32)/el.Seconds(), "updates/s")
		})
	}
}

// jsCluster starts n JetStream servers in one cluster for the test and
// returns a function that connects to server i.
func jsCluster(tb testing.TB, n int) func(i int) jetstream.JetStream {
	tb.Helper()
	servers, err := stream.StartCluster("c", n, tb.TempDir(), stream.EmbeddedOptions{Port: -1})
	if err != nil {
		tb.Fatal(err)
	}
	for _, s := range servers {
		tb.Cleanup(s.Shutdown)
	}
	return func(i int) jetstream.JetStream {
		nc, err := nats.Connect(servers[i].ClientURL())
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			tb.Fatal(err)
		}
		return js
	}
}
