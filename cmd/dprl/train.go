package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"dprl/cmd/dprl/cliflags"
	"dprl/experiment"
	"dprl/internal/atomicfile"
	"dprl/internal/chart"
	"dprl/internal/flagsrc"
	"dprl/policy"
	"dprl/profile"
	"dprl/sims"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// trainFlags are the flags of dprl train.
type trainFlags struct {
	fl *cliflags.Flags
	// Named as the configuration fields they set (experiment.Train and
	// its Overrides, experiment.DPSGD, experiment.Sweep,
	// experiment.LogLinear, experiment.SAC), whose errors name them.
	Env, Algo, Noise, Horizon, ObsScale, MomentReset             string
	Z, Clip, Delta, LR, EntropyCoef, PolicyShare, Lambda         float64
	ServerLR, Average, ValueScale, Gamma                         float64
	Zs                                                           []float64
	K, Users, EvalEpisodes, Workers, Epochs, StepsPerUser, Seeds int
	Hidden                                                       []int
	// dppg-loglinear
	Epsilons                                       []float64
	Regions                                        []string
	Episodes                                       int
	InitRight, Eta, BaselineLR, Alpha, FisherRidge float64
	// sac
	Steps, LearningStarts, Batch, Replays int
	EpisodeLog                            string
	// flags of no configuration field
	plot, diag                                        string
	seed                                              uint64
	advNorm, anneal, fresh, json, clipAtLR0, fisherEx bool
}

// algoLogLinear names log-linear DPPG on RiverSwim (Rio et al., App. C.2.2).
const algoLogLinear = experiment.LogLinearMethod

func newTrainCmd(a *app) *cobra.Command {
	c, _ := newTrainCommand(a)
	return c
}

