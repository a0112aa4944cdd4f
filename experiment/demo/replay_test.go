package demo

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"dprl/agent"
	"dprl/agent/service"
	"dprl/profile"
)

// startAgent runs a real agent service on an embedded NATS server on a
// loopback port, with a fresh ledger.
func startAgent(t *testing.T, mod func(*agent.Config)) *service.Service {
	t.Helper()
	spec, pc, err := profile.AgentDefaults("cartpole")
	if err != nil {
		t.Fatal(err)
	}
	pc.DP.UsersPerUpdate = 4
	ac := agent.DefaultConfig(spec, pc)
	if mod != nil {
		mod(&ac)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	svc, err := service.StartService(ctx, service.ServiceConfig{Agent: ac, DataDir: t.TempDir(), NATS: "embedded", NATSListen: "127.0.0.1:0",
		ShutdownGrace: 300 * time.Millisecond}) // sessions a stopped replay abandoned keep Close answering this long
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

func replayConfig(url string) ReplayConfig {
	return ReplayConfig{URL: url, Prefix: "dprl", Env: "cartpole", Users: 12, Concurrency: 3, Returning: 0.3, Seed: 4}
}

// TestReplay plays users against a running agent: every session is
// counted, the acts are the users' steps, the curve has ten points, and
// the progress callback runs once.
func TestReplay(t *testing.T) {
	svc := startAgent(t, nil)
	cfg := replayConfig(svc.NATSURL())
	var starts, stops int
	var final ReplayProgress
	cfg.StartProgress = func(p func() ReplayProgress) func() {
		starts++
		return func() { final = p(); stops++ }
	}
	res, err := Replay(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Users != 12 || res.Planned != 12 || res.Stopped != "" || res.Errors != 0 || len(res.SimUsersCurve) != 10 || res.Env != "cartpole" || res.Acts < 12*8 || !(res.ActsPerSec > 0) {
		t.Errorf("result %+v", res)
	}
	// CartPole episodes last at least 8 steps and return their length.
	for i, r := range res.SimUsersCurve {
		if r == nil || *r < 8 {
			t.Errorf("curve[%d] = %v", i, r)
		}
	}
	if starts != 1 || stops != 1 || final.Played != 12 || final.Users != 12 {
		t.Errorf("progress: %d starts, %d stops, final %+v", starts, stops, final)
	}
	var b strings.Builder
	if err := res.WriteText(&b); err != nil || !strings.Contains(b.String(), "simulation only: the simulated users' own mean return per tenth of the run") {
		t.Errorf("text %q %v", b.String(), err)
	}
}

// TestReplayCountsFailedSessions: sessions the agent refuses (here: past
// its step limit) are counted as errors, reported, and the run goes on;
// the progress counts each session once, never more than the run has.
func TestReplayCountsFailedSessions(t *testing.T) {
	svc := startAgent(t, func(c *agent.Config) { c.MaxStepsPerSession = 3 })
	cfg := replayConfig(svc.NATSURL())
	var w watchProgress
	cfg.StartProgress = w.start
	var mu sync.Mutex
	var failed []string
	cfg.OnSessionError = func(session string, err error) {
		mu.Lock()
		failed = append(failed, session)
		mu.Unlock()
	}
	res, err := Replay(context.Background(), cfg)
	var sf *SessionsFailedError
	if !errors.As(err, &sf) || sf.Failed != res.Errors || sf.Played != res.Users {
		t.Fatalf("err %v: want a SessionsFailedError with the result's counts", err)
	}
	if res.Users != 12 || res.Errors == 0 || int(res.Errors) != len(failed) {
		t.Errorf("result %+v, %d failures reported", res, len(failed))
	}
	w.checkCount(t, res, cfg.Users)
}

func TestReplayConfig(t *testing.T) {
	for _, c := range []struct {
		mod         func(*ReplayConfig)
		plain, flag string
	}{
		{func(c *ReplayConfig) { c.Users = 0; c.Env = "nope" }, "Users and Concurrency must be >= 1", "--users and --concurrency must be >= 1"},
		{func(c *ReplayConfig) { c.Concurrency = -1 }, "Users and Concurrency must be >= 1", "--users and --concurrency must be >= 1"},
		{func(c *ReplayConfig) { c.Returning = 1; c.Env = "nope" }, "Returning 1: want 0 <= p < 1", "--returning 1: want 0 <= p < 1"},
		{func(c *ReplayConfig) { c.Env = "nope" }, `sims: unknown environment "nope"`, `sims: unknown environment "nope"`},
	} {
		cfg := replayConfig("nats://127.0.0.1:1")
		c.mod(&cfg)
		_, err := Replay(context.Background(), cfg)
		if err == nil || !strings.HasPrefix(err.Error(), c.plain) || !strings.HasPrefix(asFlags(err), c.flag) {
			t.Errorf("%v, want %q (%q)", err, c.plain, c.flag)
		}
	}
	// No server: the connection error.
	if _, err := Replay(context.Background(), replayConfig("nats://127.0.0.1:1")); err == nil {
		t.Error("no server: no error")
	}
}

func TestReplayResultWriteText(t *testing.T) {
	a, c := 35.66, 42.7
	r := ReplayResult{Users: 30, Planned: 30, Acts: 1182, Seconds: 0.045, ActsPerSec: 26191.2, P50Ms: 0.088, P99Ms: 0.733, LastVersion: 11,
		SimUsersCurve: []*float64{&a, nil, &c}}
	const want = "30 sessions, 1182 acts in 0.0 s: 26191 acts/s, act p50 0.088 ms, p99 0.733 ms, 0 errors, policy version 11\n" +
		"simulation only: the simulated users' own mean return per tenth of the run (measured by the users, not released by the agent; -: no session of that tenth completed): 35.7 - 42.7\n"
	var b strings.Builder
	if err := r.WriteText(&b); err != nil || b.String() != want {
		t.Errorf("got  %q\nwant %q (%v)", b.String(), want, err)
	}
	r.Users, r.Planned, r.Stopped = 30, 400, "agent unreachable: no reply for 30s"
	b.Reset()
	if err := r.WriteText(&b); err != nil || b.String() != "agent unreachable: no reply for 30s: 30 of 400 sessions played\n"+want {
		t.Errorf("stopped: got %q (%v)", b.String(), err)
	}
	if got := (ReplayProgress{Played: 5, Users: 12, Errors: 1, Version: 3, ActP99Ms: 0.456}).String(); got != "users 5/12  errors 1  policy version 3  act p99 0.46 ms" {
		t.Errorf("progress %q", got)
	}
}
