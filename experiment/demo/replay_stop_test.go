package demo

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dprl/agent"
	"dprl/agent/service"
	"dprl/profile"
	"dprl/stream"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// externalAgent runs a NATS server on a loopback port and an agent service
// that reaches it by its URL, as it would a separate server.
func externalAgent(t *testing.T) (url string, svc *service.Service) {
	t.Helper()
	ns, err := stream.StartEmbedded(stream.EmbeddedOptions{Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	spec, pc, err := profile.AgentDefaults("cartpole")
	if err != nil {
		t.Fatal(err)
	}
	pc.DP.UsersPerUpdate = 4
	svc, err = service.StartService(context.Background(), service.ServiceConfig{Agent: agent.DefaultConfig(spec, pc), DataDir: t.TempDir(), NATS: ns.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return ns.ClientURL(), svc
}

// watchProgress samples the replay's progress while it runs: the most
// sessions it ever counted and, through played, the latest count.
type watchProgress struct {
	max, played atomic.Int64
	final       ReplayProgress
}

func (w *watchProgress) start(p func() ReplayProgress) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			n := p().Played
			w.played.Store(n)
			if n > w.max.Load() {
				w.max.Store(n)
			}
			select {
			case <-done:
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	})
	return func() { close(done); wg.Wait(); w.final = p() }
}

// checkCount: the progress never counted more sessions than the run has,
// and its last count is the result's.
func (w *watchProgress) checkCount(t *testing.T, res ReplayResult, users int) {
	t.Helper()
	if w.max.Load() > int64(users) || w.final.Played != res.Users || w.final.Users != users || res.Users > int64(users) {
		t.Errorf("progress counted up to %d, finally %+v, result %d sessions, of %d", w.max.Load(), w.final, res.Users, users)
	}
}

// sessionErrors collects the sessions' errors by kind.
type sessionErrors struct {
	mu    sync.Mutex
	kinds map[string]int
}

func (s *sessionErrors) add(_ string, err error) {
	k := "other: " + err.Error()
	switch {
	case errors.Is(err, stream.ErrShuttingDown):
		k = "shutting_down"
	case errors.Is(err, nats.ErrNoResponders):
		k = "no responders"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		k = "timeout"
	}
	s.mu.Lock()
	if s.kinds == nil {
		s.kinds = map[string]int{}
	}
	s.kinds[k]++
	s.mu.Unlock()
}

// TestReplayStopsOnShuttingDown stops the agent in the middle of a replay
// (the agent on an external NATS server, as dprl agent --nats URL): the
// replay stops at the first shutting_down reply, starts no new session,
// returns a StoppedError that errors.Is stream.ErrShuttingDown with the
// partial summary, and no session failed with "no responders". (Before,
// the replay went on starting sessions, each failing with "no responders",
// until every one had been tried, and returned no error.)
func TestReplayStopsOnShuttingDown(t *testing.T) {
	url, svc := externalAgent(t)
	cfg := replayConfig(url)
	cfg.Users, cfg.Concurrency, cfg.GiveUp = 20000, 8, 10*time.Second
	var w watchProgress
	var errs sessionErrors
	cfg.StartProgress, cfg.OnSessionError = w.start, errs.add
	go func() {
		for w.played.Load() < 40 {
			time.Sleep(time.Millisecond)
		}
		svc.Close()
	}()
	res, err := Replay(context.Background(), cfg)
	var se *StoppedError
	if !errors.Is(err, stream.ErrShuttingDown) || !errors.As(err, &se) || se.Played != res.Users || se.Users != 20000 {
		t.Fatalf("err %v, want a StoppedError for shutting_down", err)
	}
	if !strings.HasPrefix(err.Error(), "agent shutting down; ") {
		t.Errorf("message %q", err)
	}
	if res.Stopped != "agent shutting down" || res.Users < 40 || res.Users > 1000 || res.Planned != 20000 {
		t.Errorf("result %+v", res)
	}
	if errs.kinds["shutting_down"] == 0 || len(errs.kinds) != 1 || int64(errs.kinds["shutting_down"]) != res.Errors || res.Errors > int64(cfg.Concurrency) {
		t.Errorf("session errors %v (%d counted), want only shutting_down, at most one per worker", errs.kinds, res.Errors)
	}
	w.checkCount(t, res, cfg.Users)
}

// TestReplayGivesUp: with no agent behind the NATS server ("no
// responders") or one that never answers (timeouts), the replay gives up
// after GiveUp without a reply, with ErrAgentUnreachable and the partial
// summary, having started few sessions meanwhile. (Before, it played every
// session into "no responders", or waited out a 5 s timeout per request.)
func TestReplayGivesUp(t *testing.T) {
	ns, err := stream.StartEmbedded(stream.EmbeddedOptions{Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown()
	for _, hung := range []bool{false, true} {
		if hung { // an agent that takes requests and never answers
			nc, err := stream.Connect(ns.ClientURL())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if _, err := nc.QueueSubscribe("dprl.v1.act", stream.QueueGroup, func(*nats.Msg) {}); err != nil {
				t.Fatal(err)
			}
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		cfg := replayConfig(ns.ClientURL())
		cfg.Users, cfg.Concurrency, cfg.GiveUp = 20000, 8, 400*time.Millisecond
		var w watchProgress
		var errs sessionErrors
		cfg.StartProgress, cfg.OnSessionError = w.start, errs.add
		start := time.Now()
		res, err := Replay(context.Background(), cfg)
		took := time.Since(start)
		var se *StoppedError
		if !errors.Is(err, ErrAgentUnreachable) || !errors.As(err, &se) || !strings.HasPrefix(err.Error(), "agent unreachable: no reply for 400ms; ") ||
			!strings.HasSuffix(err.Error(), " of 20000 sessions played") {
			t.Errorf("hung %v: err %v", hung, err)
		}
		if took < cfg.GiveUp || took > cfg.GiveUp+2*time.Second {
			t.Errorf("hung %v: gave up after %v, GiveUp %v", hung, took, cfg.GiveUp)
		}
		if res.Stopped != "agent unreachable: no reply for 400ms" || res.Planned != 20000 || res.Users > 2*int64(cfg.Concurrency) || res.Errors != res.Users {
			t.Errorf("hung %v: result %+v, session errors %v", hung, res, errs.kinds)
		}
		w.checkCount(t, res, cfg.Users)
	}
}

// TestReplayInterrupted: a replay whose context ends reports the sessions
// played so far, says it was interrupted, and leaves the tenths of the run
// with no completed session absent from the curve (nil; "-" in the text),
// where it printed 0.0 before.
func TestReplayInterrupted(t *testing.T) {
	svc := startAgent(t, nil)
	cfg := replayConfig(svc.NATSURL())
	cfg.Users, cfg.Concurrency, cfg.Returning = 1000, 2, 0
	var w watchProgress
	cfg.StartProgress = w.start
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for w.played.Load() < 20 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	res, err := Replay(ctx, cfg)
	var se *StoppedError
	if !errors.As(err, &se) || !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "replay interrupted; ") {
		t.Fatalf("err %v", err)
	}
	if res.Stopped != "replay interrupted" || res.Users < 20 || res.Users >= 100 || res.Planned != 1000 || len(res.SimUsersCurve) != 10 {
		t.Fatalf("result %+v", res)
	}
	if res.SimUsersCurve[0] == nil || *res.SimUsersCurve[0] < 8 {
		t.Errorf("first tenth %v", res.SimUsersCurve[0])
	}
	for i, v := range res.SimUsersCurve[1:] {
		if v != nil {
			t.Errorf("tenth %d, never played, is %v", i+1, *v)
		}
	}
	var b strings.Builder
	if err := res.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if !strings.HasPrefix(text, "replay interrupted: ") || !strings.Contains(text, " of 1000 sessions played\n") || !strings.HasSuffix(text, " - - - - - - - - -\n") {
		t.Errorf("text %q", text)
	}
	w.checkCount(t, res, cfg.Users)
}

// TestReplayNamesRefusedClient: against a secured server whose identity
// may not make the replay's requests (as dprl replay without
// --nats-identity against a secured agent), the replay gives up naming the
// permissions violation and its likely cause, where it said only "agent
// unreachable" while the server logged the violation.
func TestReplayNamesRefusedClient(t *testing.T) {
	ns, err := stream.StartEmbedded(stream.EmbeddedOptions{Port: -1, Users: []*server.User{{Username: "web", Password: "pw",
		Permissions: &server.Permissions{Publish: &server.SubjectPermission{Allow: []string{"elsewhere.>"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown()
	cfg := replayConfig(ns.ClientURL())
	cfg.Users, cfg.Concurrency, cfg.GiveUp = 100, 2, 400*time.Millisecond
	cfg.Options = append(cfg.Options, stream.WithNATSOption(nats.UserInfo("web", "pw")))
	_, err = Replay(context.Background(), cfg)
	if !errors.Is(err, ErrAgentUnreachable) || !strings.Contains(err.Error(), "permissions violation") || !strings.Contains(err.Error(), "--nats-identity") {
		t.Errorf("err %v: want agent unreachable naming the permissions violation and --nats-identity", err)
	}
}

// TestReplayRate: --rate paces the sessions' starts (20 sessions at 100 a
// second take at least 0.19 s), and a negative or infinite rate is refused.
func TestReplayRate(t *testing.T) {
	svc := startAgent(t, nil)
	cfg := replayConfig(svc.NATSURL())
	cfg.Users, cfg.Concurrency, cfg.Rate = 20, 8, 100
	start := time.Now()
	res, err := Replay(context.Background(), cfg)
	if err != nil || res.Users != 20 {
		t.Fatalf("paced replay: %v, %d sessions", err, res.Users)
	}
	if took := time.Since(start); took < 190*time.Millisecond {
		t.Errorf("20 sessions at 100/s took %v, want >= 190 ms", took)
	}
	for _, r := range []float64{-1, math.Inf(1), math.NaN()} {
		cfg.Rate = r
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "Rate") {
			t.Errorf("rate %v: %v", r, err)
		}
	}
}