// newTrainCommand returns dprl train and the flags it parses into.
func newTrainCommand(a *app) (*cobra.Command, *trainFlags) {
	f := new(trainFlags)
	c := &cobra.Command{
		Use:     "train --env E --algo dppg|ppo|dppg-loglinear|dpsgd-reinforce|dpsgd-dqn|sac [flags]",
		Short:   "Train a policy in process against simulated users (DPPG or the PPO baseline)",
		Long:    helpText("train", "{{defaults by environment}}", profile.TrainDefaultsHelp(80)),
		Example: helpText("train.example"),
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runTrain(cmd, a, f) },
	}
	fl := cliflags.New(c.Flags(), f)
	f.fl = fl
	fl.Name("P", "env") // experiment.LogLinear's RiverSwim p, from --env
	fl.Name("Epsilon", "epsilon")
	fl.Name("Method", "algo")
	fl.StringVar(&f.Env, "env", "cartpole", "environment: "+strings.Join(sims.Names(), ", "))
	fl.Float64Var(&f.Z, "z", 0, "noise multiplier z > 0"+profile.ByEnv("")+"; dpsgd-*: default 1")
	fl.Float64SliceVar(&f.Epsilons, "epsilon", nil, "target per-episode epsilon at --delta: dppg: z is set to the smallest noise multiplier whose per-episode epsilon (analytic Gaussian) is at most this (instead of --z); dppg-loglinear: total epsilons per episode, policy and baseline composed, one configuration each (comma-separated; default 1,5)")
	flagsrc.Alias(fl.FlagSet, "eps", "epsilon", a.stderr)
	fl.Float64Var(&f.Clip, "clip", 0, "clipping norm S > 0 of the joint local update, policy and critic"+profile.ByEnv("Table 3: 0.05")+"; dpsgd-*: default 1; dppg-loglinear: choose each run's alpha so that its first update's trust-region S is this (instead of --alpha; KL needs --fisher-exact)")
	fl.Float64Var(&f.PolicyShare, "policy-share", 0, "share f of the squared clipping norm given to the policy block; the critic gets 1-f"+profile.ByEnv(""))
	fl.StringVar(&f.Algo, "algo", "dppg", "dppg (differentially private), ppo (non-private baseline), dppg-loglinear (RiverSwim, cumulative regret), dpsgd-reinforce or dpsgd-dqn (DP-SGD baselines), sac (non-private Soft Actor-Critic, continuous actions)")
	fl.IntVar(&f.K, "K", 0, "users per update K >= 1"+profile.ByEnv("Table 3: 8")+"; dppg-loglinear: episodes per update, default 1 as in App. C.2.2")
	fl.StringVar(&f.Noise, "noise", "", "noise of the releases: independent (Algorithm 2), tree (binary tree mechanism, DP-FTRL) or sqrt (square-root factorization); the epsilon per segment of z is the same, the epsilon per episode is not"+profile.ByEnv(""))
	fl.StringVar(&f.Horizon, "horizon", "run", "releases over which --noise tree or sqrt correlates the noise before restarting: run (all ceil(users/K) releases) or N >= 1 (dppg only)")
	fl.Float64Var(&f.LR, "lr", 0, "local Adam learning rate > 0"+profile.ByEnv(""))
	fl.Float64Var(&f.ServerLR, "server-lr", 0, "server step size eta of theta <- theta + eta g~, > 0"+profile.ByEnv(""))
	fl.Float64Var(&f.EntropyCoef, "ent-coef", 0, "entropy bonus coefficient >= 0"+profile.ByEnv("Table 3: 0.36"))
	fl.IntSliceVar(&f.Hidden, "hidden", nil, "hidden layer widths of both networks"+profile.ByEnv("Table 3: 64,64"))
	fl.IntVar(&f.Epochs, "epochs", 0, "local epochs E >= 1"+profile.ByEnv("Table 3: 8"))
	fl.IntVar(&f.StepsPerUser, "steps-per-user", 0, "segment length T >= 1: the most steps one simulated user plays"+profile.ByEnv("Table 3: 64"))
	fl.Float64Var(&f.Gamma, "gamma", 0, "discount in [0, 1]"+profile.ByEnv("Table 3: 0.99"))
	fl.Float64Var(&f.Lambda, "gae-lambda", 0, "GAE lambda in [0, 1]"+profile.ByEnv("Table 3: 0.85"))
	fl.StringVar(&f.MomentReset, "moment-reset", "", "local Adam state at each iteration: paper (m = -g~, v = g~^2), second (m = 0, v = g~^2) or zero (fresh, bias-corrected)"+profile.ByEnv(""))
	fl.Float64Var(&f.ValueScale, "value-scale", 0, "public return scale c: the critic predicts V/c"+profile.ByEnv(""))
	fl.StringVar(&f.ObsScale, "obs-scale", "", "public per-component observation scale seen by both networks, comma-separated, or none"+profile.ByEnv(""))
	fl.IntVar(&f.Users, "users", 10000, "number of simulated users, >= 1")
	fl.IntVar(&f.Steps, "steps", experiment.DefaultSAC("").Steps, "sac: environment steps per run, >= 1")
	fl.IntVar(&f.LearningStarts, "learning-starts", experiment.DefaultSAC("").LearningStarts, "sac: first steps with uniformly random actions, before the first update")
	fl.IntVar(&f.Batch, "batch", experiment.DefaultSAC("").Batch, "sac: minibatch size >= 1")
	fl.StringVar(&f.EpisodeLog, "log-episodes", "", "sac: write every training episode of every seed to this new file as a dprl.sessions.v1 log (with the behaviour's log-density of each action): a dataset mixing random, improving and expert episodes for the offline modes")
	fl.IntVar(&f.Replays, "log-replays", 0, "sac, with --log-episodes: also log this many extra episodes of the current policy (sampled actions, no learning) after each training episode once learning has started: a large dataset of every stage of training at little extra time")
	fl.Float64Var(&f.Delta, "delta", 1e-5, "delta of the reported (epsilon, delta), in (0, 1)")
	fl.Float64Var(&f.Average, "average", 0, "release the exponential moving average of the parameters with this decay in [0, 1) instead of the last iterate (post-processing; 0: off)")
	fl.IntVar(&f.EvalEpisodes, "eval-episodes", 20, "evaluation episodes of the final policy, >= 1")
	fl.IntVar(&f.Workers, "workers", 0, "goroutines for the local updates (dppg-loglinear: for the seeds and configurations; default GOMAXPROCS; the result does not depend on it)")
	fl.Float64SliceVar(&f.Zs, "sweep-z", nil, "dppg: train at each of these noise multipliers (comma-separated; --seeds runs each) and report eval return against epsilon; --plot draws it (the paper's Fig. 2)")
	fl.IntVar(&f.Seeds, "seeds", 0, "runs with seeds --seed, --seed+1, ... and their mean and std over seeds (default 1; dppg-loglinear: 5 per configuration)")
	fl.StringVar(&f.diag, "diag", "", "SIMULATION ONLY, not covered by the privacy guarantee: write per-update diagnostics computed from the simulated users' raw data and the exact noise (entropy, value loss, returns, un-noised clipped fractions, signal and noise norms) as JSON Lines to this file, every record labelled so; dppg-loglinear: each seed's released policy (value and per-state logit gaps right - left; post-processing of the releases) at every regret-curve point")
	fl.StringVar(&f.plot, "plot", "", "write the learning curve (return vs users) as PNG to this file")
	fl.BoolVar(&f.advNorm, "adv-norm", false, "standardise each user's advantages (mean 0, std 1) before the local epochs"+profile.ByEnv(""))
	fl.BoolVar(&f.anneal, "anneal", false, "decay the server step size linearly to 0 over the run (public schedule)")
	fl.BoolVar(&f.fresh, "fresh-episodes", false, "every user starts a fresh episode (default: user slot i of a batch continues the episode slot i's previous user left running)")
	fl.IntVar(&f.Episodes, "episodes", 3000, "dppg-loglinear: episodes per run")
	fl.StringSliceVar(&f.Regions, "region", []string{"l2", "kl"}, "dppg-loglinear: trust regions (l2, kl, l2-markov)")
	fl.Float64Var(&f.InitRight, "init-right", 0, "dppg-loglinear: start from the policy with logit gap theta(s, right) - theta(s, left) equal to this in every state (0: uniform, the paper's start; large: near the optimal policy)")
	fl.Float64Var(&f.Alpha, "alpha", policy.DefaultLogLinearConfig().Alpha, "dppg-loglinear: trust region size alpha > 0 (Table 2: 3.5)")
	fl.Float64Var(&f.Eta, "eta", 0, "dppg-loglinear: constant policy step size eta > 0 instead of Table 2's schedule (12, divided by 5 every 50 episodes, floor 0.06)")
	fl.Float64Var(&f.BaselineLR, "baseline-lr", policy.DefaultLogLinearConfig().BaselineLR, "dppg-loglinear: step size >= 0 of the private linear baseline (0: the baseline stays 0 and the returns are the advantages; epsilon still composes its mechanism, an upper bound)")
	fl.Float64Var(&f.FisherRidge, "fisher-ridge", policy.DefaultLogLinearConfig().FisherRidge, "dppg-loglinear, KL region: ridge >= 0 added to the Fisher estimate (Table 2: 1e-3); it bounds how far S can grow as the policy turns deterministic")
	fl.BoolVar(&f.fisherEx, "fisher-exact", false, "dppg-loglinear, KL region: use the Fisher matrix's expectation under the public model instead of the estimate on 25 public episodes (same privacy: S depends on the released policy and the public model only)")
	fl.BoolVar(&f.clipAtLR0, "clip-at-lr0", false, "dppg-loglinear: compute the trust-region clipping norm at eta_0 instead of the current eta")
	fl.Uint64Var(&f.seed, "seed", 0, "seed of every random draw (default: from the OS; printed in the result)")
	fl.BoolVar(&f.json, "json", false, "print the result as JSON")
	registerTrainModes(fl)
	return c, f
}

