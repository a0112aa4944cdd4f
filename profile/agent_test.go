package profile

import (
	"errors"
	"reflect"
	"testing"

	"dprl/policy"
	"dprl/sims"
)

// TestAgentDefaults: the agent takes a profile's spec and Algorithm 2
// learner, never the correlated-noise defaults of dprl train, and an unknown
// name is Get's error.
func TestAgentDefaults(t *testing.T) {
	for _, name := range sims.Names() {
		p, err := Get(name)
		if err != nil {
			t.Fatal(err)
		}
		spec, cfg, err := AgentDefaults(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(spec, p.Spec) || !reflect.DeepEqual(cfg, p.Learner) {
			t.Errorf("%s: AgentDefaults = %+v %+v, want the profile's Spec and Learner", name, spec, cfg)
		}
		if cfg.DP.Noise != policy.NoiseIndependent {
			t.Errorf("%s: agent learner with %v noise", name, cfg.DP.Noise)
		}
	}
	if _, _, err := AgentDefaults("nope"); !errors.Is(err, sims.ErrUnknownEnv) {
		t.Errorf("unknown simulator: %v, want sims.ErrUnknownEnv", err)
	}
}

func TestRewardBound(t *testing.T) {
	cases := []struct {
		name   string
		lo, hi float64
		ok     bool
	}{
		{"cartpole", 0, 1, true},
		{"acrobot", -1, 0, true},
		{"pendulum", pendulumRewardLow, 0, true},
		{"", 0, 0, false},
		{"nope", 0, 0, false},
	}
	for _, c := range cases {
		lo, hi, ok := RewardBound(c.name)
		if lo != c.lo || hi != c.hi || ok != c.ok {
			t.Errorf("RewardBound(%q) = %v, %v, %v, want %v, %v, %v", c.name, lo, hi, ok, c.lo, c.hi, c.ok)
		}
	}
}
