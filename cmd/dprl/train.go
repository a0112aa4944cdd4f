package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"dprl/cmd/dprl/cliflags"
	"dprl/experiment"
	"dprl/internal/atomicfile"
	"dprl/internal/chart"
	"dprl/internal/flagsrc"
	"dprl/internal/progress"
	"dprl/policy"
	"dprl/policy/sac"
	"dprl/profile"
	"dprl/sims"

	"github.com/spf13/cobra"
)

// trainFlags are the flags of dprl train: experiment.TrainArgs, whose
// fields are named as the configuration fields they set, and the output's.
type trainFlags struct {
	experiment.TrainArgs
	fl *cliflags.Flags
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
		Long:  helpText("train", "{{defaults by environment}}", profile.TrainDefaultsHelp(80)),
		RunE:  func(cmd *cobra.Command, _ []string) error { return runTrain(cmd, a, f) },
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
	fl.StringVar(&f.Diag, "diag", "", "SIMULATION ONLY, not covered by the privacy guarantee: write per-update diagnostics computed from the simulated users' raw data and the exact noise (entropy, value loss, returns, un-noised clipped fractions, signal and noise norms) as JSON Lines to this file, every record labelled so; dppg-loglinear: each seed's released policy (value and per-state logit gaps right - left; post-processing of the releases) at every regret-curve point")
	fl.StringVar(&f.Plot, "plot", "", "write the learning curve (return vs users) as PNG to this file")
	fl.BoolVar(&f.NormalizeAdvantages, "adv-norm", false, "standardise each user's advantages (mean 0, std 1) before the local epochs"+profile.ByEnv(""))
	fl.BoolVar(&f.AnnealServerLR, "anneal", false, "decay the server step size linearly to 0 over the run (public schedule)")
	fl.BoolVar(&f.FreshEpisodes, "fresh-episodes", false, "every user starts a fresh episode (default: user slot i of a batch continues the episode slot i's previous user left running)")
	fl.IntVar(&f.Episodes, "episodes", 3000, "dppg-loglinear: episodes per run")
	fl.StringSliceVar(&f.Regions, "region", []string{"l2", "kl"}, "dppg-loglinear: trust regions (l2, kl, l2-markov)")
	fl.Float64Var(&f.InitRight, "init-right", 0, "dppg-loglinear: start from the policy with logit gap theta(s, right) - theta(s, left) equal to this in every state (0: uniform, the paper's start; large: near the optimal policy)")
	fl.Float64Var(&f.Alpha, "alpha", policy.DefaultLogLinearConfig().Alpha, "dppg-loglinear: trust region size alpha > 0 (Table 2: 3.5)")
	fl.Float64Var(&f.Eta, "eta", 0, "dppg-loglinear: constant policy step size eta > 0 instead of Table 2's schedule (12, divided by 5 every 50 episodes, floor 0.06)")
	fl.Float64Var(&f.BaselineLR, "baseline-lr", policy.DefaultLogLinearConfig().BaselineLR, "dppg-loglinear: step size >= 0 of the private linear baseline (0: the baseline stays 0 and the returns are the advantages; epsilon still composes its mechanism, an upper bound)")
	fl.Float64Var(&f.FisherRidge, "fisher-ridge", policy.DefaultLogLinearConfig().FisherRidge, "dppg-loglinear, KL region: ridge >= 0 added to the Fisher estimate (Table 2: 1e-3); it bounds how far S can grow as the policy turns deterministic")
	fl.BoolVar(&f.FisherExact, "fisher-exact", false, "dppg-loglinear, KL region: use the Fisher matrix's expectation under the public model instead of the estimate on 25 public episodes (same privacy: S depends on the released policy and the public model only)")
	fl.BoolVar(&f.ClipAtLR0, "clip-at-lr0", false, "dppg-loglinear: compute the trust-region clipping norm at eta_0 instead of the current eta")
	fl.Uint64Var(&f.Seed, "seed", 0, "seed of every random draw (default: from the OS; printed in the result)")
	fl.Bool("json", false, "print the result as JSON")
	return c, f
}

// usage returns the usage error of err (nil for none): its messages with
// flags for fields, in the order the flags are defined.
func (f *trainFlags) usage(err error) error {
	if msgs := f.fl.Ordered(err); len(msgs) > 0 {
		return usagef("train: %s", strings.Join(msgs, "; "))
	}
	return nil
}