// Algorithm groups of registerTrainModes.
const (
	ppoFamily = "dppg ppo"
	dpsgdAlgo = "dpsgd-reinforce dpsgd-dqn"
	algoSAC   = experiment.MethodSAC
)

// registerTrainModes records the algorithms that read each of dprl
// train's flags (every algorithm reads --env and --algo; setting a flag the
// algorithm would ignore is a usage error).
func registerTrainModes(fl *cliflags.Flags) {
	fl.Modes(ppoFamily+" "+dpsgdAlgo, "z")
	fl.Modes("dppg "+algoLogLinear, "epsilon")
	fl.Modes(ppoFamily+" "+dpsgdAlgo+" "+algoLogLinear, "clip", "delta")
	fl.Modes(ppoFamily, "policy-share", "server-lr", "ent-coef", "epochs", "steps-per-user", "gae-lambda", "moment-reset", "value-scale", "obs-scale", "users", "average", "adv-norm", "anneal", "fresh-episodes")
	fl.Modes(ppoFamily+" "+algoLogLinear, "K", "workers", "diag")
	fl.Modes("dppg", "noise", "horizon", "sweep-z")
	fl.Modes(ppoFamily+" "+algoSAC, "lr", "hidden", "gamma")
	fl.Modes(algoSAC, "steps", "learning-starts", "batch", "log-episodes", "log-replays")
	fl.Modes(ppoFamily+" "+dpsgdAlgo+" "+algoSAC, "eval-episodes")
	fl.Modes(ppoFamily+" "+algoLogLinear+" "+algoSAC, "seeds", "plot")
	fl.Modes(algoLogLinear, "episodes", "region", "init-right", "alpha", "eta", "baseline-lr", "fisher-ridge", "fisher-exact", "clip-at-lr0")
}

