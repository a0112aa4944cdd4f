package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"dprl/sims"
	"dprl/space"
)

// newSimsCmd returns "dprl sims": listing environments and scripted rollouts.
func newSimsCmd(a *app) *cobra.Command {
	return groupCmd("sims", "Simulated environments: list them, run scripted rollouts",
		newSimsListCmd(a), newSimsRolloutCmd(a), newSimsGenerateCmd(a), newSimsExpertsCmd(a), newSimsBanditCmd(a), newSimsBaselinesCmd(a))
}

func newSimsListCmd(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "list",
		Short:   "List the environments with their spaces and step limits",
		Example: helpText("sims-list.example"),
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return emit(a, asJSON, sims.List(), nil)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func newSimsRolloutCmd(a *app) *cobra.Command {
	var (
		sc                                  sims.ScriptConfig
		envName, initState, actions, policy string
		asJSON                              bool
	)
	c := &cobra.Command{
		Use:     "rollout",
		Short:   "Run one episode with scripted or random actions and print every step",
		Long:    helpText("sims-rollout"),
		Example: helpText("sims-rollout.example"),
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, err := newEnvFlag(envName)
			if err != nil {
				return err
			}
			changed := cmd.Flags().Changed
			switch {
			case changed("actions") && policy != "":
				return usagef("give either --actions or --policy, not both")
			case !changed("actions") && policy == "":
				return usagef("give --actions or --policy random")
			case policy != "" && policy != "random":
				return usagef("--policy %q: want random", policy)
			}
			if changed("actions") {
				if sc.Actions, err = space.ParseActions("--actions", actions, env.ActionSpace()); err != nil {
					return usageError{err}
				}
			}
			if changed("steps") && sc.Steps < 1 {
				return usagef("--steps %d: want at least 1", sc.Steps)
			}
			if changed("init-state") {
				if sc.InitState, err = sims.ParseState("--init-state", initState); err != nil {
					return usageError{err}
				}
			}
			if sc.Seed = seedFlag(cmd, "seed", sc.Seed); !changed("seed") && !asJSON {
				fmt.Fprintf(a.stdout, "seed: %d\n", sc.Seed)
			} else if !changed("seed") {
				a.log.Info().Uint64("seed", sc.Seed).Msg("random seed drawn; pass --seed to repeat the run")
			}
			steps, err := sims.Script(env, sc)
			var nf *sims.NonFiniteError
			switch {
			case errors.Is(err, sims.ErrNoStateSetter):
				return usagef("--init-state: environment %s cannot set its state", envName)
			case errors.As(err, &nf):
				return fmt.Errorf("step %d: the state left the finite range (next_obs %v, reward %v); try a smaller --init-state", nf.Step, nf.NextObs, nf.Reward)
			case err != nil: // the state does not fit the environment
				return usagef("--init-state: %w", err)
			}
			return emit(a, asJSON, steps, nil)
		},
	}
	fl := c.Flags()
	fl.StringVar(&envName, "env", "", "environment name (see dprl sims list)")
	fl.Uint64Var(&sc.Seed, "seed", 0, "random seed (default: drawn from the OS and printed)")
	fl.StringVar(&initState, "init-state", "", "internal state after reset, as a JSON array of numbers")
	fl.StringVar(&actions, "actions", "", "comma-separated actions, one per step (box components joined by ':')")
	fl.StringVar(&policy, "policy", "", "action policy instead of --actions: random")
	fl.IntVar(&sc.Steps, "steps", 0, "stop after this many steps (default: no limit beyond the episode and action list)")
	fl.BoolVar(&asJSON, "json", false, "print a JSON array of steps")
	return c
}

func newSimsBaselinesCmd(a *app) *cobra.Command {
	cfg, asJSON := sims.BaselineConfig{}, false
	c := &cobra.Command{
		Use:     "baselines --env E [--episodes N] [--seed S]",
		Short:   "Mean return of the uniformly random policy and of every constant policy",
		Long:    helpText("sims-baselines"),
		Example: helpText("sims-baselines.example"),
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Seed = seedFlag(cmd, "seed", cfg.Seed)
			res, err := sims.Baselines(cfg)
			if err != nil && !errors.As(err, new(*sims.NonFiniteError)) {
				return usageError{err}
			}
			return emit(a, asJSON, res, err)
		},
	}
	c.Flags().StringVar(&cfg.Env, "env", "", "environment name (see dprl sims list)")
	c.Flags().IntVar(&cfg.Episodes, "episodes", 1000, "episodes per policy, >= 1")
	c.Flags().Uint64Var(&cfg.Seed, "seed", 0, "seed of the episodes (default: drawn from the OS and printed in the result)")
	c.Flags().IntVar(&cfg.Grid, "grid", 5, "constant values per dimension of a box action space, >= 2")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// newEnvFlag builds the environment named by a required --env flag; a
// missing or unknown name is a usage error listing the valid ones.
func newEnvFlag(name string) (sims.Env, error) {
	if name == "" {
		return nil, usagef("--env is required (one of: %s)", strings.Join(sims.Names(), ", "))
	}
	env, err := sims.New(name)
	if err != nil {
		return nil, usagef("--env: %w", err)
	}
	return env, nil
}
