package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"dprl/cmd/dprl/cliflags"
	"dprl/rollout"
)

func newSimsGenerateCmd(a *app) *cobra.Command {
	var (
		args rollout.GenerateArgs
		fl   *cliflags.Flags
	)
	c := &cobra.Command{
		Use:   "generate",
		Short: "Write a dprl.sessions.v1 log of episodes run by a behaviour policy",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := args.Config(fl.FieldChanged)
			if err != nil {
				return usageError{fl.Rename(err)}
			}
			if cfg.Seed = seedFlag(cmd, "seed", args.Seed); !cmd.Flags().Changed("seed") {
				a.log.Info().Uint64("seed", cfg.Seed).Msg("random seed drawn; pass --seed to repeat the run")
			}
			last := time.Now()
			res, err := rollout.GenerateFile(cfg, args.Out, func(episodes, steps int) {
				if time.Since(last) > 3*time.Second {
					last = time.Now()
					a.log.Info().Int("episodes", episodes).Int("of", cfg.Episodes).Int("steps", steps).Msg("generating")
				}
			})
			if errors.As(err, new(*rollout.OutputError)) {
				return fmt.Errorf("--out: %w", err)
			}
			return emit(a, res, err)
		},
	}
	fl = cliflags.New(c.Flags(), &args)
	fl.Bool("json", false, "print the summary as JSON")
	return c
}