// checkTrainFlagsApply rejects a flag set on the command line that algo
// would silently ignore. An unknown algo is left to trainSpec.
func checkTrainFlagsApply(fl *cliflags.Flags, algo string) error {
	if experiment.CheckMethod(algo) != nil {
		return nil
	}
	if errs := fl.Inapplicable("algo", algo); len(errs) > 0 {
		return usagef("train: %s", strings.Join(errs, "; "))
	}
	return nil
}

// usage returns the usage error of err (nil for none): its messages with
// flags for fields, in the order the flags are defined.
func (f *trainFlags) usage(err error) error {
	if msgs := f.fl.Ordered(err); len(msgs) > 0 {
		return usagef("train: %s", strings.Join(msgs, "; "))
	}
	return nil
}

// ifSet returns v if the flag name was set on the command line, else nil.
func ifSet[T any](fl *pflag.FlagSet, name string, v *T) *T {
	if fl.Changed(name) {
		return v
	}
	return nil
}

// trainSpec builds the configuration of a dppg or ppo run from the flags:
// the environment's defaults with every flag set on the command line over
// them; err joins the errors of flags whose values do not parse
// (experiment.Train.Validate checks the rest).
func trainSpec(cmd *cobra.Command, f *trainFlags) (t experiment.Train, err error) {
	fl := cmd.Flags()
	var errs []error
	parsed := func(err error) bool {
		errs = append(errs, err)
		return err == nil
	}
	t = experiment.Train{Env: f.Env, Method: f.Algo, Delta: f.Delta, Users: f.Users, Workers: f.Workers, EvalEpisodes: f.EvalEpisodes,
		FreshEpisodes: f.fresh, AnnealServerLR: f.anneal, Average: f.Average, Diagnostics: f.diag != "", Seeded: fl.Changed("seed")}
	o := &t.Overrides
	if f.Algo != experiment.MethodDPPG && f.Algo != experiment.MethodPPO {
		errs = append(errs, fmt.Errorf("--algo %w", experiment.CheckMethod(f.Algo)))
		t.Method = experiment.MethodDPPG // to check the other flags
	} else {
		o.Z, o.Clip, o.PolicyShare = ifSet(fl, "z", &f.Z), ifSet(fl, "clip", &f.Clip), ifSet(fl, "policy-share", &f.PolicyShare)
		if fl.Changed("epsilon") && len(f.Epsilons) != 1 {
			errs = append(errs, fmt.Errorf("--epsilon %v: --algo %s takes one target epsilon (several: one run each, or --sweep-z)", f.Epsilons, f.Algo))
		} else if fl.Changed("epsilon") {
			t.Epsilon = &f.Epsilons[0]
		}
	}
	o.K, o.LR, o.ServerLR, o.EntropyCoef = ifSet(fl, "K", &f.K), ifSet(fl, "lr", &f.LR), ifSet(fl, "server-lr", &f.ServerLR), ifSet(fl, "ent-coef", &f.EntropyCoef)
	o.NormalizeAdvantages, o.Epochs, o.Lambda, o.ValueScale = ifSet(fl, "adv-norm", &f.advNorm), ifSet(fl, "epochs", &f.Epochs), ifSet(fl, "gae-lambda", &f.Lambda), ifSet(fl, "value-scale", &f.ValueScale)
	o.StepsPerUser, o.Gamma = ifSet(fl, "steps-per-user", &f.StepsPerUser), ifSet(fl, "gamma", &f.Gamma)
	if fl.Changed("hidden") {
		o.Hidden = f.Hidden
	}
	if n, err := profile.ParseNoise(f.Noise); fl.Changed("noise") && parsed(err) {
		o.Noise = &n
	}
	if h, err := profile.ParseHorizon(f.Horizon); fl.Changed("horizon") && parsed(err) {
		o.Horizon = &h
	}
	if m, err := profile.ParseMomentReset(f.MomentReset); fl.Changed("moment-reset") && parsed(err) {
		o.MomentReset = &m
	}
	if sc, err := profile.ParseObsScale(f.ObsScale, f.Env); fl.Changed("obs-scale") && parsed(err) {
		o.ObsScale = &sc
	}
	return t, errors.Join(errs...)
}

