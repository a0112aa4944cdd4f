package agent

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"dprl/internal/testutil"
	"dprl/ledger"
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
