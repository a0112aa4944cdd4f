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
	"github.com/spf13/pflag"
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
	fl.VisitAll(func(f *pflag.Flag) { f.Usage = profile.ExpandByEnv(f.Usage) })
	flagsrc.Alias(fl.FlagSet, "eps", "epsilon", a.stderr)
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
