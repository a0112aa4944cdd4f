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
	sacDefaults, loglinear := experiment.DefaultSAC(""), policy.DefaultLogLinearConfig() // the defaults of their flags
	f := &trainFlags{TrainArgs: experiment.TrainArgs{Steps: sacDefaults.Steps, LearningStarts: sacDefaults.LearningStarts, Batch: sacDefaults.Batch,
		Alpha: loglinear.Alpha, BaselineLR: loglinear.BaselineLR, FisherRidge: loglinear.FisherRidge}}
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
	flagsrc.Alias(fl.FlagSet, "eps", "epsilon", a.stderr)
	fl.Float64Var(&f.Clip, "clip", 0, "clipping norm S > 0 of the joint local update, policy and critic"+profile.ByEnv("Table 3: 0.05")+"; dpsgd-*: default 1; dppg-loglinear: choose each run's alpha so that its first update's trust-region S is this (instead of --alpha; KL needs --fisher-exact)")
	fl.Float64Var(&f.PolicyShare, "policy-share", 0, "share f of the squared clipping norm given to the policy block; the critic gets 1-f"+profile.ByEnv(""))
	fl.IntVar(&f.K, "K", 0, "users per update K >= 1"+profile.ByEnv("Table 3: 8")+"; dppg-loglinear: episodes per update, default 1 as in App. C.2.2")
	fl.StringVar(&f.Noise, "noise", "", "noise of the releases: independent (Algorithm 2), tree (binary tree mechanism, DP-FTRL) or sqrt (square-root factorization); the epsilon per segment of z is the same, the epsilon per episode is not"+profile.ByEnv(""))
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
	fl.BoolVar(&f.NormalizeAdvantages, "adv-norm", false, "standardise each user's advantages (mean 0, std 1) before the local epochs"+profile.ByEnv(""))
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