// runTrain runs dprl train: the driver of --algo (experiment.Train's plan,
// once per seed or over --sweep-z; experiment.RunDPSGD;
// experiment.RunLogLinear; experiment.RunSAC), then --plot and the result.
func runTrain(cmd *cobra.Command, a *app, f *trainFlags) error {
	ctx, set := cmd.Context(), f.fl.FieldChanged
	// A setting the algorithm would ignore is refused.
	if msgs := f.fl.Messages(f.Inapplicable(set)); len(msgs) > 0 {
		slices.Sort(msgs)
		return usagef("train: %s", strings.Join(msgs, "; "))
	}
	if _, err := chart.FormatOf(f.Plot); f.Plot != "" && err != nil {
		return usagef("train: --plot: %v", err)
	}
	switch f.Algo {
	case policy.AlgoDPSGDReinforce, policy.AlgoDPSGDDQN:
		c := f.DPSGD(set)
		if err := f.usage(c.Validate()); err != nil {
			return err
		}
		res, err := experiment.RunDPSGD(ctx, c, nil)
		return emit(a, res, runError(err))
	case algoLogLinear:
		c, err := f.LogLinear(set)
		if err != nil {
			return usagef("train: %s", strings.Join(f.fl.Messages(err), "; "))
		}
		prog := a.task("training")
		res, err := experiment.RunLogLinear(ctx, c, prog.Counter(c.TotalEpisodes(), "episodes"))
		prog.Finish()
		if cerr := (*experiment.ConfigError)(nil); errors.As(err, &cerr) {
			return usagef("train: %s", strings.Join(f.fl.Messages(cerr.Err), "; "))
		} else if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		if f.Diag != "" {
			if err := atomicfile.Write(f.Diag, 0o644, res.WriteTrace); err != nil {
				return fmt.Errorf("train: --diag: %w", err)
			}
		}
		return emitTrain(a, f, res, nil)
	case experiment.MethodSAC:
		c := f.SAC(set)
		if err := f.usage(c.Validate()); err != nil {
			return err
		}
		prog := a.task("sac")
		res, err := experiment.RunSAC(ctx, c, func(run int, p sac.Progress) {
			prog.Update(progress.Report{Done: int64(run*c.Steps + p.Steps), Total: int64(c.Seeds * c.Steps), Unit: "steps", Fields: []progress.Field{
				progress.F("run", run+1), progress.Ff("eval_return", "%.1f", p.EvalReturn), progress.F("updates", p.Updates),
				progress.F("privacy", "none (non-private)")}})
		})
		prog.Finish()
		return emitTrain(a, f, res, runError(err))
	}
	t, perr := f.Train(set)
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
	n, err := f.Runs(set)
	if err != nil {
		return usagef("train: %s", strings.Join(f.fl.Messages(err), "; "))
	}
	if msgs := f.fl.Messages(f.SweepErrors(set)); set("Zs") && len(msgs) > 0 {
		slices.Sort(msgs)
		return usagef("train: %s", strings.Join(msgs, "; "))
	}
	prog := a.task("training")
	if set("Zs") {
		res, err := f.Sweep(ctx, plan, n, set, experiment.TrainArgsHooks{Task: prog, Point: func(pt experiment.SweepPoint) {
			a.log.Info().Float64("z", pt.Z).Float64("epsilon", pt.Epsilon).Float64("epsilon_per_segment", pt.EpsilonPerSegment).Float64("mean", pt.Mean).Float64("std", pt.Std).Msg("sweep point")
		}})
		prog.Finish()
		return emitTrain(a, f, res, runError(err))
	}
	res, err := f.RunSeeds(ctx, plan, n, set, experiment.TrainArgsHooks{Task: prog, Evaluated: func(r experiment.TrainResult) {
		a.log.Debug().Uint64("seed", r.Seed).Dur("eval", time.Duration(r.EvalSeconds*float64(time.Second))).Float64("eval_mean", r.EvalMean).Msg("evaluated")
	}})
	prog.Finish()
	if err != nil {
		return fmt.Errorf("train: %w", f.fl.Rename(err))
	}
	return emitTrain(a, f, res, nil)
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

// emitTrain writes --plot and prints res (text or --json); or returns
// err, if not nil.
func emitTrain(a *app, f *trainFlags, res experiment.TrainOutput, err error) error {
	if err != nil {
		return err
	}
	if f.Plot != "" {
		if err := res.Plot(f.Plot); err != nil {
			return fmt.Errorf("train: --plot: %w", err)
		}
	}
	return emit(a, res, nil)
}
