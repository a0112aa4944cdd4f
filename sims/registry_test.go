package sims

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func TestRegistry(t *testing.T) {
	names := Names()
	want := []string{"cartpole", "acrobot", "pendulum", "cartpole-balance", "cartpole-swingup", "mountaincar", "riverswim", "riverswim-0.9", "hiv", "dosing-0", "dosing-1", "recsys", "bandit", "chain"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("Names() = %v, want %v", names, want)
	}
	seen := map[string]bool{}
	for _, info := range Registry() {
		if seen[info.Name] || info.Description == "" || info.New == nil {
			t.Errorf("bad entry %+v", info)
		}
		seen[info.Name] = true
		a, err := New(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := New(info.Name)
		if a == b {
			t.Errorf("%s: New returned a shared instance", info.Name)
		}
	}
	if e, _ := New("riverswim-0.9"); e.(*RiverSwim).P() != 0.9 {
		t.Error("riverswim-0.9 has the wrong p")
	}
	_, err := New("cartpol")
	if !errors.Is(err, ErrUnknownEnv) {
		t.Fatalf("unknown name: %v", err)
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not list %s", err, n)
		}
	}
}

// sampleAction draws a uniform action from a space.
func sampleAction(rng *rand.Rand, s Space, a *Action) {
	if s.Kind == Discrete {
		a.Index = rng.IntN(s.N)
		return
	}
	for i := range a.Vec {
		a.Vec[i] = uniform(rng, s.Low[i], s.High[i])
	}
}

func newAction(s Space) Action {
	if s.Kind == Box {
		return Action{Vec: make([]float64, len(s.Low))}
	}
	return Action{}
}

// rollout runs episodes of uniformly random actions and returns every
// observation and reward, in order.
func rolloutAll(t *testing.T, env Env, seed uint64, episodes int) []float64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed+1))
	obs := make([]float64, env.ObservationSpace().Dim())
	act := newAction(env.ActionSpace())
	var out []float64
	os := env.ObservationSpace()
	for range episodes {
		env.Reset(rng, obs)
		out = append(out, obs...)
		for n := 1; ; n++ {
			sampleAction(rng, env.ActionSpace(), &act)
			r, term, trunc := env.Step(act, obs)
			for i, v := range obs {
				if math.IsNaN(v) || v < os.Low[i]-1e-12 || v > os.High[i]+1e-12 {
					t.Fatalf("obs[%d] = %v outside [%v, %v]", i, v, os.Low[i], os.High[i])
				}
			}
			if trunc != (n == env.MaxSteps()) {
				t.Fatalf("step %d: truncated %v with MaxSteps %d", n, trunc, env.MaxSteps())
			}
			out = append(out, obs...)
			out = append(out, r)
			if term || trunc {
				break
			}
		}
	}
	return out
}

// TestEnvContract runs every registered environment: observations inside the
// observation space, truncation exactly at MaxSteps, determinism under a
// seed, and different trajectories under different seeds.
func TestEnvContract(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			env, _ := New(name)
			if env.ObservationSpace().Kind != Box || env.MaxSteps() < 1 {
				t.Fatalf("spaces %+v, max steps %d", env.ObservationSpace(), env.MaxSteps())
			}
			if err := CheckAction(env.ActionSpace(), newAction(env.ActionSpace())); err != nil {
				t.Fatal(err)
			}
			a := rolloutAll(t, env, 1, 5)
			b := rolloutAll(t, env, 1, 5)
			c := rolloutAll(t, env, 2, 5)
			if !reflect.DeepEqual(a, b) {
				t.Error("same seed, different trajectories")
			}
			if reflect.DeepEqual(a, c) {
				t.Error("different seeds, same trajectories")
			}
		})
	}
}

// TestTruncationAtLimit holds every environment in its all-zeros state (which
// never terminates on the next step) for MaxSteps steps: truncated is
// reported on the last step only.
func TestTruncationAtLimit(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			env, _ := New(name)
			ss, ok := env.(StateSetter)
			if !ok || name == "hiv" || strings.HasPrefix(name, "dosing") {
				t.Skipf("%s has no settable state; its own tests cover truncation", name)
			}
			obs := make([]float64, env.ObservationSpace().Dim())
			env.Reset(rand.New(rand.NewPCG(1, 1)), obs)
			zero := make([]float64, len(stateNames(t, env)))
			act := newAction(env.ActionSpace())
			for n := 1; n <= env.MaxSteps(); n++ {
				if err := ss.SetState(zero, obs); err != nil {
					t.Fatal(err)
				}
				_, term, trunc := env.Step(act, obs)
				if term || trunc != (n == env.MaxSteps()) {
					t.Fatalf("step %d of %d: terminated %v truncated %v", n, env.MaxSteps(), term, trunc)
				}
			}
			// Reset restarts the count.
			env.Reset(rand.New(rand.NewPCG(1, 1)), obs)
			if err := ss.SetState(zero, obs); err != nil {
				t.Fatal(err)
			}
			if _, _, trunc := env.Step(act, obs); trunc && env.MaxSteps() > 1 {
				t.Fatal("truncated right after Reset")
			}
		})
	}
}
