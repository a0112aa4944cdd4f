package main

import (
	"github.com/spf13/cobra"

	"dprl/internal/chart"
	"dprl/internal/progress"
	"dprl/offline/qlearn"
)

func newOfflineLearnCmd(a *app) *cobra.Command {
	f := &offlineFlags[qlearn.LearnConfig]{cfg: qlearn.DefaultLearnConfig()}
	c := &f.cfg
	cmd := &cobra.Command{
		Use:   "learn --algo cql|bcq --env ENV (--data LOG | --stable S --unstable U) --epsilon E --delta D",
		Short: "Learn a discrete-action policy from a session log with expert-level DP-SGD (CQL or BCQ)",
		RunE:  func(cmd *cobra.Command, _ []string) error { return runOfflineLearn(a, cmd, f) },
	}
	fl := f.register(cmd)
	fl.StringVar((*string)(&c.Algo), "algo", string(c.Algo), "learner: cql or bcq")
	fl.StringVar(&c.Env, "env", c.Env, "the public simulator (discrete actions) the policy is evaluated on")
	fl.StringVar(&c.Data, "data", "", "the private dprl.sessions.v1 log (DP-SGD alone, or --non-private)")
	fl.StringVar(&c.Stable, "stable", "", "the stable release of dprl offline svt (selective DP-SGD)")
	fl.StringVar(&c.Unstable, "unstable", "", "the unstable set of dprl offline svt (selective DP-SGD)")
	fl.StringVar((*string)(&c.Unit), "unit", string(c.Unit), "protected unit: expert or trajectory (--data only)")
	fl.IntVar(&c.Experts, "experts", 0, "the public number of experts m (unit expert): each expert is sampled with probability batch/m")
	fl.Float64Var(&c.Epsilon, "epsilon", 0, "this run's epsilon per unit (after an SVT release: eps2)")
	fl.Float64Var(&c.Delta, "delta", c.Delta, "this run's delta (after an SVT release: delta2)")
	fl.Float64Var(&c.Sigma, "sigma", 0, "noise multiplier (default: calibrated to --epsilon)")
	fl.Float64Var(&c.P, "p", c.P, "probability of a DP step on the unstable set (selective DP-SGD)")
	fl.IntVar(&c.Steps, "steps", c.Steps, "gradient steps N")
	fl.Float64Var(&c.Clip, "clip", c.Clip, "per-transition clipping norm C")
	fl.IntVar(&c.Batch, "batch", c.Batch, "batch size b: a plain step's rows, a DP step's expected rows and fixed denominator")
	fl.Float64Var(&c.Adam.LR, "lr", c.Adam.LR, "the networks' local Adam learning rate eta")
	fl.IntSliceVar(&c.Hidden, "hidden", c.Hidden, "hidden widths of the Q-network (and of BCQ's imitation network)")
	fl.Float64Var(&c.Gamma, "gamma", c.Gamma, "discount")
	fl.Float64Var(&c.Alpha, "alpha", c.Alpha, "CQL's regulariser weight")
	fl.Float64Var(&c.Threshold, "threshold", c.Threshold, "BCQ's action filter tau")
	fl.BoolVar(&c.NonPrivate, "non-private", false, "train on --data without clipping or noise; not charged, NOT private")
	fl.IntVar(&c.EvalEpisodes, "eval-episodes", c.EvalEpisodes, "simulator episodes of each evaluation")
	fl.IntVar(&c.EvalEvery, "eval-every", c.EvalEvery, "evaluate every this many steps for the curve (0: at the end only)")
	fl.Uint64Var(&c.Seed, "seed", 0, "seed every generator (a repeatable simulation, recorded as seeded in the ledger; default: the secure generator)")
	fl.StringVar(&c.Out, "out", "", "write the policy to this new file (dprl.qlearn.v2 JSON, recording its provenance: private or not, epsilon, delta, unit, ledger entry)")
	fl.Bool("json", false, "print JSON")
	fl.StringVar(&f.plot, "plot", "", "draw the evaluation return against steps (PNG or SVG by extension)")
	return cmd
}

func runOfflineLearn(a *app, cmd *cobra.Command, f *offlineFlags[qlearn.LearnConfig]) error {
	c := f.cfg
	if err := c.Check(f.fl.FieldChanged); err != nil {
		return usagef("offline learn: %w", f.fl.Rename(err))
	}
	c.Seeded = f.fl.Changed("seed")
	if _, err := chart.FormatOf(f.plot); f.plot != "" && err != nil {
		return usagef("offline learn: --plot: %v", err)
	} else if f.plot != "" && c.EvalEvery == 0 {
		return usagef("offline learn: --plot needs --eval-every > 0")
	}
	prog := progress.NewPhases(func(string) *progress.Task { return a.task("offline learn " + string(c.Algo)) }, map[string]string{"": "steps"})
	c.Progress = func(done, total int) { prog.Update("", done, total) }
	m, in, err := qlearn.NewLearn(c)
	if err != nil {
		return fieldUsage("offline learn", f.fl, err)
	}
	// A selective run reads a derived file: the ledger must know its
	// source.
	return runOffline(a, cmd, offlineRun[*qlearn.Result]{name: "offline learn", flags: f.fl, budget: &f.budget,
		private: !c.NonPrivate, derived: c.Unstable != "", in: in, m: m, prog: prog,
		plot: f.plot, draw: (*qlearn.Result).PlotCurve})
}
