package svt

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"dprl/sims"
)

// TestRolloutsFinalObsRule: expert trajectories follow the session-log
// rule: a terminal trajectory carries no final_obs, one truncated at the
// environment's step limit carries the observation after its last step.
func TestRolloutsFinalObsRule(t *testing.T) {
	var terminal, truncated int
	for _, c := range []struct {
		env       string
		obs, nAct int
	}{{"cartpole", 4, 2}, {"acrobot", 6, 3}} {
		env, _ := sims.New(c.env)
		e, err := NewSmoothedExpert("e3", randomSnapshot(t, c.obs, c.nAct, 5), 0.02)
		if err != nil {
			t.Fatal(err)
		}
		ss, err := Rollouts(env, e, 4, rand.New(rand.NewPCG(9, 9)))
		if err != nil {
			t.Fatal(err)
		}
		for k, s := range ss {
			if s.Expert != "e3" || s.Session != fmt.Sprintf("e3-t%d", k) {
				t.Errorf("%s session %d: id %q expert %q", c.env, k, s.Session, s.Expert)
			}
			switch {
			case s.Terminal && s.FinalObs == nil:
				terminal++
			case !s.Terminal && len(s.Steps) == env.MaxSteps() && len(s.FinalObs) == c.obs:
				truncated++
			default:
				t.Errorf("%s session %d: terminal %v after %d steps, final_obs %v", c.env, k, s.Terminal, len(s.Steps), s.FinalObs)
			}
		}
	}
	if terminal == 0 || truncated == 0 {
		t.Errorf("%d terminal and %d truncated trajectories: the test needs both", terminal, truncated)
	}
}

// TestRolloutsNonFinite: an environment that leaves the finite range fails
// the rollouts with the expert, trajectory and step named.
func TestRolloutsNonFinite(t *testing.T) {
	p := sims.DefaultCartPoleParams()
	p.ForceMag = math.MaxFloat64
	env, err := sims.NewCartPoleWith(p)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewSmoothedExpert("e1", randomSnapshot(t, 4, 2, 1), 0.02)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Rollouts(env, e, 2, rand.New(rand.NewPCG(1, 1)))
	var nf *sims.NonFiniteError
	if !errors.As(err, &nf) || !strings.Contains(err.Error(), "expert e1 trajectory 0: step 0: the environment left the finite range") {
		t.Errorf("error %v", err)
	}
}
