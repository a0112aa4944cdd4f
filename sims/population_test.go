package sims

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// popTestEnv terminates when action 1 is taken at step >= 3 and truncates
// at 5 steps; the reward is the action index plus 0.5.
type popTestEnv struct {
	steps, resets int
}

func (e *popTestEnv) ObservationSpace() Space {
	return Space{Kind: Box, Low: []float64{0, 0}, High: []float64{10, 100}}
}
func (e *popTestEnv) ActionSpace() Space { return Space{Kind: Discrete, N: 2} }
func (e *popTestEnv) MaxSteps() int      { return 5 }
func (e *popTestEnv) Reset(rng *rand.Rand, obs []float64) {
	e.steps = 0
	e.resets++
	obs[0], obs[1] = 0, float64(e.resets)
	_ = rng.Float64()
}
func (e *popTestEnv) Step(a Action, obs []float64) (float64, bool, bool) {
	e.steps++
	obs[0] = float64(e.steps)
	return float64(a.Index) + 0.5, a.Index == 1 && e.steps >= 3, e.steps >= 5
}

// fixedAgent always plays action; it records per-session calls.
type fixedAgent struct {
	action  int
	failAt  string // session whose Act fails
	mu      sync.Mutex
	acts    map[string]int
	ends    map[string]bool
	resets  map[string]float64 // obs[1] at the first Act of each session
	rewards map[string]float64
}

func newFixedAgent(action int) *fixedAgent {
	return &fixedAgent{action: action, acts: map[string]int{}, ends: map[string]bool{},
		resets: map[string]float64{}, rewards: map[string]float64{}}
}

