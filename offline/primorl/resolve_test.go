package primorl

import (
	"math"
	"strings"
	"testing"

	"dprl/internal/fielderr"
)

// TestResolve: the clip mode and uncertainty parse by name, the paper's
// per-task settings fill what was not given, and settings that do not
// apply are refused naming their fields.
func TestResolve(t *testing.T) {
	given := func(fields ...string) func(string) bool {
		return func(f string) bool { return strings.Contains(" "+strings.Join(fields, " ")+" ", " "+f+" ") }
	}
	ok := Args{ClipMode: "flat", Uncertainty: "ma"}
	c := DefaultConfig()
	c.Env = "cartpole-balance"
	r, err := c.Resolve(ok, given())
	if err != nil || r.ClipMode != ClipFlat || r.Uncertainty != MA || r.Env != "cartpole-balance" {
		t.Fatalf("Resolve: %+v, %v", r, err)
	}
	if want := c.ForEnv(c.Env, nil); r.Rounds != want.Rounds || r.Lambda != want.Lambda {
		t.Errorf("per-task settings: rounds %d lambda %v, want %d %v", r.Rounds, r.Lambda, want.Rounds, want.Lambda)
	}
	// Pendulum branches half its rollouts; MOPO keeps its published
	// rollouts unless --branch is given.
	pend, pmopo := DefaultConfig(), DefaultConfig()
	pmopo.MOPO = true
	if r, err := pend.Resolve(ok, given()); err != nil || r.Branch != 0.5 {
		t.Errorf("pendulum: branch %v, %v", r.Branch, err)
	}
	if r, err := pmopo.Resolve(ok, given()); err != nil || r.Branch != 0 {
		t.Errorf("mopo: branch %v, %v", r.Branch, err)
	}
	// Pendulum and Balance train SAC 60,000 steps in the model, Swing-up
	// 30,000 unless --sac-steps is given.
	if r, err := pend.Resolve(ok, given()); err != nil || r.SACSteps != 60000 {
		t.Errorf("pendulum: %d SAC steps, %v", r.SACSteps, err)
	}
	if r.SACSteps != 60000 || r.Branch != 0.5 {
		t.Errorf("cartpole-balance: %d SAC steps, branch %v", r.SACSteps, r.Branch)
	}
	// Balance's model: 100 trajectories a round for 500 rounds, server
	// step 2; Pendulum the paper's 30, 1,000 and 1, and a given value is
	// kept.
	if r.Batch != 100 || r.Rounds != 500 || r.ServerLR != 2 {
		t.Errorf("cartpole-balance: batch %v, rounds %d, server lr %v", r.Batch, r.Rounds, r.ServerLR)
	}
	if r, err := pend.Resolve(ok, given()); err != nil || r.Batch != 30 || r.Rounds != 1000 || r.ServerLR != 1 {
		t.Errorf("pendulum: batch %v, rounds %d, server lr %v, %v", r.Batch, r.Rounds, r.ServerLR, err)
	}
	cm := c
	cm.Batch, cm.Rounds, cm.ServerLR = 30, 1000, 1
	if r, err := cm.Resolve(ok, given("Batch", "Rounds", "ServerLR")); err != nil || r.Batch != 30 || r.Rounds != 1000 || r.ServerLR != 1 {
		t.Errorf("cartpole-balance --batch 30 --rounds 1000 --server-lr 1: %+v, %v", r, err)
	}
	sw := DefaultConfig()
	sw.Env = "cartpole-swingup"
	if r, err := sw.Resolve(ok, given()); err != nil || r.SACSteps != 30000 || r.Branch != 0 || r.PublicReward || r.Select != 0 || !math.IsNaN(r.TargetEntropy) {
		t.Errorf("cartpole-swingup: %+v, %v", r, err)
	}
	cp := c
	cp.SACSteps = 100000
	if r, err := cp.Resolve(ok, given("SACSteps")); err != nil || r.SACSteps != 100000 {
		t.Errorf("cartpole-balance --sac-steps 100000: %d, %v", r.SACSteps, err)
	}
	// Balance's policy phase: the public reward, the paper's entropy
	// target and the best rated checkpoint, unless given; Pendulum and
	// MOPO keep the last policy, SAC's usual target and the model's reward.
	if r.Select != 10 || !r.PublicReward || r.TargetEntropy != -3 || r.Policies != 2 {
		t.Errorf("cartpole-balance: select %d, public reward %v, target entropy %v, policies %d", r.Select, r.PublicReward, r.TargetEntropy, r.Policies)
	}
	cp = c
	cp.Select, cp.PublicReward, cp.TargetEntropy = 0, false, -1
	if r, err := cp.Resolve(ok, given("Select", "PublicReward", "TargetEntropy")); err != nil || r.Select != 0 || r.PublicReward || r.TargetEntropy != -1 || r.Policies != 1 {
		t.Errorf("cartpole-balance --select 0 --public-reward=false --target-entropy -1: %+v, %v", r, err)
	}
	bm := c
	bm.MOPO = true
	for _, x := range []Config{pend, bm} {
		if r, err := x.Resolve(ok, given()); err != nil || r.Select != 0 || r.PublicReward || !math.IsNaN(r.TargetEntropy) || r.Policies != 1 {
			t.Errorf("%s mopo %v: select %d, public reward %v, target entropy %v, %v", x.Env, x.MOPO, r.Select, r.PublicReward, r.TargetEntropy, err)
		}
	}
	// The model's predictions are mirrored by default, MOPO's not unless
	// --mirror is given.
	if r, err := pend.Resolve(ok, given()); err != nil || !r.Mirror {
		t.Errorf("pendulum: mirror %v, %v", r.Mirror, err)
	}
	if r, err := pmopo.Resolve(ok, given()); err != nil || r.Mirror {
		t.Errorf("mopo: mirror %v, %v", r.Mirror, err)
	}
	if r, err := pmopo.Resolve(ok, given("Mirror")); err != nil || !r.Mirror {
		t.Errorf("mopo --mirror: mirror %v, %v", r.Mirror, err)
	}
	pmopo.Branch = 0.3
	if r, err := pmopo.Resolve(ok, given("Branch")); err != nil || r.Branch != 0.3 {
		t.Errorf("mopo --branch 0.3: branch %v, %v", r.Branch, err)
	}
	np, mopo := c, c
	np.NonPrivate, mopo.MOPO = true, true
	cases := []struct {
		name string
		c    Config
		a    Args
		set  []string
		want string
	}{
		{"clip mode", c, Args{ClipMode: "x", Uncertainty: "ma"}, nil, `{ClipMode} "x": want per-layer or flat`},
		{"uncertainty", c, Args{ClipMode: "flat", Uncertainty: "x"}, nil, `{Uncertainty} "x": want mpd or ma`},
		{"non-private epsilon", np, ok, []string{"Epsilon"}, "{NonPrivate} and {MOPO} train without noise: {Epsilon} and {Delta} do not apply"},
		{"mopo delta", mopo, ok, []string{"Delta"}, "{NonPrivate} and {MOPO}"},
		{"mopo settings", c, ok, []string{"MOPOFraction"}, "{Plain} and {MOPOFraction} apply only with {MOPO}"},
		{"model file epsilon", c, ok, []string{"ModelFile", "Epsilon"}, "{ModelFile} holds a trained model and its guarantee: {Epsilon} does not apply"},
		{"model file rounds", c, ok, []string{"ModelFile", "Rounds"}, "{ModelFile} holds a trained model and its guarantee: {Rounds} does not apply"},
	}
	for _, tc := range cases {
		_, err := tc.c.Resolve(tc.a, given(tc.set...))
		if err == nil || !strings.HasPrefix(fielderr.Rename(err, func(f string) string { return "{" + f + "}" }).Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
