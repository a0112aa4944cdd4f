package profile

import (
	"errors"
	"math/rand/v2"
	"testing"

	"dprl/policy"
	"dprl/sims"
)

// TestEnvRewardBounds: every registered simulator has a profile whose public
// reward range is ordered, and episodes under random actions stay inside it
// (the range is a statement about the environment's specification; a reward
// outside it would be clipped by the agent).
func TestEnvRewardBounds(t *testing.T) {
	for _, name := range sims.Names() {
		p, err := Get(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		lo, hi := p.RewardLow, p.RewardHigh
		if !(lo <= hi) {
			t.Errorf("%s: reward range [%v, %v]", name, lo, hi)
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
					t.Fatalf("%s: reward %v outside its range [%v, %v]", name, r, lo, hi)
				}
				if term || trunc {
					break
				}
			}
		}
	}
}

// TestProfiles: every registered simulator's profile is consistent with the
// simulator (spec, observation scales) and its learner defaults validate, for
// dppg, for dprl train's correlated variant and for the non-private baseline.
func TestProfiles(t *testing.T) {
	for _, name := range sims.Names() {
		t.Run(name, func(t *testing.T) {
			p, err := Get(name)
			if err != nil {
				t.Fatal(err)
			}
			env, err := sims.New(name)
			if err != nil {
				t.Fatal(err)
			}
			if p.Name != name {
				t.Errorf("name %q", p.Name)
			}
			if err := p.Spec.Validate(); err != nil {
				t.Errorf("spec: %v", err)
			}
			if p.Spec.ObsDim != env.ObservationSpace().Dim() {
				t.Errorf("spec obs dim %d, simulator %d", p.Spec.ObsDim, env.ObservationSpace().Dim())
			}
			as := env.ActionSpace()
			if discrete := p.Spec.Kind == policy.ActionDiscrete; discrete != (as.Kind == sims.Discrete) ||
				(discrete && p.Spec.NumActions != as.N) || (!discrete && p.Spec.ActionDim != as.Dim()) {
				t.Errorf("spec %+v, simulator actions %+v", p.Spec, as)
			}
			if sc := p.Learner.PPO.ObsScale; len(sc) != 0 && len(sc) != p.Spec.ObsDim {
				t.Errorf("%d observation scales for dimension %d", len(sc), p.Spec.ObsDim)
			}
			if err := p.Learner.Validate(); err != nil {
				t.Errorf("learner: %v", err)
			}
			if p.Learner.DP.Mode != policy.ModeDP || p.Learner.DP.Noise != policy.NoiseIndependent {
				t.Errorf("learner is not Algorithm 2: mode %v noise %v", p.Learner.DP.Mode, p.Learner.DP.Noise)
			}
			cfg, noise := p.TrainLearner()
			if noise != policy.NoiseIndependent || cfg.DP.UsersPerUpdate != p.Learner.DP.UsersPerUpdate {
				t.Errorf("train learner differs without correlated defaults: K %d noise %v", cfg.DP.UsersPerUpdate, noise)
			}
			np := NonPrivate(p.Learner)
			if np.DP.Mode != policy.ModePPO || np.DP.NoiseMultiplier != 0 || np.DP.ClipNorm != 0 || np.DP.UsersPerUpdate != p.Learner.DP.UsersPerUpdate {
				t.Errorf("non-private baseline DP %+v", np.DP)
			}
			if err := np.Validate(); err != nil {
				t.Errorf("non-private baseline: %v", err)
			}
			if !(p.DemoTargetReturn >= 0 && p.DemoTargetReturn <= p.RewardHigh*float64(env.MaxSteps())) {
				t.Errorf("demo target %v unreachable", p.DemoTargetReturn)
			}
		})
	}
}

// TestGet: the measured values a caller relies on, fresh values on every
// call, and the errors of unknown names.
func TestGet(t *testing.T) {
	cp, err := Get("cartpole")
	if err != nil {
		t.Fatal(err)
	}
	if cp.Learner.PPO.ValueScale != 10 || len(cp.Learner.PPO.ObsScale) != 4 || cp.Learner.PPO.Lambda != 0.98 ||
		cp.Learner.DP.UsersPerUpdate != 32 || !cp.TrainWholeEpisodes || cp.MaxSteps != 500 || cp.DemoTargetReturn != 475 {
		t.Errorf("cartpole profile %+v", cp)
	}
	cp.Learner.PPO.ObsScale[2] = -1
	cp.Learner.PPO.Hidden[0] = -1
	again, _ := Get("cartpole")
	if again.Learner.PPO.ObsScale[2] != 10 || again.Learner.PPO.Hidden[0] != 16 {
		t.Error("Get shares state between calls")
	}
	d, _ := Get("dosing-1")
	if d.Learner.PPO.MomentReset != policy.ResetPaper || d.Learner.DP.NoiseMultiplier != 0.1 || d.TrainWholeEpisodes {
		t.Errorf("dosing profile %+v", d)
	}
	for _, c := range []struct {
		name string
		p    float64
	}{{"riverswim", 0.6}, {"riverswim-0.9", 0.9}, {"chain", 0}} {
		if p, _ := Get(c.name); p.RiverSwimP != c.p {
			t.Errorf("%s: RiverSwimP %v, want %v", c.name, p.RiverSwimP, c.p)
		}
	}
	for _, name := range []string{"", "CartPole", "nope"} {
		if _, err := Get(name); !errors.Is(err, sims.ErrUnknownEnv) {
			t.Errorf("Get(%q): %v, want ErrUnknownEnv", name, err)
		}
	}
}
