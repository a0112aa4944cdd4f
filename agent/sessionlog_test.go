package agent

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"dprl/agent/internal/agenttest"
	"dprl/internal/testutil"
	"dprl/sessionlog"
)

// blockingLog is a session log whose writes wait for release; entered
// receives each session id as its write begins.
type blockingLog struct {
	entered chan string
	release chan struct{}
	mu      sync.Mutex
	ids     []string
}

func (l *blockingLog) Write(s *sessionlog.Session) error {
	l.entered <- s.Session
	<-l.release
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ids = append(l.ids, s.Session)
	return nil
}

// TestSessionLogQueueFullDrops: with the log's writer stuck, sessions
// keep closing without waiting; those beyond the bounded queue are
// dropped from the log and counted by reason, as are sessions closed
// after the log was closed; what was queued is written, in order, when
// the log closes.
func TestSessionLogQueueFullDrops(t *testing.T) {
	store := agenttest.OpenStore(t, t.TempDir())
	defer store.Close()
	lg := &blockingLog{entered: make(chan string, 16), release: make(chan struct{})}
	m := NewMetrics(nil)
	a, err := New(cartpoleConfig(64), store, Options{SessionLog: lg, SessionLogQueue: 2, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	end := func(id string) {
		t.Helper()
		done := make(chan error, 1)
		go func() {
			if _, err := a.Act(id, "u"+id, obs4, 0, false); err != nil {
				done <- err
				return
			}
			_, err := a.End(id, "u"+id, 1, true)
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("end of %s waited for the session log", id)
		}
	}
	end("a")
	if id := <-lg.entered; id != "a" {
		t.Fatalf("writing %q first", id)
	}
	for _, id := range []string{"b", "c", "d", "e"} {
		end(id)
	}
	if n := testutil.MetricValue(t, m.SessionLogDropped.WithLabelValues("queue_full")); n != 2 {
		t.Errorf("queue_full drops %v, want 2 (d and e)", n)
	}
	if n := testutil.MetricValue(t, m.SessionLogQueue); n != 2 {
		t.Errorf("queue gauge %v, want 2", n)
	}
	close(lg.release)
	go func() {
		for range lg.entered {
		}
	}()
	a.CloseSessionLog()
	a.CloseSessionLog() // idempotent
	end("f")
	if n := testutil.MetricValue(t, m.SessionLogDropped.WithLabelValues("closed")); n != 1 {
		t.Errorf("drops after close %v, want 1", n)
	}
	if want := []string{"a", "b", "c"}; !slices.Equal(lg.ids, want) {
		t.Errorf("logged %v, want %v", lg.ids, want)
	}
}

// TestCapCheckedAtBatchWhenClosedByAct: a session closed by an act request
// (at the step limit) is closed without reading its user's caps; batch
// formation, which is authoritative, sets it aside when the user is at a
// cap, and no update uses it.
func TestCapCheckedAtBatchWhenClosedByAct(t *testing.T) {
	cfg := cartpoleConfig(1)
	cfg.MaxUpdatesPerUser = 1
	cfg.MaxStepsPerSession = 2
	store := agenttest.OpenStore(t, t.TempDir())
	defer store.Close()
	m := NewMetrics(nil)
	a, err := New(cfg, store, Options{Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	if _, err := a.Act("a1", "alice", obs4, 0, false); err != nil {
		t.Fatal(err)
	}
	if r, err := a.End("a1", "alice", 1, true); err != nil || !r.Used {
		t.Fatalf("first session: %+v %v", r, err)
	}
	testutil.EventuallyTrue(t, 20*time.Second, "version 1", func() bool { return a.Version() == 1 })
	for step := range 3 { // the third act closes at the step limit
		if _, err := a.Act("a2", "alice", obs4, 1, step > 0); (err != nil) != (step == 2) {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	reason := m.SessionsDiscarded.WithLabelValues("user_update_cap")
	testutil.EventuallyTrue(t, 20*time.Second, "set aside at batch formation", func() bool { return testutil.MetricValue(t, reason) == 1 })
	time.Sleep(100 * time.Millisecond) // K = 1: an eligible session would have released at once
	if v := a.Version(); v != 1 {
		t.Errorf("version %d: the capped user's session made an update", v)
	}
}
