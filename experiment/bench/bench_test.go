package bench

import (
	"context"
	"testing"
	"time"
)

// TestServeCluster serves sessions through two replicas sharing the
// partitions: every act and end request is answered without an error
// reply (a session split between the replicas would get unknown_session
// and fail the run).
func TestServeCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster in process")
	}
	res, err := ServeCluster(context.Background(), ClusterConfig{Replicas: 2, Concurrency: 4, Duration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.AgentRPS <= 0 || res.EchoRPS <= 0 {
		t.Fatalf("%+v", res)
	}
	t.Logf("%+v", res)
}
