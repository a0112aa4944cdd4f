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
		Use:   "generate",
		Short: "Write a dprl.sessions.v1 log of episodes run by a behaviour policy",
		Long: `generate runs --episodes episodes of a discrete-action environment under a
behaviour policy and writes them as a dprl.sessions.v1 log (one session per
line), recording with every action the behaviour's probability of it (as
"logp", its logarithm, which the format accepts in place of "prob"). The log is
the input of the offline modes (dprl offline gtd2).

Behaviour policies (--behavior):
  random | uniform          every action with probability 1/N
  policy:FILE               a saved policy snapshot's own (sampled) policy
  greedy                    the reference's preferred action
  epsilon-greedy:EPS        the reference's preferred action with probability
                            1-EPS+EPS/N, any other with EPS/N
  softmax:TEMP              softmax(reference scores / TEMP)
The reference is the snapshot given with --policy FILE (its logits), else the
environment's built-in controller: chain "advance" (action 1, scores 1 for
advance and 0 for wait), mountaincar "pump" (push in the direction of the
velocity). File forms greedy:FILE, softmax:FILE:TEMP and
epsilon-greedy:FILE:EPS are accepted too.

--max-steps truncates episodes earlier than the environment's own limit;
a truncated episode records its final observation (final_obs) so that it can
be bootstrapped.

Randomness: the environment draws from PCG(seed, 1) and the behaviour from
PCG(seed, 2). Without --seed a seed is drawn from the operating system and
reported, so the log can be regenerated.`,
		Example: `  dprl sims generate --env chain --behavior random --episodes 1000 --out chain.jsonl --seed 1
  dprl sims generate --env mountaincar --behavior epsilon-greedy:0.1 --episodes 500 --out mc.jsonl
  dprl sims generate --env cartpole --behavior policy:pol.snap --episodes 100 --out cp.jsonl --json`,
		Args: noArgs,
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
