package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"dprl/experiment"
	"dprl/internal/atomicfile"
	"dprl/internal/chart"
	"dprl/internal/flagsrc"
	"dprl/internal/flagtable"
	"dprl/policy"
	"dprl/profile"
	"dprl/sims"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// trainFlags are the flags of dprl train.
type trainFlags struct {
	env, algo, noise, horizon, obsScale, momentReset, plot, diag string
	z, clip, delta, lr, ent, share, lambda, serverLR             float64
	average, valueScale                                          float64
	sweepZ                                                       []float64
	k, users, evalEpisodes, workers, epochs, stepsPerUser        int
	gamma                                                        float64
	seed                                                         uint64
	hidden                                                       []int
	advNorm, anneal, fresh, json                                 bool
	// dppg-loglinear
	epsilons                             []float64
	regions                              []string
	episodes, seeds                      int
	clipAtLR0, fisherEx                  bool
	initRight, eta, baseLR, alpha, ridge float64
	// sac
	steps, learningStarts, batch int
	logEpisodes                  string
	logReplays                   int
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
		Use:   "train --env E --algo dppg|ppo|dppg-loglinear|dpsgd-reinforce|dpsgd-dqn|sac [flags]",
		Short: "Train a policy in process against simulated users (DPPG or the PPO baseline)",
		Long: `Runs DPPG (Rio et al., Algorithm 2) in process: each simulated user runs the
current policy for at most T steps (--steps-per-user; slot i of a batch
continues the episode slot i's previous user left running; --fresh-episodes
starts each user on a new one), computes its PPO local update clipped to norm S, and every K users the
average is released with Gaussian noise N(0, (zS/K)^2 I). --algo ppo is the
non-private baseline; dppg-loglinear and dpsgd-* are described with their flags.
--algo sac is non-private Soft Actor-Critic for continuous actions (--env pendulum,
dosing-*): --steps environment steps, the first --learning-starts with random
actions, one update of --batch transitions per step after them; it prints no
epsilon, and says so.

Privacy. The unit is the episode: one spans up to m = ceil(L/T) users (L the
environment's public step limit) in consecutive releases, so its epsilon is the
m-fold composition with independent noise, or the Gaussian mechanism of
multiplier z/rho with --noise tree|sqrt (rho from the noise's encoder matrix; the
derivation is in docs/privacy.md, section 4). The per-episode epsilon (exact,
analytic Gaussian) is the headline, the per-segment epsilon (one user) is printed
beside it, labelled. --epsilon E sets z to the smallest multiplier whose
per-episode epsilon at --delta is at most E.

--noise tree|sqrt correlates the noise across releases (the binary tree of
DP-FTRL, or the square-root factorization of the prefix-sum matrix) so that the
parameters carry a bounded amount of noise; --horizon N restarts the correlation
every N releases. --seeds N repeats the run for seeds --seed, --seed+1, ...
and reports mean and std; --sweep-z Z1,Z2,... reports eval return against
epsilon. The final policy is evaluated on --eval-episodes episodes with sampled
actions. Progress goes to stderr, the result to stdout (text or --json), --plot
writes the figure.

Defaults depend on --env: each environment's profile (a flag overrides it; the
measurements and the flags that restore the paper's Table 3 are in
policy/REPRODUCE.md). The first line holds for the environments not listed:
` + profile.TrainDefaultsHelp(80) + `

The noise comes from a seeded generator: this is a simulation, not a production
release. --diag writes statistics of the simulated users' raw data and the exact
noise: simulation only, not covered by any epsilon printed (each record says so).`,
		Example: `  dprl train --env cartpole --algo dppg
  dprl train --env cartpole --algo dppg --z 3 --seed 7 --json
  dprl train --env cartpole --algo dppg --epsilon 2 --delta 1e-6
  dprl train --env cartpole --algo dppg --seed 1 --seeds 30 --json
  dprl train --env pendulum --algo sac --hidden 64,64 --seed 1 --plot sac.png
  dprl train --env cartpole --sweep-z 0.5,1,2,4 --seed 1 --seeds 5 --plot eps.png
  dprl train --env acrobot --algo ppo --users 4000 --plot curve.png`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTrain(cmd, a, f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.env, "env", "cartpole", "environment: "+strings.Join(sims.Names(), ", "))
	fl.StringVar(&f.algo, "algo", "dppg", "dppg (differentially private), ppo (non-private baseline), dppg-loglinear (RiverSwim, cumulative regret), dpsgd-reinforce or dpsgd-dqn (DP-SGD baselines), sac (non-private Soft Actor-Critic, continuous actions)")
	fl.IntVar(&f.steps, "steps", experiment.DefaultSAC("").Steps, "sac: environment steps per run, >= 1")
	fl.IntVar(&f.learningStarts, "learning-starts", experiment.DefaultSAC("").LearningStarts, "sac: first steps with uniformly random actions, before the first update")
	fl.IntVar(&f.batch, "batch", experiment.DefaultSAC("").Batch, "sac: minibatch size >= 1")
	fl.IntVar(&f.logReplays, "log-replays", 0, "sac, with --log-episodes: also log this many extra episodes of the current policy (sampled actions, no learning) after each training episode once learning has started: a large dataset of every stage of training at little extra time")
	fl.StringVar(&f.logEpisodes, "log-episodes", "", "sac: write every training episode of every seed to this new file as a dprl.sessions.v1 log (with the behaviour's log-density of each action): a dataset mixing random, improving and expert episodes for the offline modes")
	fl.Float64Var(&f.z, "z", 0, "noise multiplier z > 0"+profile.ByEnv("")+"; dpsgd-*: default 1")
	fl.Float64SliceVar(&f.epsilons, "epsilon", nil, "target per-episode epsilon at --delta: dppg: z is set to the smallest noise multiplier whose per-episode epsilon (analytic Gaussian) is at most this (instead of --z); dppg-loglinear: total epsilons per episode, policy and baseline composed, one configuration each (comma-separated; default 1,5)")
	flagsrc.Alias(fl, "eps", "epsilon", a.stderr)
	fl.Float64SliceVar(&f.sweepZ, "sweep-z", nil, "dppg: train at each of these noise multipliers (comma-separated; --seeds runs each) and report eval return against epsilon; --plot draws it (the paper's Fig. 2)")
	fl.IntVar(&f.k, "K", 0, "users per update K >= 1"+profile.ByEnv("Table 3: 8")+"; dppg-loglinear: episodes per update, default 1 as in App. C.2.2")
	fl.Float64Var(&f.clip, "clip", 0, "clipping norm S > 0 of the joint local update, policy and critic"+profile.ByEnv("Table 3: 0.05")+"; dpsgd-*: default 1; dppg-loglinear: choose each run's alpha so that its first update's trust-region S is this (instead of --alpha; KL needs --fisher-exact)")
	fl.IntVar(&f.users, "users", 10000, "number of simulated users, >= 1")
	fl.Float64Var(&f.delta, "delta", 1e-5, "delta of the reported (epsilon, delta), in (0, 1)")
	fl.Uint64Var(&f.seed, "seed", 0, "seed of every random draw (default: from the OS; printed in the result)")
	fl.IntVar(&f.evalEpisodes, "eval-episodes", 20, "evaluation episodes of the final policy, >= 1")
	fl.IntVar(&f.workers, "workers", 0, "goroutines for the local updates (dppg-loglinear: for the seeds and configurations; default GOMAXPROCS; the result does not depend on it)")
	fl.Float64Var(&f.lr, "lr", 0, "local Adam learning rate > 0"+profile.ByEnv(""))
	fl.Float64Var(&f.ent, "ent-coef", 0, "entropy bonus coefficient >= 0"+profile.ByEnv("Table 3: 0.36"))
	fl.IntSliceVar(&f.hidden, "hidden", nil, "hidden layer widths of both networks"+profile.ByEnv("Table 3: 64,64"))
	fl.BoolVar(&f.advNorm, "adv-norm", false, "standardise each user's advantages (mean 0, std 1) before the local epochs"+profile.ByEnv(""))
	fl.Float64Var(&f.share, "policy-share", 0, "share f of the squared clipping norm given to the policy block; the critic gets 1-f"+profile.ByEnv(""))
	fl.IntVar(&f.epochs, "epochs", 0, "local epochs E >= 1"+profile.ByEnv("Table 3: 8"))
	fl.IntVar(&f.stepsPerUser, "steps-per-user", 0, "segment length T >= 1: the most steps one simulated user plays"+profile.ByEnv("Table 3: 64"))
	fl.Float64Var(&f.gamma, "gamma", 0, "discount in [0, 1]"+profile.ByEnv("Table 3: 0.99"))
	fl.Float64Var(&f.lambda, "gae-lambda", 0, "GAE lambda in [0, 1]"+profile.ByEnv("Table 3: 0.85"))
	fl.Float64Var(&f.valueScale, "value-scale", 0, "public return scale c: the critic predicts V/c"+profile.ByEnv(""))
	fl.StringVar(&f.momentReset, "moment-reset", "", "local Adam state at each iteration: paper (m = -g~, v = g~^2), second (m = 0, v = g~^2) or zero (fresh, bias-corrected)"+profile.ByEnv(""))
	fl.StringVar(&f.obsScale, "obs-scale", "", "public per-component observation scale seen by both networks, comma-separated, or none"+profile.ByEnv(""))
	fl.Float64Var(&f.serverLR, "server-lr", 0, "server step size eta of theta <- theta + eta g~, > 0"+profile.ByEnv(""))
	fl.StringVar(&f.noise, "noise", "", "noise of the releases: independent (Algorithm 2), tree (binary tree mechanism, DP-FTRL) or sqrt (square-root factorization); the epsilon per segment of z is the same, the epsilon per episode is not"+profile.ByEnv(""))
	fl.StringVar(&f.horizon, "horizon", "run", "releases over which --noise tree or sqrt correlates the noise before restarting: run (all ceil(users/K) releases) or N >= 1 (dppg only)")
	fl.BoolVar(&f.anneal, "anneal", false, "decay the server step size linearly to 0 over the run (public schedule)")
	fl.Float64Var(&f.average, "average", 0, "release the exponential moving average of the parameters with this decay in [0, 1) instead of the last iterate (post-processing; 0: off)")
	fl.BoolVar(&f.fresh, "fresh-episodes", false, "every user starts a fresh episode (default: user slot i of a batch continues the episode slot i's previous user left running)")
	fl.BoolVar(&f.json, "json", false, "print the result as JSON")
	fl.StringVar(&f.plot, "plot", "", "write the learning curve (return vs users) as PNG to this file")
	fl.StringSliceVar(&f.regions, "region", []string{"l2", "kl"}, "dppg-loglinear: trust regions (l2, kl, l2-markov)")
	fl.IntVar(&f.episodes, "episodes", 3000, "dppg-loglinear: episodes per run")
	fl.IntVar(&f.seeds, "seeds", 0, "runs with seeds --seed, --seed+1, ... and their mean and std over seeds (default 1; dppg-loglinear: 5 per configuration)")
	fl.Float64Var(&f.alpha, "alpha", policy.DefaultLogLinearConfig().Alpha, "dppg-loglinear: trust region size alpha > 0 (Table 2: 3.5)")
	fl.Float64Var(&f.eta, "eta", 0, "dppg-loglinear: constant policy step size eta > 0 instead of Table 2's schedule (12, divided by 5 every 50 episodes, floor 0.06)")
	fl.Float64Var(&f.baseLR, "baseline-lr", policy.DefaultLogLinearConfig().BaselineLR, "dppg-loglinear: step size >= 0 of the private linear baseline (0: the baseline stays 0 and the returns are the advantages; epsilon still composes its mechanism, an upper bound)")
	fl.Float64Var(&f.initRight, "init-right", 0, "dppg-loglinear: start from the policy with logit gap theta(s, right) - theta(s, left) equal to this in every state (0: uniform, the paper's start; large: near the optimal policy)")
	fl.Float64Var(&f.ridge, "fisher-ridge", policy.DefaultLogLinearConfig().FisherRidge, "dppg-loglinear, KL region: ridge >= 0 added to the Fisher estimate (Table 2: 1e-3); it bounds how far S can grow as the policy turns deterministic")
	fl.BoolVar(&f.fisherEx, "fisher-exact", false, "dppg-loglinear, KL region: use the Fisher matrix's expectation under the public model instead of the estimate on 25 public episodes (same privacy: S depends on the released policy and the public model only)")
	fl.BoolVar(&f.clipAtLR0, "clip-at-lr0", false, "dppg-loglinear: compute the trust-region clipping norm at eta_0 instead of the current eta")
	fl.StringVar(&f.diag, "diag", "", "SIMULATION ONLY, not covered by the privacy guarantee: write per-update diagnostics computed from the simulated users' raw data and the exact noise (entropy, value loss, returns, un-noised clipped fractions, signal and noise norms) as JSON Lines to this file, every record labelled so; dppg-loglinear: each seed's released policy (value and per-state logit gaps right - left; post-processing of the releases) at every regret-curve point")
	return c, f
}

