package main

import (
	"dprl/cmd/dprl/cliflags"
	"dprl/experiment/bench"

	"github.com/spf13/cobra"
)

func newBenchCmd(a *app) *cobra.Command {
	return groupCmd("bench", "Benchmarks against baselines measured in the same run", newBenchServeCmd(a), newBenchVWCmd(a))
}

func newBenchServeCmd(a *app) *cobra.Command {
	var (
		args bench.Args
		fl   *cliflags.Flags
	)
	c := &cobra.Command{
		Use:   "serve [--concurrency C] [--duration D]",
		Short: "Act requests/s and latency through the full agent path vs a bare NATS echo responder",
		RunE: func(c *cobra.Command, _ []string) error {
			res, err := args.Run(c.Context(), a.log)
			return emit(a, res, fieldUsage("", fl, err))
		},
	}
	fl = cliflags.New(c.Flags(), &args)
	fl.Bool("json", false, "print the result as JSON")
	return c
}
