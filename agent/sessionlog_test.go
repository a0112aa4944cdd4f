package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"dprl/internal/testutil"
	"dprl/sessionlog"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// metricValue reads a counter or gauge.
func metricValue(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	if d.Counter != nil {
		return d.Counter.GetValue()
	}
	return d.Gauge.GetValue()
}

// slowWriter is an io.Writer that takes delay per Write (a slow disk).
type slowWriter struct {
	delay time.Duration
	mu    sync.Mutex
	buf   bytes.Buffer
}

func (w *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(w.delay)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// loggedIDs reads the session ids of a dprl.sessions.v1 stream, in order.
func loggedIDs(t *testing.T, r io.Reader) []string {
	t.Helper()
	rd := sessionlog.NewReader(r, sessionlog.ReaderOptions{Spec: sessionlog.Spec{ObsDim: 4, Discrete: 2}})
	var ids []string
	for {
		s, err := rd.Next()
		if err == io.EOF {
			return ids
		}
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.Session)
	}
}

// quantile is the q-quantile of xs (sorted in place).
func quantile(xs []time.Duration, q float64) time.Duration {
	slices.Sort(xs)
	return xs[min(len(xs)-1, int(q*float64(len(xs))))]
}

// TestSlowSessionLogDoesNotSlowReplies: over a real embedded NATS server
// and Pebble ledger, a session log that takes 100 ms per write delays
// neither act nor end replies (compared with a fast log in the same test),
// and after a clean shutdown the log holds every closed session, in the
// order they closed. Half the sessions close by End, half on the act that
// reaches the step limit. (Before: the write happened on the request path
// under the session's mutex, so each closing request waited for it: a
// quarter of the acts and every end took 100 ms or more.)
func TestSlowSessionLogDoesNotSlowReplies(t *testing.T) {
	const delay = 100 * time.Millisecond
	const sessions = 12
	run := func(w io.Writer) (acts, ends []time.Duration, svc *Service) {
		cfg := cartpoleConfig(64) // no update during the test
		cfg.MaxStepsPerSession = 3
		svc = startService(t, cfg, func(sc *ServiceConfig) { sc.SessionLogWriter = w })
		_, c := dial(t, svc)
		ctx := context.Background()
		for i := range sessions {
			id := fmt.Sprintf("s%02d", i)
			steps := 4 // the fourth act closes the session at the step limit
			if i%2 == 1 {
				steps = 2
			}
			for step := range steps {
				t0 := time.Now()
				_, err := c.Act(ctx, id, "u", obs4, 1, step == 0)
				acts = append(acts, time.Since(t0))
				if (err != nil) != (step == 3) {
					t.Fatalf("%s step %d: %v", id, step, err)
				}
			}
			if steps == 2 {
				t0 := time.Now()
				if _, err := c.EndAs(ctx, id, "u", 1, true); err != nil {
					t.Fatal(err)
				}
				ends = append(ends, time.Since(t0))
			}
		}
		return acts, ends, svc
	}
	fastActs, fastEnds, fastSvc := run(io.Discard)
	fastSvc.Close()
	slow := &slowWriter{delay: delay}
	slowActs, slowEnds, svc := run(slow)
	start := time.Now()
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("act p90 %v (fast log) vs %v (slow log); end p90 %v vs %v; shutdown flushed the log in %v",
		quantile(fastActs, 0.9), quantile(slowActs, 0.9), quantile(fastEnds, 0.9), quantile(slowEnds, 0.9), time.Since(start))
	if f, s := quantile(fastActs, 0.9), quantile(slowActs, 0.9); s > f+delay/2 {
		t.Errorf("act p90 %v with a slow session log, %v with a fast one", s, f)
	}
	if f, s := quantile(fastEnds, 0.9), quantile(slowEnds, 0.9); s > f+delay/2 {
		t.Errorf("end p90 %v with a slow session log, %v with a fast one", s, f)
	}
	var want []string
	for i := range sessions {
		want = append(want, fmt.Sprintf("s%02d", i))
	}
	if got := loggedIDs(t, &slow.buf); !slices.Equal(got, want) {
		t.Errorf("logged %v, want %v", got, want)
	}
}

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
	store := openStore(t, t.TempDir())
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
	if n := metricValue(t, m.SessionLogDropped.WithLabelValues("queue_full")); n != 2 {
		t.Errorf("queue_full drops %v, want 2 (d and e)", n)
	}
	if n := metricValue(t, m.SessionLogQueue); n != 2 {
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
	if n := metricValue(t, m.SessionLogDropped.WithLabelValues("closed")); n != 1 {
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
	store := openStore(t, t.TempDir())
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
	testutil.EventuallyTrue(t, 20*time.Second, "set aside at batch formation", func() bool { return metricValue(t, reason) == 1 })
	time.Sleep(100 * time.Millisecond) // K = 1: an eligible session would have released at once
	if v := a.Version(); v != 1 {
		t.Errorf("version %d: the capped user's session made an update", v)
	}
}