// runTrain runs dprl train: the driver of --algo (experiment.Train's plan,
// once per seed or over --sweep-z; experiment.RunDPSGD;
// experiment.RunLogLinear), then --diag, --plot and the result.
func runTrain(cmd *cobra.Command, a *app, f *trainFlags) error {
	if err := checkTrainFlagsApply(f.fl, f.Algo); err != nil {
		return err
	}
	if _, err := chart.FormatOf(f.plot); f.plot != "" && err != nil {
		return usagef("train: --plot: %v", err)
	}
	if f.Algo == policy.AlgoDPSGDReinforce || f.Algo == policy.AlgoDPSGDDQN {
		return runTrainDPSGD(cmd, a, f)
	} else if f.Algo == algoLogLinear {
		return runTrainLogLinear(cmd, a, f)
	} else if f.Algo == algoSAC {
		return runTrainSAC(cmd, a, f)
	}
	t, perr := trainSpec(cmd, f)
	plan, err := t.Plan()
	if cerr := (*experiment.ConfigError)(nil); errors.As(err, &cerr) { // a combination the learner rejects
		if perr == nil {
			return usageError{cerr.Err}
		}
		err = nil // reported once the flags parse
	}
	if err := f.usage(errors.Join(perr, err)); err != nil {
		return err
	}
	n := 1
	if cmd.Flags().Changed("seeds") {
		switch {
		case f.Seeds < 1:
			return usagef("train: --seeds %d: must be >= 1", f.Seeds)
		case f.Seeds > 1 && f.diag != "":
			return usagef("train: --diag writes the diagnostics of one run: use it without --seeds")
		}
		n = f.Seeds
	}
	seed := seedFlag(cmd, "seed", f.seed)
	if cmd.Flags().Changed("sweep-z") {
		return runTrainSweep(cmd, a, f, plan, seed, n)
	}
	prog := a.task("training")
	runs, err := plan.RunSeeds(cmd.Context(), seed, n, experiment.SeedHooks{Progress: prog, Done: func(r experiment.TrainResult) error {
		a.log.Debug().Uint64("seed", r.Seed).Dur("eval", time.Duration(r.EvalSeconds*float64(time.Second))).Float64("eval_mean", r.EvalMean).Msg("evaluated")
		if f.diag == "" {
			return nil
		} else if err := atomicfile.Write(f.diag, 0o644, func(w io.Writer) error { return experiment.WriteDiagnostics(w, r.Diagnostics) }); err != nil {
			return fmt.Errorf("--diag: %w", err)
		}
		return nil
	}})
	prog.Finish()
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if n > 1 {
		return emitTrain(a, f, experiment.SummarizeSeeds(runs))
	}
	return emitTrain(a, f, runs[0])
}

