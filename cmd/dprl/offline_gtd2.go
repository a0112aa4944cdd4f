package main

import (
	"math"

	"dprl/internal/progress"
	"dprl/offline/budget"
	"dprl/offline/evaluate"

	"github.com/spf13/cobra"
)

func newOfflineGTD2Cmd(a *app) *cobra.Command {
	var f offlineFlags[evaluate.Config]
	e := &f.cfg
	c := &cobra.Command{
		Use:   "gtd2",
		Short: "Evaluate a target policy on a session log: GPOPE (DP GTD2), DP-LSW, or non-private LSTD",
		RunE:  func(cmd *cobra.Command, _ []string) error { return runOfflineGTD2(a, cmd, &f) },
	}
	fl := f.register(c)
	fl.Name("Curve", "plot")
	fl.StringVar(&e.Data, "data", "", "session log (dprl.sessions.v1), the private dataset")
	fl.StringVar(&e.Target, "target", "", "target policy: uniform, snapshot:FILE, greedy[:FILE], softmax[:FILE]:TEMP, epsilon-greedy[:FILE]:EPS")
	fl.StringVar(&e.Features, "features", "", "features: tabular, fourier:K or raw")
	fl.StringVar((*string)(&e.Method), "method", string(evaluate.GPOPE), "gpope, dp-lsw, lstd or wis-lstd")
	fl.Float64Var(&e.Epsilon, "epsilon", 0, "privacy budget epsilon of this run (gpope, dp-lsw)")
	fl.Float64Var(&e.Delta, "delta", 0, "privacy parameter delta of this run (gpope, dp-lsw)")
	fl.IntVar(&e.Iters, "iters", 0, "gpope: number of noisy gradient steps T")
	fl.Float64Var(&e.StepSize, "step-size", 0.5, "gpope: step size alpha (alpha_0 with --diminishing)")
	fl.BoolVar(&e.Diminishing, "diminishing", false, "gpope: step size alpha_0 / sqrt(t)")
	fl.Float64Var(&e.Clip, "clip", 1, "gpope: L2 clip C of one trajectory's primal-dual gradient")
	fl.Float64Var(&e.Batch, "batch", 1, "gpope: expected trajectories per step (Poisson sampling rate batch/n; the paper uses 1)")
	fl.IntVar(&e.PublicN, "n", 0, "gpope: the public number of trajectories the sampling rate batch/n is computed from (default: the log's record count, which you then vouch is public)")
	fl.Float64Var(&e.Gamma, "gamma", 0.9, "discount factor, 0 <= gamma < 1")
	fl.Float64Var(&e.Ridge, "ridge", 1e-6, "lstd, wis-lstd: ridge added to A (unvisited tabular states make A singular)")
	fl.StringVar(&e.Env, "env", "", "the simulator the data comes from (public knowledge): start distribution, bounds, built-in targets, exact chain MSPBE")
	fl.IntVar(&e.Actions, "actions", 0, "the public number of discrete actions: required for a private run without --env (a record with a larger action is refused); without it a non-private run learns it from the log")
	fl.StringVar(&e.Behavior, "behavior", "", "with --env chain: the behaviour policy of the data, for the exact MSPBE of off-policy data")
	fl.StringVar(&e.EvalData, "eval-data", "", "a public session log on which to compute the empirical MSPBE instead of the private data")
	fl.Uint64Var(&e.Seed, "seed", 0, "seed the noise and sampling (repeatable research runs; recorded in the ledger)")
	fl.BoolVar(&e.NonPrivate, "non-private", false, "allow output NOT covered by any DP guarantee: the lstd and wis-lstd methods, and with gpope or dp-lsw a section of statistics of the private log")
	fl.Float64SliceVar(&e.Low, "low", nil, "fourier and grid box lower bounds (default: the environment's observation box)")
	fl.Float64SliceVar(&e.High, "high", nil, "fourier and grid box upper bounds")
	fl.IntVar(&e.Grid, "lsw-grid", 10, "dp-lsw with non-tabular features: cells per observation component of the public grid")
	fl.Float64Var(&e.RewardLow, "reward-low", math.NaN(), "dp-lsw: public lower reward bound (default for chain 0, mountaincar -1)")
	fl.Float64Var(&e.RewardHigh, "reward-high", math.NaN(), "dp-lsw: public upper reward bound (default for chain 1, mountaincar 0)")
	fl.StringVar(&f.plot, "plot", "", "gpope: write the MSPBE vs iteration curve as PNG to this file (public moments: --env chain or --eval-data; else only with --non-private)")
	fl.Bool("json", false, "print JSON")
	return c
}

func runOfflineGTD2(a *app, cmd *cobra.Command, f *offlineFlags[evaluate.Config]) error {
	fl, ec := cmd.Flags(), f.cfg
	ec.Curve, ec.Seeded = f.plot != "", fl.Changed("seed")
	ec.EpsilonGiven, ec.DeltaGiven, ec.PublicNGiven, ec.ActionsGiven = fl.Changed("epsilon"), fl.Changed("delta"), fl.Changed("n"), fl.Changed("actions")
	prog := a.task("gpope")
	defer prog.Finish()
	ec.Progress = func(t int) { prog.Update(progress.Report{Done: int64(t), Total: int64(ec.Iters), Unit: "steps"}) }
	m, opt, err := evaluate.New(ec)
	if err != nil {
		return fieldUsage("", f.fl, err)
	}
	defer m.Close()
	return runOffline(a, cmd, offlineRun[*evaluate.Result]{budget: &f.budget, private: ec.Private(),
		in: budget.Input{Path: ec.Data, Reader: opt}, m: m, flags: f.fl,
		plot: f.plot, draw: func(out *evaluate.Result, p string) error { out.Plot = p; return out.WritePlot(p, ec.Data) }})
}