// Algorithm groups of trainFlagTable.
const (
	ppoFamily = "dppg ppo"
	dpsgdAlgo = "dpsgd-reinforce dpsgd-dqn"
	algoSAC   = experiment.MethodSAC
)

// trainFlagTable lists dprl train's flags in the order it reports their
// errors: each flag's name, the configuration fields it sets
// (experiment.Train and its Overrides, experiment.DPSGD, experiment.Sweep
// and experiment.LogLinear), and the algorithms that read it ("" for all;
// setting a flag the algorithm would ignore is a usage error).
var trainFlagTable = flagtable.Table{{"env", "Env P", ""}, {"z", "Z", ppoFamily + " " + dpsgdAlgo}, {"epsilon", "Epsilon Epsilons", "dppg " + algoLogLinear},
	{"clip", "Clip", ppoFamily + " " + dpsgdAlgo + " " + algoLogLinear}, {"policy-share", "PolicyShare", ppoFamily}, {"algo", "Algo Method", ""},
	{"K", "K", ppoFamily + " " + algoLogLinear}, {"noise", "Noise", "dppg"}, {"horizon", "Horizon", "dppg"}, {"lr", "LR", ppoFamily + " " + algoSAC},
	{"server-lr", "ServerLR", ppoFamily}, {"ent-coef", "EntropyCoef", ppoFamily}, {"hidden", "Hidden", ppoFamily + " " + algoSAC}, {"epochs", "Epochs", ppoFamily},
	{"steps-per-user", "StepsPerUser", ppoFamily}, {"gamma", "Gamma", ppoFamily + " " + algoSAC}, {"gae-lambda", "Lambda", ppoFamily}, {"moment-reset", "MomentReset", ppoFamily}, {"value-scale", "ValueScale", ppoFamily},
	{"obs-scale", "ObsScale", ppoFamily}, {"users", "Users", ppoFamily}, {"steps", "Steps", algoSAC}, {"learning-starts", "LearningStarts", algoSAC},
	{"batch", "Batch", algoSAC}, {"log-episodes", "EpisodeLog", algoSAC}, {"log-replays", "Replays", algoSAC}, {"delta", "Delta", ppoFamily + " " + dpsgdAlgo + " " + algoLogLinear}, {"average", "Average", ppoFamily},
	{"eval-episodes", "EvalEpisodes", ppoFamily + " " + dpsgdAlgo + " " + algoSAC}, {"workers", "Workers", ppoFamily + " " + algoLogLinear},
	{"sweep-z", "Zs", "dppg"}, {"seeds", "Seeds", ppoFamily + " " + algoLogLinear + " " + algoSAC}, {"diag", "", ppoFamily + " " + algoLogLinear},
	{"plot", "", ppoFamily + " " + algoLogLinear + " " + algoSAC}, {"adv-norm", "", ppoFamily}, {"anneal", "", ppoFamily}, {"fresh-episodes", "", ppoFamily},
	{"episodes", "Episodes", algoLogLinear}, {"region", "Regions", algoLogLinear},
	{"init-right", "InitRight", algoLogLinear}, {"alpha", "Alpha", algoLogLinear}, {"eta", "Eta", algoLogLinear},
	{"baseline-lr", "BaselineLR", algoLogLinear}, {"fisher-ridge", "FisherRidge", algoLogLinear}, {"fisher-exact", "", algoLogLinear},
	{"clip-at-lr0", "", algoLogLinear}}

