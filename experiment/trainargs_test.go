package experiment

import (
	"strings"
	"testing"

	"dprl/internal/fielderr"
)

// given returns the set function of the fields named.
func given(fields ...string) func(string) bool {
	return func(f string) bool {
		for _, g := range fields {
			if g == f {
				return true
			}
		}
		return false
	}
}

// braced renders the fields of err as {Field}.
func braced(err error) string {
	if err == nil {
		return ""
	}
	return fielderr.Rename(err, func(f string) string { return "{" + f + "}" }).Error()
}

// TestTrainArgs: each configuration takes the settings given over its
// defaults, and the errors of settings that do not parse, or that a
// configuration would take as "unset", name their fields.
func TestTrainArgs(t *testing.T) {
	a := TrainArgs{Env: "cartpole", Algo: MethodDPPG, Delta: 1e-5, Users: 100, EvalEpisodes: 3, Z: 2, K: 4, Noise: "tree", Epsilons: []float64{1, 2},
		Seed: 7, Seeds: 3, Diag: "d.jsonl", Zs: []float64{1, -1}, Clip: 0, Eta: 0, Alpha: 2, Steps: 10, LR: 0.01, Hidden: []int{8}}

	tr, err := a.Train(given("Z", "K", "Noise", "Seed"))
	if err != nil || *tr.Overrides.Z != 2 || *tr.Overrides.K != 4 || tr.Overrides.Noise == nil || tr.Overrides.Clip != nil || !tr.Seeded || !tr.Diagnostics {
		t.Errorf("Train: %+v, %v", tr, err)
	}
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"unknown algo", func() error { b := a; b.Algo = "x"; _, err := b.Train(given()); return err }(), `{Method} "x": want`},
		{"two epsilons", func() error { _, err := a.Train(given("Epsilons")); return err }(), "{Epsilons} [1 2]: {Method} dppg takes one target epsilon (several: one run each, or {Zs})"},
		{"bad noise", func() error { b := a; b.Noise = "x"; _, err := b.Train(given("Noise")); return err }(), `{Noise} "x": want independent, tree or sqrt`},
		{"seeds with diag", func() error { _, err := a.Runs(given("Seeds")); return err }(), "{Diag} writes the diagnostics of one run: use it without {Seeds}"},
		{"no seeds", func() error { b := a; b.Seeds = 0; _, err := b.Runs(given("Seeds")); return err }(), "{Seeds} 0: must be >= 1"},
		{"sweep", a.SweepErrors(given("Z", "Zs")), "{Z}: not with {Zs} (the sweep sets z; {Diag} writes one run)\n{Zs} -1: every noise multiplier must be finite and > 0"},
		{"loglinear env", func() error { _, err := a.LogLinear(given()); return err }(), "{Method} dppg-loglinear needs {Env} riverswim or riverswim-0.9, got \"cartpole\""},
		{"loglinear zeros", func() error {
			b := a
			b.Env, b.Episodes, b.Regions, b.Epsilons = "riverswim", 10, []string{"l2"}, nil
			_, err := b.LogLinear(given("Clip", "Alpha", "Eta"))
			return err
		}(), "{Clip} 0: the clipping norm must be finite and > 0\n{Clip} and {Alpha}: set one ({Clip} chooses alpha)\n{Eta} 0: the step size must be finite and > 0"},
	}
	for _, c := range cases {
		if got := braced(c.err); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if n, err := a.Runs(given()); n != 1 || err != nil {
		t.Errorf("Runs without Seeds: %d, %v", n, err)
	}
	b := a
	b.Env, b.Episodes, b.Regions, b.Epsilons = "riverswim", 10, []string{"l2"}, nil
	if ll, err := b.LogLinear(given("Seed")); err != nil || ll.P != 0.6 || ll.Seeds != 5 || ll.K != 1 || len(ll.Epsilons) != 2 || ll.Seed != 7 || !ll.Trace {
		t.Errorf("LogLinear defaults: %+v, %v", ll, err)
	}
	if d := a.DPSGD(given("Z", "Seed")); d.Z != 2 || d.Clip != 1 || d.Seed != 7 {
		t.Errorf("DPSGD: %+v", d)
	}
	def, s := DefaultSAC("pendulum"), a.SAC(given("LR"))
	if s.LR != 0.01 || s.Gamma != def.Gamma || s.Hidden[0] != def.Hidden[0] || s.Seeds != 1 || s.Steps != 10 {
		t.Errorf("SAC: %+v", s)
	}
	sacArgs := a
	sacArgs.Algo = MethodSAC
	if got := braced(sacArgs.Inapplicable(given("Z", "Noise", "LR", "Seed", "Env"))); got !=
		"{Z} does not apply to {Algo} sac (only to dppg, ppo, dpsgd-reinforce, dpsgd-dqn)\n{Noise} does not apply to {Algo} sac (only to dppg)" {
		t.Errorf("Inapplicable: %q", got)
	}
	unknown := a
	unknown.Algo = "x"
	if err := unknown.Inapplicable(given("Z")); err != nil {
		t.Errorf("Inapplicable of an unknown algorithm: %v", err)
	}
}
