package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"dprl/cmd/dprl/cliflags"
	"dprl/sims"
)

// newSimsCmd returns "dprl sims": listing environments and scripted rollouts.
func newSimsCmd(a *app) *cobra.Command {
	return groupCmd("sims", "Simulated environments: list them, run scripted rollouts",
		newSimsListCmd(a), newSimsRolloutCmd(a), newSimsGenerateCmd(a), newSimsExpertsCmd(a), newSimsBanditCmd(a), newSimsBaselinesCmd(a), newSimsOPECmd(a))
}

func newSimsListCmd(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "list",
		Short: "List the environments with their spaces and step limits",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return emit(a, sims.List(), nil)
		},
	}
	c.Flags().Bool("json", false, "print JSON")
	return c
}

func newSimsRolloutCmd(a *app) *cobra.Command {
	var (
		args sims.ScriptArgs
		fl   *cliflags.Flags
	)
	c := &cobra.Command{
		Use:   "rollout",
		Short: "Run one episode with scripted or random actions and print every step",
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, sc, err := args.Config(fl.FieldChanged)
			if err != nil {
				return usageError{fl.Rename(err)}
			}
			if sc.Seed = seedFlag(cmd, "seed", args.Seed); !fl.Changed("seed") && !a.json() {
				fmt.Fprintf(a.stdout, "seed: %d\n", sc.Seed)
			} else if !fl.Changed("seed") {
				a.log.Info().Uint64("seed", sc.Seed).Msg("random seed drawn; pass --seed to repeat the run")
			}
			steps, err := args.Script(env, sc)
			if nf := (*sims.NonFiniteError)(nil); errors.As(err, &nf) {
				return fl.Rename(err)
			} else if err != nil {
				return usageError{fl.Rename(err)}
			}
			return emit(a, steps, nil)
		},
	}
	fl = cliflags.New(c.Flags(), &args)
	fl.Bool("json", false, "print a JSON array of steps")
	return c
}

func newSimsBaselinesCmd(a *app) *cobra.Command {
	var cfg sims.BaselineConfig
	c := &cobra.Command{
		Use:   "baselines --env E [--episodes N] [--seed S]",
		Short: "Mean return of the uniformly random policy and of every constant policy",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Seed = seedFlag(cmd, "seed", cfg.Seed)
			res, err := sims.Baselines(cfg)
			if err != nil && !errors.As(err, new(*sims.NonFiniteError)) {
				return usageError{err}
			}
			return emit(a, res, err)
		},
	}
	cliflags.New(c.Flags(), &cfg)
	c.Flags().Bool("json", false, "print JSON")
	return c
}