// checkTrainFlagsApply rejects a flag set on the command line that algo
// would silently ignore. An unknown algo is left to trainSpec.
func checkTrainFlagsApply(cmd *cobra.Command, algo string) error {
	if !strings.Contains(" "+ppoFamily+" "+dpsgdAlgo+" "+algoLogLinear+" "+algoSAC+" ", " "+algo+" ") {
		return nil
	}
	if errs := trainFlagTable.Inapplicable(cmd.Flags().Changed, "algo", algo); len(errs) > 0 {
		return usagef("train: %s", strings.Join(errs, "; "))
	}
	return nil
}

// trainUsage returns the usage error of err (nil for none): its messages
// with flags for fields, in the order of trainFlagTable.
func trainUsage(err error) error {
	if msgs := trainFlagTable.Ordered(err); len(msgs) > 0 {
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
	t = experiment.Train{Env: f.env, Method: f.algo, Delta: f.delta, Users: f.users, Workers: f.workers, EvalEpisodes: f.evalEpisodes,
		FreshEpisodes: f.fresh, AnnealServerLR: f.anneal, Average: f.average, Diagnostics: f.diag != "", Seeded: fl.Changed("seed")}
	o := &t.Overrides
	if f.algo != experiment.MethodDPPG && f.algo != experiment.MethodPPO {
		errs = append(errs, fmt.Errorf("--algo %q: want dppg, ppo, dppg-loglinear, dpsgd-reinforce, dpsgd-dqn or sac", f.algo))
		t.Method = experiment.MethodDPPG // to check the other flags
	} else {
		o.Z, o.Clip, o.PolicyShare = ifSet(fl, "z", &f.z), ifSet(fl, "clip", &f.clip), ifSet(fl, "policy-share", &f.share)
		if fl.Changed("epsilon") && len(f.epsilons) != 1 {
			errs = append(errs, fmt.Errorf("--epsilon %v: --algo %s takes one target epsilon (several: one run each, or --sweep-z)", f.epsilons, f.algo))
		} else if fl.Changed("epsilon") {
			t.Epsilon = &f.epsilons[0]
		}
	}
	o.K, o.LR, o.ServerLR, o.EntropyCoef = ifSet(fl, "K", &f.k), ifSet(fl, "lr", &f.lr), ifSet(fl, "server-lr", &f.serverLR), ifSet(fl, "ent-coef", &f.ent)
	o.NormalizeAdvantages, o.Epochs, o.Lambda, o.ValueScale = ifSet(fl, "adv-norm", &f.advNorm), ifSet(fl, "epochs", &f.epochs), ifSet(fl, "gae-lambda", &f.lambda), ifSet(fl, "value-scale", &f.valueScale)
	o.StepsPerUser, o.Gamma = ifSet(fl, "steps-per-user", &f.stepsPerUser), ifSet(fl, "gamma", &f.gamma)
	if fl.Changed("hidden") {
		o.Hidden = f.hidden
	}
	if n, err := profile.ParseNoise(f.noise); fl.Changed("noise") && parsed(err) {
		o.Noise = &n
	}
	if h, err := profile.ParseHorizon(f.horizon); fl.Changed("horizon") && parsed(err) {
		o.Horizon = &h
	}
	if m, err := profile.ParseMomentReset(f.momentReset); fl.Changed("moment-reset") && parsed(err) {
		o.MomentReset = &m
	}
	if sc, err := profile.ParseObsScale(f.obsScale, f.env); fl.Changed("obs-scale") && parsed(err) {
		o.ObsScale = &sc
	}
	return t, errors.Join(errs...)
}

// runTrain runs dprl train: the driver of --algo (experiment.Train's plan,
// once per seed or over --sweep-z; experiment.RunDPSGD;
// experiment.RunLogLinear), then --diag, --plot and the result.
func runTrain(cmd *cobra.Command, a *app, f *trainFlags) error {
	if err := checkTrainFlagsApply(cmd, f.algo); err != nil {
		return err
	}
	if _, err := chart.FormatOf(f.plot); f.plot != "" && err != nil {
		return usagef("train: --plot: %v", err)
	}
	if f.algo == policy.AlgoDPSGDReinforce || f.algo == policy.AlgoDPSGDDQN {
		return runTrainDPSGD(cmd, a, f)
	} else if f.algo == algoLogLinear {
		return runTrainLogLinear(cmd, a, f)
	} else if f.algo == algoSAC {
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
	if err := trainUsage(errors.Join(perr, err)); err != nil {
		return err
	}
	n := 1
	if cmd.Flags().Changed("seeds") {
		switch {
		case f.seeds < 1:
			return usagef("train: --seeds %d: must be >= 1", f.seeds)
		case f.seeds > 1 && f.diag != "":
			return usagef("train: --diag writes the diagnostics of one run: use it without --seeds")
		}
		n = f.seeds
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
	if errs = append(errs, trainFlagTable.Messages(experiment.Sweep{Zs: f.sweepZ, Seeds: []uint64{0}, Delta: f.delta}.Validate())...); len(errs) > 0 {
		slices.Sort(errs)
		return usagef("train: %s", strings.Join(errs, "; "))
	}
	seeds := experiment.SeedRange(seed, n)
	prog, total := a.task("training"), len(slices.Compact(slices.Sorted(slices.Values(f.sweepZ))))*n*f.users
	res, err := plan.Sweep(cmd.Context(), f.sweepZ, seeds, experiment.SweepHooks{
		Progress: func(point, run int, eps float64) func(policy.Progress) {
			return experiment.TrainProgress(prog, (point*n+run)*f.users, total, eps)
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
	c := experiment.DPSGD{Env: f.env, Algo: f.algo, Z: 1, Clip: 1, Delta: f.delta, EvalEpisodes: f.evalEpisodes}
	c.Z, c.Clip = *cmp.Or(ifSet(cmd.Flags(), "z", &f.z), &c.Z), *cmp.Or(ifSet(cmd.Flags(), "clip", &f.clip), &c.Clip)
	if err := trainUsage(c.Validate()); err != nil {
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
