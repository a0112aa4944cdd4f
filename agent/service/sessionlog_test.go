package service

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"dprl/agent/internal/agenttest"
	"dprl/sessionlog"
)

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

func TestSessionLog(t *testing.T) {
	dir := t.TempDir()
	cfg := cartpoleConfig(4)
	svc, err := StartService(context.Background(), ServiceConfig{Agent: cfg, DataDir: t.TempDir(), SessionLogDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for i := 0; i < 5; i++ {
		playEpisode(t, svc.Agent(), fmt.Sprintf("log-%d", i), "u", rng, 30)
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	ss := agenttest.LoggedSessions(t, dir, sessionlog.Spec{ObsDim: 4, Discrete: 2})
	for _, s := range ss {
		if s.User != "u" || len(s.Steps) == 0 || s.Steps[0].LogP > 0 {
			t.Errorf("logged session %+v", s)
		}
	}
	if len(ss) != 5 {
		t.Errorf("%d sessions logged, want 5", len(ss))
	}
}
