package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"dprl/internal/fielderr"
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

func TestArgsRejected(t *testing.T) {
	ok := Args{Concurrency: 1, Duration: time.Second}
	for _, tc := range []struct {
		name string
		edit func(*Args)
	}{
		{"concurrency", func(a *Args) { a.Concurrency = 0 }},
		{"duration", func(a *Args) { a.Duration = 0 }},
		{"act-workers", func(a *Args) { a.ActWorkers = -1 }},
		{"replicas", func(a *Args) { a.Replicas = -1 }},
	} {
		a := ok
		tc.edit(&a)
		_, err := a.Run(context.Background(), zerolog.Nop())
		if fe := (*fielderr.Error)(nil); !errors.As(err, &fe) {
			t.Errorf("%s: err %v, want a *fielderr.Error", tc.name, err)
		}
	}
}
