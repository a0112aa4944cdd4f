package main

import (
	"math/rand/v2"
	"strings"
	"testing"

	"dprl/sims"
)

// TestEnvRewardBounds: every simulator has a public reward bound, and
// episodes under random actions stay inside it (the bound is a statement
// about the environment's specification; a reward outside it would be
// clipped).
func TestEnvRewardBounds(t *testing.T) {
	for _, name := range sims.Names() {
		lo, hi, ok := envRewardBound(name)
		if !ok || !(lo <= hi) {
			t.Errorf("%s: reward bound [%v, %v] %v", name, lo, hi, ok)
			continue
		}
		env, err := sims.New(name)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		obs := make([]float64, env.ObservationSpace().Dim())
		as := env.ActionSpace()
		episodes := 5
		if name == "hiv" {
			episodes = 1 // a stiff ODE: slow
		}
		for range episodes {
			env.Reset(rng, obs)
			for {
				var a sims.Action
				if as.Kind == sims.Discrete {
					a.Index = rng.IntN(as.N)
				} else {
					a.Vec = make([]float64, as.Dim())
					for i := range a.Vec {
						a.Vec[i] = as.Low[i] + rng.Float64()*(as.High[i]-as.Low[i])
					}
				}
				r, term, trunc := env.Step(a, obs)
				if r < lo || r > hi {
					t.Fatalf("%s: reward %v outside its bound [%v, %v]", name, r, lo, hi)
				}
				if term || trunc {
					break
				}
			}
		}
	}
}

// TestAgentLimitFlags: the admission limits and the reward bound reach the
// agent's configuration, and bad values are refused.
func TestAgentLimitFlags(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runCLI(t, "agent", "--data", dir, "--env-spec", "pendulum", "--check-config")
	if code != 0 || !strings.Contains(out, "rewards clipped to [-16.27") {
		t.Errorf("pendulum's reward bound: %d %q %q", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "agent", "--data", dir, "--obs-dim", "3", "--actions", "2", "--reward-high", "5", "--check-config")
	if code != 0 || !strings.Contains(out, "rewards clipped to [-1e+06, 5]") {
		t.Errorf("--reward-high: %d %q %q", code, out, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--reward-low", "2", "--reward-high", "1"}, "reward bound"},
		{[]string{"--max-sessions-per-user", "0"}, "per user"},
		{[]string{"--max-sessions-per-connection", "0"}, "per connection"},
		{[]string{"--session-memory-mib", "0"}, "--session-memory-mib"},
		{[]string{"--max-queued-per-user", "0"}, "queued"},
		{[]string{"--max-session-lifetime", "0s"}, "lifetime"},
	} {
		args := append([]string{"agent", "--data", dir, "--env-spec", "cartpole", "--check-config"}, c.args...)
		if code, _, stderr := runCLI(t, args...); code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d %q, want a usage error naming %q", c.args, code, stderr, c.want)
		}
	}
}
