package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"dprl/rollout"
	"dprl/sims"
)

func newSimsGenerateCmd(a *app) *cobra.Command {
	var (
		cfg            rollout.GenerateConfig
		reference, out string
		force, asJSON  bool
	)
	c := &cobra.Command{
		Use:     "generate",
		Short:   "Write a dprl.sessions.v1 log of episodes run by a behaviour policy",
		Long:    helpText("sims-generate"),
		Example: helpText("sims-generate.example"),
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, err := newEnvFlag(cfg.EnvName)
			if err != nil {
				return err
			}
			switch {
			case env.ActionSpace().Kind != sims.Discrete:
				return usagef("--env %s has continuous actions; generate supports discrete actions only", cfg.EnvName)
			case cfg.BehaviorName == "":
				return usagef("--behavior is required (random, policy:FILE, greedy, epsilon-greedy:EPS or softmax:TEMP)")
			case cfg.Episodes < 1:
				return usagef("--episodes %d: want at least 1", cfg.Episodes)
			case out == "":
				return usagef("--out is required")
			case cmd.Flags().Changed("max-steps") && cfg.MaxSteps < 1:
				return usagef("--max-steps %d: want at least 1", cfg.MaxSteps)
			}
			if cfg.Behavior, err = rollout.ParseBehavior(cfg.BehaviorName, reference, cfg.EnvName, env); errors.As(err, new(*rollout.ReferenceError)) {
				return usagef("--policy: %w", err)
			} else if err != nil {
				return usagef("--behavior: %w", err)
			}
			if _, err := os.Stat(out); err == nil && !force {
				return usagef("--out %s exists (pass --force to overwrite)", out)
			}
			if cfg.Seed = seedFlag(cmd, "seed", cfg.Seed); !cmd.Flags().Changed("seed") {
				a.log.Info().Uint64("seed", cfg.Seed).Msg("random seed drawn; pass --seed to repeat the run")
			}
			cfg.Env = env
			last := time.Now()
			res, err := rollout.GenerateFile(cfg, out, func(episodes, steps int) {
				if time.Since(last) > 3*time.Second {
					last = time.Now()
					a.log.Info().Int("episodes", episodes).Int("of", cfg.Episodes).Int("steps", steps).Msg("generating")
				}
			})
			if errors.As(err, new(*rollout.OutputError)) {
				return fmt.Errorf("--out: %w", err)
			} else if err != nil {
				return err
			}
			return emit(a, asJSON, res, nil)
		},
	}
	fl := c.Flags()
	fl.StringVar(&cfg.EnvName, "env", "", "environment name (see dprl sims list); discrete actions only")
	fl.StringVar(&cfg.BehaviorName, "behavior", "", "behaviour policy: random, policy:FILE, greedy, epsilon-greedy:EPS or softmax:TEMP")
	fl.StringVar(&reference, "policy", "", "snapshot FILE that greedy, epsilon-greedy and softmax refer to (default: the environment's built-in controller)")
	fl.IntVar(&cfg.Episodes, "episodes", 0, "number of episodes (sessions) to write")
	fl.StringVar(&out, "out", "", "output file (dprl.sessions.v1 JSON Lines)")
	fl.Uint64Var(&cfg.Seed, "seed", 0, "random seed (default: drawn from the OS and reported)")
	fl.IntVar(&cfg.MaxSteps, "max-steps", 0, "truncate episodes after this many steps (default: the environment's limit)")
	fl.BoolVar(&force, "force", false, "overwrite --out if it exists")
	fl.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	return c
}
