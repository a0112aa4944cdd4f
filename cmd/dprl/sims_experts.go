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
	var fl *cliflags.Flags
	c := &cobra.Command{
		Use:   "experts --env cartpole|acrobot --m M --trajectories N --out-dir DIR --log FILE",
		Short: "Train M experts on environment variations and log their trajectories (input of dprl offline svt)",
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
			return emit(a, res, nil)
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
	fl.Bool("json", false, "print the summary as JSON")
	return c
}
