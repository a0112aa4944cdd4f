package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"dprl/agent/internal/agenttest"
	"dprl/internal/testutil"
	"dprl/ledger"
	"dprl/policy"
	"dprl/sims"
)

func cartpoleConfig(K int) Config {
	pc := policy.DefaultControlConfig()
	pc.DP.UsersPerUpdate = K
	cfg := DefaultConfig(policy.Spec{ObsDim: 4, Kind: policy.ActionDiscrete, NumActions: 2}, pc)
	cfg.Seed = 7
	cfg.Workers = 2
	return cfg
}

func startAgent(t *testing.T, cfg Config, dir string) (*Agent, *ledger.Store, func()) {
	t.Helper()
	store := agenttest.OpenStore(t, dir)
	a, err := New(cfg, store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	return a, store, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		store.Close()
	}
}

// playEpisode runs one cartpole episode of at most maxSteps through the agent.
func playEpisode(t *testing.T, a *Agent, id, user string, rng *rand.Rand, maxSteps int) (float64, EndResult) {
	t.Helper()
	env := sims.NewCartPole()
	obs := make([]float64, 4)
	env.Reset(rng, obs)
	var ret, reward float64
	first := true
	for step := 0; step < maxSteps; step++ {
		res, err := a.Act(id, user, obs, reward, !first)
		if err != nil {
			t.Fatalf("act %s step %d: %v", id, step, err)
		}
		first = false
		r, term, trunc := env.Step(res.Action, obs)
		ret += r
		if term || trunc || step == maxSteps-1 {
			end, err := a.End(id, user, r, term)
			if err != nil {
				t.Fatalf("end %s: %v", id, err)
			}
			return ret, end
		}
		reward = r
	}
	return ret, EndResult{}
}

