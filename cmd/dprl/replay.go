package main

import (
	"errors"

	"dprl/cmd/dprl/cliflags"
	"dprl/experiment/demo"
	"dprl/internal/progress"
	"dprl/stream"

	"github.com/spf13/cobra"
)

func newReplayCmd(a *app) *cobra.Command {
	cfg := demo.ReplayConfig{Prefix: stream.DefaultPrefix, GiveUp: demo.DefaultGiveUp} // the defaults of their flags
	var fl *cliflags.Flags
	c := &cobra.Command{
		Use:     "replay --nats URL --env E --users N [--concurrency C] [--returning P]",
		Short:   "Drive simulated users against a running agent over NATS",
		Example: `  dprl replay --nats nats://127.0.0.1:4222 --env cartpole --users 2000 --concurrency 16`,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cfg.Validate(); err != nil {
				return usageError{fl.Rename(err)}
			}
			cfg.Logger = a.log
			cfg.StartProgress = func(p func() demo.ReplayProgress) func() {
				return a.task("replay").Every(func() progress.Report { return p().Report() })
			}
			res, err := demo.Replay(c.Context(), cfg)
			if res.Planned > 0 { // a summary, partial beside a *demo.StoppedError
				return errors.Join(emit(a, res, nil), err)
			}
			return err
		},
	}
	fl = cliflags.New(c.Flags(), &cfg)
	fl.Bool("json", false, "print the summary as JSON")
	return c
}