func (a *fixedAgent) Act(_ context.Context, session, user string, obs []float64, reward float64, first bool) (Action, error) {
	if session == a.failAt {
		return Action{}, errors.New("agent down")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if first != (a.acts[session] == 0) {
		return Action{}, fmt.Errorf("first=%v at call %d", first, a.acts[session])
	}
	if first {
		a.resets[session] = obs[1]
	}
	a.rewards[session] += reward
	a.acts[session]++
	return Action{Index: a.action}, nil
}

func (a *fixedAgent) End(_ context.Context, session string, reward float64, terminal bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rewards[session] += reward
	a.ends[session] = terminal
	return nil
}

func newTestPop(t *testing.T, sessions, workers int, ret float64) *Population {
	t.Helper()
	p, err := NewPopulation(PopulationConfig{
		NewEnv: func() Env { return &popTestEnv{} }, Sessions: sessions, Workers: workers,
		ReturnProb: ret, Seed: 42,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPopulationRun(t *testing.T) {
	tests := []struct {
		name       string
		action     int
		wantLen    int
		wantReturn float64
		wantTerm   bool
	}{
		{"truncated", 0, 5, 2.5, false},
		{"terminated", 1, 3, 4.5, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPop(t, 50, 4, 0.5)
			ag := newFixedAgent(tc.action)
			var results []SessionResult
			if err := p.Run(context.Background(), ag, func(r SessionResult) { results = append(results, r) }); err != nil {
				t.Fatal(err)
			}
			if len(results) != 50 || len(ag.ends) != 50 {
				t.Fatalf("%d results, %d ends", len(results), len(ag.ends))
			}
			seen := map[int]bool{}
			for _, r := range results {
				seen[r.Index] = true
				if r.Length != tc.wantLen || r.Return != tc.wantReturn || r.Terminated != tc.wantTerm {
					t.Errorf("%+v", r)
				}
				if ag.rewards[r.Session] != r.Return || ag.ends[r.Session] != tc.wantTerm {
					t.Errorf("agent saw reward %g for %s, want %g", ag.rewards[r.Session], r.Session, r.Return)
				}
			}
			if len(seen) != 50 {
				t.Errorf("%d distinct sessions", len(seen))
			}
		})
	}
}

func TestPopulationReturningUsers(t *testing.T) {
	for _, ret := range []float64{0, 0.5, 1} {
		p := newTestPop(t, 200, 3, ret)
		ag := newFixedAgent(0)
		byUser := map[string][]SessionResult{}
		var mu sync.Mutex
		if err := p.Run(context.Background(), ag, func(r SessionResult) {
			mu.Lock()
			byUser[r.User] = append(byUser[r.User], r)
			mu.Unlock()
		}); err != nil {
			t.Fatal(err)
		}
		switch ret {
		case 0:
			if p.Users() != 200 {
				t.Errorf("ret 0: %d users", p.Users())
			}
		case 1:
			if p.Users() != 1 {
				t.Errorf("ret 1: %d users", p.Users())
			}
		default:
			if p.Users() < 70 || p.Users() > 130 {
				t.Errorf("ret 0.5: %d users, want about 100", p.Users())
			}
		}
		if len(byUser) != p.Users() {
			t.Errorf("%d users in results, %d in population", len(byUser), p.Users())
		}
		// A user's sessions run in order on its own env instance: its k-th
		// session sees the env's k-th reset, and only the first is new.
		for u, rs := range byUser {
			for k, r := range rs {
				if got := ag.resets[r.Session]; got != float64(k+1) {
					t.Fatalf("user %s session %d: env reset count %g, want %d", u, r.Index, got, k+1)
				}
				if r.Returning != (k > 0) {
					t.Fatalf("user %s session %d: returning %v", u, r.Index, r.Returning)
				}
			}
		}
	}
}

func TestPopulationDeterministic(t *testing.T) {
	a, b := newTestPop(t, 100, 2, 0.7), newTestPop(t, 100, 4, 0.7)
	for i := range 100 {
		if a.UserOf(i) != b.UserOf(i) {
			t.Fatalf("session %d: user %s vs %s", i, a.UserOf(i), b.UserOf(i))
		}
	}
}

func TestPopulationAgentError(t *testing.T) {
	p := newTestPop(t, 100, 4, 0.3)
	ag := newFixedAgent(0)
	ag.failAt = "sim-s17"
	err := p.Run(context.Background(), ag, nil)
	if err == nil || err.Error() != "sims: session sim-s17 step 0: act: agent down" {
		t.Fatalf("err = %v", err)
	}
}

type badAgent struct{ fixedAgent }

func (*badAgent) Act(context.Context, string, string, []float64, float64, bool) (Action, error) {
	return Action{Index: 7}, nil
}

func TestPopulationBadAction(t *testing.T) {
	p := newTestPop(t, 5, 2, 0)
	if err := p.Run(context.Background(), &badAgent{}, nil); !errors.Is(err, ErrBadAction) {
		t.Fatalf("err = %v, want ErrBadAction", err)
	}
}

// blockingAgent blocks in Act until ctx is done.
type blockingAgent struct{ started chan struct{} }

func (a blockingAgent) Act(ctx context.Context, _, _ string, _ []float64, _ float64, _ bool) (Action, error) {
	select {
	case a.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return Action{}, ctx.Err()
}
func (blockingAgent) End(context.Context, string, float64, bool) error { return nil }

func TestPopulationCancel(t *testing.T) {
	p := newTestPop(t, 1000, 4, 0.2)
	ctx, cancel := context.WithCancel(context.Background())
	ag := blockingAgent{started: make(chan struct{}, 1)}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, ag, nil) }()
	<-ag.started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestPopulationConfigValidate(t *testing.T) {
	_, err := NewPopulation(PopulationConfig{Sessions: 0, Workers: -1, ReturnProb: 2})
	if !errors.Is(err, ErrPopulationConfig) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"NewEnv", "Sessions", "Workers", "ReturnProb"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// TestPopulationAdmit checks the pacing hook: no session starts before
// Admit admits it, Admit sees sessions in order, a false return stops
// admission (Run returns nil after the started sessions) and an Admit
// error stops Run with it.
func TestPopulationAdmit(t *testing.T) {
	tests := []struct {
		name    string
		stopAt  int // Admit returns false for this session
		failAt  int // Admit fails for this session (-1: never)
		wantN   int
		wantErr bool
	}{
		{"all", 1 << 30, -1, 40, false},
		{"stop", 25, -1, 25, false},
		{"stop-first", 0, -1, 0, false},
		{"error", 1 << 30, 13, 13, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ag := newFixedAgent(0)
			var admitted []int
			cfg := PopulationConfig{NewEnv: func() Env { return &popTestEnv{} }, Sessions: 40, Workers: 4, ReturnProb: 0.3, Seed: 1,
				Admit: func(_ context.Context, i int) (bool, error) {
					// Sessions before i have been admitted, none after.
					ag.mu.Lock()
					started := len(ag.acts)
					ag.mu.Unlock()
					if started > i {
						return false, fmt.Errorf("%d sessions started before session %d was admitted", started, i)
					}
					if i == tc.failAt {
						return false, errors.New("no")
					}
					admitted = append(admitted, i)
					return i < tc.stopAt, nil
				}}
			p, err := NewPopulation(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var n int
			err = p.Run(context.Background(), ag, func(SessionResult) { n++ })
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if !tc.wantErr && n != tc.wantN {
				t.Errorf("%d sessions, want %d", n, tc.wantN)
			}
			if len(ag.acts) > tc.wantN {
				t.Errorf("%d sessions started, want at most %d", len(ag.acts), tc.wantN)
			}
			for k, i := range admitted {
				if i != k {
					t.Fatalf("admitted %v, want in order", admitted)
				}
			}
		})
	}
}

// TestPopulationAdmitBlocks checks lockstep pacing on a channel: Admit
// holds session i until the session before it has finished (a release
// stands in), so sessions run one at a time whatever the worker count.
func TestPopulationAdmitBlocks(t *testing.T) {
	done := make(chan struct{}, 1)
	done <- struct{}{}
	ag := newFixedAgent(1)
	var running, maxRunning int
	var mu sync.Mutex
	p, err := NewPopulation(PopulationConfig{NewEnv: func() Env { return &popTestEnv{} }, Sessions: 30, Workers: 8, Seed: 2,
		Admit: func(ctx context.Context, _ int) (bool, error) {
			select {
			case <-done:
			case <-ctx.Done():
				return false, ctx.Err()
			}
			mu.Lock()
			running++
			maxRunning = max(maxRunning, running)
			mu.Unlock()
			return true, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := p.Run(context.Background(), ag, func(SessionResult) {
		n++
		mu.Lock()
		running--
		mu.Unlock()
		done <- struct{}{}
	}); err != nil {
		t.Fatal(err)
	}
	if n != 30 || maxRunning != 1 {
		t.Errorf("%d sessions, at most %d at once; want 30, 1", n, maxRunning)
	}
}

// TestPopulationOnError checks that OnError can forgive a failed session
// (the run goes on, the user's later sessions still run) or stop the run.
func TestPopulationOnError(t *testing.T) {
	for _, forgive := range []bool{true, false} {
		p := newTestPop(t, 60, 4, 0.5)
		ag := newFixedAgent(0)
		ag.failAt = "sim-s17"
		var failed []string
		p.cfg.OnError = func(r SessionResult, err error) error {
			failed = append(failed, r.Session)
			if forgive {
				return nil
			}
			return fmt.Errorf("stop: %w", err)
		}
		var n int
		err := p.Run(context.Background(), ag, func(SessionResult) { n++ })
		if len(failed) != 1 || failed[0] != "sim-s17" {
			t.Errorf("forgive %v: failed sessions %v", forgive, failed)
		}
		if forgive && (err != nil || n != 59) {
			t.Errorf("forgive: err %v, %d results, want nil, 59", err, n)
		}
		if !forgive && (err == nil || !strings.Contains(err.Error(), "stop: sims: session sim-s17 step 0: act: agent down")) {
			t.Errorf("stop: err %v", err)
		}
	}
}