func TestUpdatesReleaseAndResume(t *testing.T) {
	dir := t.TempDir()
	cfg := cartpoleConfig(4)
	a, store, stop := startAgent(t, cfg, dir)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 12; i++ {
		_, end := playEpisode(t, a, fmt.Sprintf("s%d", i), fmt.Sprintf("u%d", i), rng, 64)
		if !end.Used {
			t.Fatalf("session %d not used: %s", i, end.Reason)
		}
		if i%4 == 3 {
			want := uint64(i/4 + 1)
			testutil.EventuallyTrue(t, 20*time.Second, fmt.Sprintf("version %d", want), func() bool { return a.Version() >= want })
		}
	}
	r, err := store.Verify()
	if err != nil || !r.OK() || r.Releases != 3 || r.Users != 12 {
		t.Fatalf("verify %+v %v", r, err)
	}
	stop()
	// Restart: the agent serves the last released version.
	a2, store2, stop2 := startAgent(t, cfg, dir)
	defer stop2()
	if a2.Version() != 3 {
		t.Errorf("resumed version %d, want 3", a2.Version())
	}
	h, _ := store2.Head()
	if h.Version != 3 {
		t.Errorf("head %+v", h)
	}
	// An incompatible spec is refused.
	store2.Close()
	bad := cfg
	bad.Spec.ObsDim = 6
	s3 := agenttest.OpenStore(t, t.TempDir())
	defer s3.Close()
	if _, err := New(cfg, s3, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(bad, s3, Options{}); !errors.Is(err, ledger.ErrIncompatibleSpec) {
		t.Errorf("incompatible spec: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	cfg := cartpoleConfig(4)
	cfg.MaxStepsPerSession = 5
	cfg.MaxOpenSessions = 3
	a, _, stop := startAgent(t, cfg, t.TempDir())
	defer stop()
	obs := []float64{0, 0, 0, 0}
	cases := []struct {
		name string
		do   func() error
		want error
	}{
		{"obs dim", func() error { _, err := a.Act("x", "", []float64{1, 2}, 0, false); return err }, ErrObsDim},
		{"NaN obs", func() error { _, err := a.Act("x", "", []float64{0, math.NaN(), 0, 0}, 0, false); return err }, ErrNonFinite},
		{"Inf reward", func() error { _, err := a.Act("x", "", obs, math.Inf(1), true); return err }, ErrNonFinite},
		{"unknown session with reward", func() error { _, err := a.Act("nope", "", obs, 1, true); return err }, ErrUnknownSession},
		{"end unknown", func() error { _, err := a.End("nope", "", 1, true); return err }, ErrUnknownSession},
		{"missing reward", func() error {
			if _, err := a.Act("m", "", obs, 0, false); err != nil {
				return err
			}
			_, err := a.Act("m", "", obs, 0, false)
			return err
		}, ErrBadRequest},
	}
	for _, c := range cases {
		if err := c.do(); !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
	// Step limit: the session is closed as truncated.
	var err error
	for i := 0; i < 6 && err == nil; i++ {
		_, err = a.Act("long", "", obs, 1, i > 0)
	}
	if !errors.Is(err, ErrStepLimit) {
		t.Errorf("step limit: %v", err)
	}
	if _, err := a.Act("long", "", obs, 1, true); !errors.Is(err, ErrUnknownSession) {
		t.Errorf("after step limit: %v", err)
	}
	// Session limit ("m" is open; fill to 3).
	a.Act("o1", "", obs, 0, false)
	a.Act("o2", "", obs, 0, false)
	if _, err := a.Act("o3", "", obs, 0, false); !errors.Is(err, ErrSessionLimit) {
		t.Errorf("session limit: %v", err)
	}
	// The agent keeps serving after all that.
	if _, err := a.End("o1", "", 1, true); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Act("o4", "", obs, 0, false); err != nil {
		t.Errorf("serving after bad input: %v", err)
	}
}

func TestContributionBoundingAndCaps(t *testing.T) {
	cfg := cartpoleConfig(2)
	cfg.MaxUpdatesPerUser = 1
	a, store, stop := startAgent(t, cfg, t.TempDir())
	defer stop()
	rng := rand.New(rand.NewPCG(3, 4))
	// Two sessions of the same user cannot share an update.
	playEpisode(t, a, "a1", "alice", rng, 20)
	playEpisode(t, a, "a2", "alice", rng, 20)
	time.Sleep(50 * time.Millisecond)
	if a.Version() != 0 {
		t.Fatalf("one user's two sessions made an update")
	}
	playEpisode(t, a, "b1", "bob", rng, 20)
	testutil.EventuallyTrue(t, 20*time.Second, "version 1", func() bool { return a.Version() == 1 })
	st, _ := store.UserState(store.User("alice"))
	if st.Updates != 1 {
		t.Errorf("alice updates %d", st.Updates)
	}
	// Alice is at max_updates_per_user: served, not learned from (set
	// aside when a batch is formed; End's reply does not say so), as is
	// her second session a2, still queued at the release.
	playEpisode(t, a, "a3", "alice", rng, 20)
	waitDiscarded(t, a, "user_update_cap", 2)
}

func TestIdleTimeoutTruncates(t *testing.T) {
	cfg := cartpoleConfig(1)
	cfg.IdleTimeout = 50 * time.Millisecond
	a, _, stop := startAgent(t, cfg, t.TempDir())
	defer stop()
	obs := []float64{0.01, 0, 0, 0}
	a.Act("idle", "", obs, 0, false)
	a.Act("idle", "", obs, 1, true)
	a.Act("idle", "", obs, 1, true)
	testutil.EventuallyTrue(t, 20*time.Second, "idle close and update", func() bool { return a.Version() == 1 })
	if _, err := a.Act("idle", "", obs, 1, true); !errors.Is(err, ErrUnknownSession) {
		t.Errorf("after idle: %v", err)
	}
}

func TestConcurrentServing(t *testing.T) {
	cfg := cartpoleConfig(8)
	a, store, stop := startAgent(t, cfg, t.TempDir())
	defer stop()
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for i := 0; i < 6; i++ {
				playEpisode(t, a, fmt.Sprintf("w%d-%d", w, i), fmt.Sprintf("u%d-%d", w, i), rng, 40)
			}
		}(w)
	}
	wg.Wait()
	// All 48 sessions finish on version 0 before the first update lands, so
	// only two updates can use them (MaxStaleness 1); the rest are stale.
	testutil.EventuallyTrue(t, 20*time.Second, "2 updates", func() bool { return a.Version() >= 2 })
	if r, err := store.Verify(); err != nil || !r.OK() {
		t.Errorf("verify %+v %v", r, err)
	}
}

// The agent refuses correlated noise, whose accounting assumes that each
// user enters one release and whose state it does not persist.
func TestConfigRejectsTree(t *testing.T) {
	cfg := cartpoleConfig(4)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []policy.Noise{policy.NoiseTree, policy.NoiseSqrt} {
		cfg.Policy.DP.Noise, cfg.Policy.DP.Horizon = n, 16
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), n.String()+" noise is for in-process training only") {
			t.Fatalf("%v noise: %v, want a refusal", n, err)
		}
	}
}

// waitDiscarded waits until a's sessions set aside for reason number n:
// batch formation applies the per-user caps after End replied.
func waitDiscarded(t *testing.T, a *Agent, reason string, n float64) {
	t.Helper()
	testutil.EventuallyTrue(t, 10*time.Second, fmt.Sprintf("%d sessions set aside (%s)", int(n), reason), func() bool {
		return testutil.MetricValue(t, a.Metrics().SessionsDiscarded.WithLabelValues(reason)) == n
	})
}
