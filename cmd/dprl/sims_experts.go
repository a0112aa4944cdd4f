package main

import (
	"fmt"

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
				return usagef("sims experts: %w", fl.Rename(err)) // one line on stderr (run)
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
	fl.Bool("json", false, "print the summary as JSON")
	return c
}
