package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"dprl/cmd/dprl/cliflags"
	"dprl/experiment"
	"dprl/internal/flagsrc"
	"dprl/policy"
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

// runTrain runs dprl train (experiment.TrainArgs.Run) and prints the
// result as text or JSON.
func runTrain(cmd *cobra.Command, a *app, f *trainFlags) error {
	res, err := f.Run(cmd.Context(), f.fl.FieldChanged, experiment.TrainHooks{
		Task: a.task,
		Evaluated: func(r experiment.TrainResult) {
			a.log.Debug().Uint64("seed", r.Seed).Dur("eval", time.Duration(r.EvalSeconds*float64(time.Second))).Float64("eval_mean", r.EvalMean).Msg("evaluated")
		},
		Point: func(pt experiment.SweepPoint) {
			a.log.Info().Float64("z", pt.Z).Float64("epsilon", pt.Epsilon).Float64("epsilon_per_segment", pt.EpsilonPerSegment).Float64("mean", pt.Mean).Float64("std", pt.Std).Msg("sweep point")
		},
	})
	if te := (*experiment.TrainError)(nil); errors.As(err, &te) {
		return trainError(f.fl, te)
	}
	return emit(a, res, err)
}

// trainError is the error of dprl train of e: the settings' messages,
// their fields named as flags, in the order e's kind says, as a usage
// error; the learner's rejection as it is, a usage error too; a failed
// run's error, with the flags named where e's kind says so.
func trainError(fl *cliflags.Flags, e *experiment.TrainError) error {
	switch e.Kind {
	case experiment.LearnerRejected:
		return usageError{e.Err}
	case experiment.RunFailed:
		return fmt.Errorf("train: %w", e.Err)
	case experiment.RunFailedNamed:
		return fmt.Errorf("train: %w", fl.Rename(e.Err))
	}
	msgs := fl.Messages(e.Err)
	switch e.Kind {
	case experiment.SettingsByField:
		msgs = fl.Ordered(e.Err)
	case experiment.SettingsSorted:
		slices.Sort(msgs)
	}
	return usagef("train: %s", strings.Join(msgs, "; "))
}
