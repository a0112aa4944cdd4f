package service

// Fixtures built on the agent's types, copied from the agent package's
// tests (which cannot import a package that imports agent); those that
// need no agent type are in agent/internal/agenttest.

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"dprl/agent"
	"dprl/agent/internal/agenttest"
	"dprl/ledger"
	"dprl/policy"
	"dprl/profile"
	"dprl/sims"
)

func cartpoleConfig(K int) agent.Config {
	pc := policy.DefaultControlConfig()
	pc.DP.UsersPerUpdate = K
	cfg := agent.DefaultConfig(policy.Spec{ObsDim: 4, Kind: policy.ActionDiscrete, NumActions: 2}, pc)
	cfg.Seed = 7
	cfg.Workers = 2
	return cfg
}

func startAgent(t *testing.T, cfg agent.Config, dir string) (*agent.Agent, *ledger.Store, func()) {
	t.Helper()
	store := agenttest.OpenStore(t, dir)
	a, err := agent.New(cfg, store, agent.Options{})
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
func playEpisode(t *testing.T, a *agent.Agent, id, user string, rng *rand.Rand, maxSteps int) (float64, agent.EndResult) {
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
	return ret, agent.EndResult{}
}

var obs4 = []float64{0.01, -0.02, 0.03, 0.04}

// hugeReward is finite and accepted on the wire, but a few of them overflow
// a return to +Inf: the session's local update is then non-finite.
const hugeReward = math.MaxFloat64 / 2

// bandedConfig is cartpoleConfig(K) with bandmf noise of band bands and a
// cap of k updates per user.
func bandedConfig(K, band, k int) agent.Config {
	cfg := cartpoleConfig(K)
	cfg.Policy.DP.Noise, cfg.Policy.DP.Band = policy.NoiseBandedSqrt, band
	cfg.MaxUpdatesPerUser = k
	return cfg
}

// pendulumFixed is the configuration of an agent serving a SAC actor for
// Pendulum (3 observation values, one action in [-2, 2]).
func pendulumFixed(t testing.TB) agent.Config {
	t.Helper()
	spec, pc, err := profile.AgentDefaults("pendulum")
	if err != nil {
		t.Fatal(err)
	}
	f, err := agent.ParseFixedPolicy(agenttest.SACSnapshot(t, 3, []float64{-2}, []float64{2}, agenttest.PrivateProvenance()), "test.snap")
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.DefaultConfig(spec, pc)
	cfg.Fixed, cfg.Seed = f, 3
	return cfg
}
