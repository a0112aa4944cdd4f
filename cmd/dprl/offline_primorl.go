package main

import (
	"github.com/spf13/cobra"

	"dprl/internal/chart"
	"dprl/internal/progress"
	"dprl/offline/budget"
	"dprl/offline/primorl"
)

// primorlFlags are the flags of "dprl offline primorl".
type primorlFlags struct {
	offlineFlags[primorl.Config]
	args primorl.Args
}

func newOfflinePriMORLCmd(a *app) *cobra.Command {
	f := &primorlFlags{offlineFlags: offlineFlags[primorl.Config]{cfg: primorl.DefaultConfig()}}
	c := &f.cfg
	cmd := &cobra.Command{
		Use:   "primorl --data LOG --env pendulum --epsilon E",
		Short: "Learn a policy from a session log with a trajectory-level DP dynamics model (PriMORL)",
		RunE:  func(cmd *cobra.Command, _ []string) error { return runOfflinePriMORL(a, cmd, f) },
	}
	fl := f.register(cmd, &f.args)
	fl.StringVar(&c.Data, "data", "", "the dprl.sessions.v1 log (continuous actions)")
	fl.StringVar(&c.Out, "out", "", "write the released policy to this new file (a SAC actor snapshot: versioned, CRC-32C checked)")
	fl.StringVar(&c.Env, "env", c.Env, "the public simulator: pendulum, cartpole-balance or cartpole-swingup")
	fl.Float64Var(&c.Epsilon, "epsilon", c.Epsilon, "target epsilon per trajectory")
	fl.Float64Var(&c.Delta, "delta", c.Delta, "delta of the guarantee")
	fl.BoolVar(&c.NonPrivate, "non-private", false, "the no-privacy ablation: clipped, no noise, not charged, NOT private")
	fl.StringVar(&c.PublicData, "public-data", "", "a log you declare public (never the private one): stop the model's training early when its error on it has not improved for --patience checks every --check-every rounds (all --rounds are still charged)")
	fl.IntVar(&c.CheckEvery, "check-every", c.CheckEvery, "--public-data: rounds between checks")
	fl.IntVar(&c.Patience, "patience", c.Patience, "--public-data: checks without improvement before stopping")
	fl.BoolVar(&c.MOPO, "mopo", false, "the MOPO baseline: the ensemble trained on all transitions (Adam, no clipping, no noise), SAC's rollouts from logged states with --mopo-fraction of each batch logged transitions; not charged, NOT private")
	fl.IntVar(&c.Plain.Epochs, "mopo-epochs", c.Plain.Epochs, "--mopo: passes over the log's transitions (Adam, batch 256, lr 1e-3)")
	fl.Float64Var(&c.MOPOFraction, "mopo-fraction", c.MOPOFraction, "--mopo: share of logged transitions in each SAC batch")
	fl.IntVar(&c.PublicN, "n", 0, "the public number of trajectories (default: the log's record count)")
	fl.Float64Var(&c.Batch, "batch", c.Batch, "expected trajectories per round (q = batch/n)")
	fl.IntVar(&c.Rounds, "rounds", c.Rounds, "rounds T, fixed before the run")
	fl.Float64Var(&c.Clip, "clip", c.Clip, "clipping norm C of a trajectory's ensemble change")
	fl.StringVar(&f.args.ClipMode, "clip-mode", "per-layer", "EnsembleClip: per-layer (C/sqrt(N L) per layer) or flat (C/sqrt(N) per model)")
	fl.IntVar(&c.LocalEpochs, "local-epochs", c.LocalEpochs, "local epochs E per sampled trajectory")
	fl.IntVar(&c.MiniBatch, "minibatch", c.MiniBatch, "local minibatch size B")
	fl.Float64Var(&c.LR, "model-lr", c.LR, "the models' local gradient-descent step size")
	fl.IntVar(&c.Model.Ensemble, "ensemble", c.Model.Ensemble, "models in the ensemble N")
	fl.IntSliceVar(&c.Model.Hidden, "model-hidden", c.Model.Hidden, "hidden widths of each model (Swish)")
	fl.Float64Var(&c.Model.WeightDecay, "weight-decay", c.Model.WeightDecay, "L2 coefficient on the models' weights")
	fl.StringVar(&f.args.Uncertainty, "uncertainty", "mpd", "penalty's estimator: mpd (max mean disagreement) or ma (max covariance norm)")
	fl.Float64Var(&c.Lambda, "lambda", c.Lambda, "penalty coefficient of the pessimistic reward r - lambda u")
	fl.IntVar(&c.Horizon, "horizon", c.Horizon, "model rollout length h")
	fl.IntVar(&c.SACSteps, "sac-steps", c.SACSteps, "SAC steps in the model")
	fl.IntSliceVar(&c.SACHidden, "sac-hidden", c.SACHidden, "SAC's hidden widths")
	fl.IntVar(&c.EvalEpisodes, "eval-episodes", c.EvalEpisodes, "simulator episodes of the policy's evaluation")
	fl.Uint64Var(&c.Seed, "seed", 0, "seed every generator (a repeatable simulation, recorded as seeded in the ledger; default: the secure generator)")
	fl.Bool("json", false, "print JSON")
	fl.StringVar(&f.plot, "plot", "", "draw the policy's return on the simulator during its training in the model (PNG or SVG by extension)")
	return cmd
}

func runOfflinePriMORL(a *app, cmd *cobra.Command, f *primorlFlags) error {
	fl := f.fl
	// The paper's per-task settings, where the user did not set them.
	c, err := f.cfg.Resolve(f.args, fl.FieldChanged)
	if err != nil {
		return usagef("offline primorl: %w", fl.Rename(err))
	}
	c.Seeded = fl.Changed("seed")
	units := map[string]string{"model": "rounds", "policy": "steps"}
	if c.MOPO {
		units["model"] = "minibatches"
	}
	prog := progress.NewPhases(func(phase string) *progress.Task { return a.task("primorl " + phase) }, units)
	c.Progress = prog.Update
	if _, err := chart.FormatOf(f.plot); f.plot != "" && err != nil {
		return usagef("offline primorl: --plot: %v", err)
	}
	m, opt, err := primorl.New(c)
	if err != nil {
		return fieldUsage("offline primorl", fl, err)
	}
	return runOffline(a, cmd, offlineRun[*primorl.Result]{name: "offline primorl", flags: fl, budget: &f.budget,
		private: !c.NonPrivate && !c.MOPO, in: budget.Input{Path: c.Data, Reader: opt}, m: m, prog: prog,
		plot: f.plot, draw: (*primorl.Result).PlotCurve})
}
