package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"dprl/internal/testutil"
	"dprl/ledger"
	"dprl/ledger/record"
	"dprl/stream/updateq"
)

// metricValue reads a counter's or gauge's value.
func metricValue(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatalf("%v is neither a counter nor a gauge", c.Desc())
	return 0
}

// TestLearnerMetrics runs two learner candidates on one server and checks
// the learner's metrics and ClusterState: the writer holds the lease (1,
// one acquisition) and sees itself as holder; the candidate holds nothing
// and names the writer; the updates consumed, the releases through the
// log, and the updates dropped by reason (malformed: bytes that do not
// decode; stale: computed two versions back) are counted; both follow the
// log to the same position.
func TestLearnerMetrics(t *testing.T) {
	js := jsCluster(t, 1)(0)
	cfg := cartpoleConfig(2)
	cfg.MaxStaleness = 0
	cfg.FlushTimeout = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q, err := updateq.Open(ctx, js, updateq.Config{Name: "m", Replicas: 1, MaxValues: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := ledger.Open(t.TempDir(), ledger.Options{UserKey: clusterKey})
	if err != nil {
		t.Fatal(err)
	}
	defer keys.Close()
	a := startLearnerReplicas(t, js, cfg, "a", 1)
	defer a.stop()
	testutil.EventuallyTrue(t, 20*time.Second, "a holds the lease", func() bool { return a.agent.ClusterState().LeaseHeld })
	b := startLearnerReplicas(t, js, cfg, "b", 1)
	defer b.stop()
	testutil.EventuallyTrue(t, 20*time.Second, "b sees a's lease", func() bool { return b.agent.ClusterState().LeaseHolder == "a" })

	publishUpdates(t, q, keys, cfg, 0, 2) // version 1
	testutil.EventuallyTrue(t, 20*time.Second, "version 1", func() bool { return a.agent.Version() == 1 })
	if _, err := js.Publish(ctx, "dprl.updates.m", []byte("not an update")); err != nil {
		t.Fatal(err)
	}
	publishUpdates(t, q, keys, cfg, 2, 2) // computed at version 0: stale (MaxStaleness 0)
	c := &a.agent.m.Cluster
	testutil.EventuallyTrue(t, 20*time.Second, "the dropped updates counted", func() bool {
		return metricValue(t, c.UpdatesDropped.WithLabelValues("malformed")) == 1 && metricValue(t, c.UpdatesDropped.WithLabelValues("stale")) == 2
	})
	for _, tc := range []struct {
		name string
		m    prometheus.Metric
		want float64
	}{
		{"a lease held", c.LeaseHeld, 1},
		{"a acquisitions", c.LeaseAcquisitions, 1},
		{"a releases through the log", c.LogReleases, 1},
		{"a consumed", c.UpdatesConsumed, 5},
		{"a session_used dropped", c.UpdatesDropped.WithLabelValues("session_used"), 0},
		{"a fenced", c.AppendsFenced, 0},
		{"a log position", c.LogSeq, 2}, // a's writer entry, release 1
		{"b lease held", b.agent.m.Cluster.LeaseHeld, 0},
		{"b acquisitions", b.agent.m.Cluster.LeaseAcquisitions, 0},
	} {
		if got := metricValue(t, tc.m); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if st := a.agent.ClusterState(); !st.LeaseHeld || st.LeaseHolder != "a" || st.LogSeq != 2 {
		t.Errorf("a's cluster state %+v, want the lease held by a at position 2", st)
	}
	testutil.EventuallyTrue(t, 10*time.Second, "b follows to position 2", func() bool { return b.agent.ClusterState().LogSeq == 2 })
	if st := b.agent.ClusterState(); st.LeaseHeld {
		t.Errorf("b's cluster state %+v: the candidate holds the lease", st)
	}
}

// TestLearnerFencedMetrics: another writer's entry lands in the log behind
// the active learner's back (a split brain, forced); the learner's next
// release is refused by the fence and it stops. The refusal is counted in
// dprl_cluster_appends_fenced_total, no release through the log is, and
// the lease-held gauge and ClusterState drop to not held once it stopped.
func TestLearnerFencedMetrics(t *testing.T) {
	js := jsCluster(t, 1)(0)
	cfg := cartpoleConfig(2)
	cfg.FlushTimeout = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q, err := updateq.Open(ctx, js, updateq.Config{Name: "m", Replicas: 1, MaxValues: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	log, err := record.Open(ctx, js, record.Config{Name: "m", Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	other, err := ledger.Open(t.TempDir(), ledger.Options{UserKey: clusterKey})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	a := startLearnerReplicas(t, js, cfg, "a", 1)
	testutil.EventuallyTrue(t, 20*time.Second, "a holds the lease", func() bool { return a.agent.ClusterState().LeaseHeld })

	// The other writer catches up and appends its writer entry.
	if _, err := record.Sync(ctx, log, other, nil); err != nil {
		t.Fatal(err)
	}
	snap, err := encodeSnapshot(cfg, 0, a.agent.current.Load().theta, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.AppendWriter("intruder", 1<<40, func(e ledger.Entry) error { return log.AppendEntry(ctx, e, snap, nil) }); err != nil {
		t.Fatal(err)
	}
	publishUpdates(t, q, other, cfg, 0, 2)
	c := &a.agent.m.Cluster
	testutil.EventuallyTrue(t, 20*time.Second, "the fenced append counted", func() bool { return metricValue(t, c.AppendsFenced) == 1 })
	if err := a.stop(); !errors.Is(err, record.ErrFenced) {
		t.Fatalf("learner a stopped with %v, want the fence's refusal", err)
	}
	if r, held := metricValue(t, c.LogReleases), metricValue(t, c.LeaseHeld); r != 0 || held != 0 {
		t.Errorf("after the refusal: %v releases through the log, lease held %v; want 0 and 0", r, held)
	}
	if st := a.agent.ClusterState(); st.LeaseHeld {
		t.Errorf("a's cluster state %+v after it stopped", st)
	}
}