// runTrainSweep trains plan with every z of --sweep-z over n seeds from
// seed (the same seeds at every z; experiment.TrainPlan.Sweep) and reports
// return against epsilon.
func runTrainSweep(cmd *cobra.Command, a *app, f *trainFlags, plan *experiment.TrainPlan, seed uint64, n int) error {
	var errs []string
	for _, name := range []string{"z", "epsilon", "diag"} {
		if cmd.Flags().Changed(name) {
			errs = append(errs, fmt.Sprintf("--%s: not with --sweep-z (the sweep sets z; --diag writes one run)", name))
		}
	}
	if errs = append(errs, f.fl.Messages(experiment.Sweep{Zs: f.Zs, Seeds: []uint64{0}, Delta: f.Delta}.Validate())...); len(errs) > 0 {
		slices.Sort(errs)
		return usagef("train: %s", strings.Join(errs, "; "))
	}
	seeds := experiment.SeedRange(seed, n)
	prog, total := a.task("training"), len(slices.Compact(slices.Sorted(slices.Values(f.Zs))))*n*f.Users
	res, err := plan.Sweep(cmd.Context(), f.Zs, seeds, experiment.SweepHooks{
		Progress: func(point, run int, eps float64) func(policy.Progress) {
			return experiment.TrainProgress(prog, (point*n+run)*f.Users, total, eps)
		},
		Point: func(pt experiment.SweepPoint) {
			a.log.Info().Float64("z", pt.Z).Float64("epsilon", pt.Epsilon).Float64("epsilon_per_segment", pt.EpsilonPerSegment).Float64("mean", pt.Mean).Float64("std", pt.Std).Msg("sweep point")
		},
	})
	prog.Finish()
	if err := runError(err); err != nil {
		return err
	}
	return emitTrain(a, f, res)
}

// runTrainDPSGD runs the DP-SGD baselines (experiment.RunDPSGD). --z,
// --delta, --clip (default 1) and --eval-episodes apply; the configuration
// fixes episodes and steps.
func runTrainDPSGD(cmd *cobra.Command, a *app, f *trainFlags) error {
	c := experiment.DPSGD{Env: f.Env, Algo: f.Algo, Z: 1, Clip: 1, Delta: f.Delta, EvalEpisodes: f.EvalEpisodes}
	c.Z, c.Clip = *cmp.Or(ifSet(cmd.Flags(), "z", &f.Z), &c.Z), *cmp.Or(ifSet(cmd.Flags(), "clip", &f.Clip), &c.Clip)
	if err := f.usage(c.Validate()); err != nil {
		return err
	}
	c.Seed = seedFlag(cmd, "seed", f.seed)
	res, err := experiment.RunDPSGD(cmd.Context(), c, nil)
	return emit(a, f.json, res, runError(err))
}

// runError is the error of a run: a *experiment.ConfigError (a
// configuration the learner rejects) is a usage error with its own text.
func runError(err error) error {
	if cerr := (*experiment.ConfigError)(nil); errors.As(err, &cerr) {
		return usageError{cerr.Err}
	} else if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return nil
}

// trainOutput is a result of dprl train with a figure.
type trainOutput interface {
	texter
	Plot(path string) error
}

// emitTrain writes --plot and prints res (text or --json).
func emitTrain(a *app, f *trainFlags, res trainOutput) error {
	if f.plot != "" {
		if err := res.Plot(f.plot); err != nil {
			return fmt.Errorf("train: --plot: %w", err)
		}
	}
	return emit(a, f.json, res, nil)
}
