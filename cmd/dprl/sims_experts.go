package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"dprl/cmd/dprl/cliflags"
	"dprl/internal/progress"
	"dprl/offline/svt"
)

func newSimsExpertsCmd(a *app) *cobra.Command {
	cfg := svt.DatasetConfig{GenConfig: svt.GenConfig{Train: svt.ExpertTrainConfig()}}
	var asJSON bool
	var fl *cliflags.Flags
	c := &cobra.Command{
		Use:   "experts --env cartpole|acrobot --m M --trajectories N --out-dir DIR --log FILE",
		Short: "Train M experts on environment variations and log their trajectories (input of dprl offline svt)",
		Long: `Builds the expert dataset of Sharma et al. (expert-level DP offline RL, App.
B.1): M experts, each trained with non-private PPO (the dprl train --algo ppo
defaults) on a variation of the environment — a cell of the paper's 10x10x10
grid (CartPole: gravity 8.75-11.0, force 9.0-11.25, cart mass 0.8-1.25;
Acrobot: both link lengths 0.8-1.2, link masses 0.9-1.1), cells shuffled and
cycled beyond 1000 — then smoothed to p_min (the greedy action gets
1 - (|A|-1) p_min, every other action p_min). Expert "e<j>" is written to
DIR/e<j>.snap (DIR/experts.json records the variations), and N trajectories
per expert, sampled from the smoothed expert on the default environment, are
logged to FILE in dprl.sessions.v1 with "expert" and "prob" set.

--users is each expert's training budget in simulated users of 64 steps (the
paper trains for 1e6 updates; 3000 users take ~1.5 s per CartPole expert here).
With --bases B, B base experts are trained for --users users on the default
environment and expert j fine-tunes base j mod B on its variation for
--finetune-users users: much cheaper per expert, but the experts are then
correlated through their bases, which raises their consensus (and the SVT
yield) compared with independently trained experts.

Every draw derives from --seed (default: from the OS; printed). Progress goes
to stderr; the summary to stdout (text or --json).`,
		Example: `  dprl sims experts --env cartpole --m 100 --trajectories 20 --out-dir experts --log data.jsonl
  dprl sims experts --env cartpole --m 3000 --trajectories 5 --bases 30 --finetune-users 300 \
      --out-dir experts --log data.jsonl --seed 1 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cfg.Validate(); err != nil {
				msg := fl.Rename(err).Error()
				return usagef("sims experts: %s", strings.ReplaceAll(msg, "\n", "; "))
			}
			cfg.Seed = seedFlag(cmd, "seed", cfg.Seed)
			cfg.Seeded = cmd.Flags().Changed("seed")
			prog := a.task("experts")
			res, err := svt.GenerateDataset(cmd.Context(), cfg, func(p svt.GenProgress) {
				prog.Phase(p.Phase)
				prog.Update(progress.Report{Done: int64(p.Done), Total: int64(p.Total)})
			})
			prog.Finish()
			if err != nil {
				return fmt.Errorf("sims experts: %w", err)
			}
			return emit(a, asJSON, res, nil)
		},
	}
	fl = cliflags.New(c.Flags(), &cfg)
	fl.StringVar(&cfg.Env, "env", "cartpole", "environment: cartpole or acrobot")
	fl.IntVar(&cfg.Experts, "m", 0, "number of experts M >= 1 (the paper: 3000)")
	fl.IntVar(&cfg.Trajectories, "trajectories", 20, "trajectories logged per expert N >= 1 (the paper: 20)")
	fl.StringVar(&cfg.Dir, "out-dir", "", "directory for the expert snapshots DIR/e<j>.snap (created)")
	fl.StringVar(&cfg.Log, "log", "", "session log to write (dprl.sessions.v1)")
	fl.IntVar(&cfg.Users, "users", 3000, "training budget per expert (per base with --bases), in simulated users")
	fl.IntVar(&cfg.Bases, "bases", 0, "train this many base experts on the default environment and fine-tune them per variation (0: every expert from scratch)")
	fl.IntVar(&cfg.FineTuneUsers, "finetune-users", 500, "fine-tuning budget per expert with --bases, in simulated users")
	fl.Float64Var(&cfg.PMin, "pmin", 0.02, "smoothing floor p_min in (0, 1/|A|] (the paper: 0.02)")
	fl.Uint64Var(&cfg.Seed, "seed", 0, "seed of every random draw (default: from the OS; printed in the result)")
	fl.IntVar(&cfg.Workers, "workers", 0, "experts trained at once (default GOMAXPROCS; the output does not depend on it)")
	fl.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	return c
}
