package vw

import (
	"context"
	"os"
	"testing"
	"time"

	"dprl/experiment/bandit"
	"dprl/sims"
)

// vwBinary returns the VW binary of the end-to-end tests (DPRL_VW) or
// skips the test: CI has no VW.
func vwBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("DPRL_VW")
	if bin == "" {
		t.Skip("needs a Vowpal Wabbit binary: set DPRL_VW=/path/to/vw")
	}
	return bin
}

// TestRunSeedVW runs SquareCB on a short stream against a real VW daemon:
// every reply parses as a PMF, the values are expected clicks between the
// uniform item's and the oracle's, the run is deterministic given the
// seed, and VW learns (its final model beats a uniformly random item on
// the held-out users).
func TestRunSeedVW(t *testing.T) {
	bin := vwBinary(t)
	env, err := sims.NewBandit(sims.DefaultBanditConfig())
	if err != nil {
		t.Fatal(err)
	}
	ev, err := bandit.HeldOutEvaluator(env, 1000)
	if err != nil {
		t.Fatal(err)
	}
	l := Learner{Args: []string{"--squarecb", "-q", "UA"}}
	r1, err := RunSeed(context.Background(), bin, l, env, 3000, 7, ev)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := RunSeed(context.Background(), bin, l, env, 3000, 7, ev)
	if err != nil {
		t.Fatal(err)
	}
	if r1.OnlineClick != r2.OnlineClick || r1.HeldOut != r2.HeldOut {
		t.Errorf("not deterministic: %+v vs %+v", r1, r2)
	}
	uni := bandit.ReferenceBaselines(env, 20000).Uniform
	if !(r1.HeldOut > uni+0.1 && r1.HeldOut <= ev.Oracle() && r1.HeldOutGreedy <= ev.Oracle()) {
		t.Errorf("held-out %.4f (greedy %.4f), want above uniform %.4f + 0.1 and at most the oracle %.4f", r1.HeldOut, r1.HeldOutGreedy, uni, ev.Oracle())
	}
	if !(r1.Regret > 0 && r1.RegretUsers[len(r1.RegretUsers)-1] == 3000) {
		t.Errorf("regret %v after %v users", r1.Regret, r1.RegretUsers)
	}
	t.Logf("online %.4f, regret %.1f, held-out %.4f (greedy %.4f), %.0f users/s", r1.OnlineClick, r1.Regret, r1.HeldOut, r1.HeldOutGreedy, r1.UsersPerSec)
}

// TestServeVW compares the agent's act path with VW's daemon briefly:
// both sides answer requests.
func TestServeVW(t *testing.T) {
	bin := vwBinary(t)
	s, err := Serve(context.Background(), ServeConfig{Bin: bin, Learner: DefaultLearners()[0], Duration: 400 * time.Millisecond, Rounds: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []ServeSide{s.Agent, s.VW} {
		if !(x.Requests > 0 && x.RPS > 0 && x.DecideP99Ms > 0 && x.FeedbackP99Ms > 0) {
			t.Errorf("%+v", x)
		}
	}
	t.Logf("%+v", s)
}
