package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"dprl/cmd/dprl/cliflags"
	"dprl/internal/progress"
	"dprl/offline/ope/coverage"
)

func newSimsOPECmd(a *app) *cobra.Command {
	var (
		c    coverage.Config
		plot string
	)
	cmd := &cobra.Command{
		Use:   "ope [--n 500,2000,10000] [--reps 1000] [--epsilon 0,1,5] [--plot F.png] [--json]",
		Short: "Measure the off-policy audit's intervals on simulated bandit logs: coverage and width against the exact value (simulation only)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.Seed = seedFlag(cmd, "seed", c.Seed)
			if err := c.Validate(); err != nil {
				return usageError{err}
			}
			prog := a.task("ope coverage")
			c.Progress = func(done, total int) {
				prog.Update(progress.Report{Done: int64(done), Total: int64(total), Unit: "logs"})
			}
			res, err := coverage.Run(cmd.Context(), c)
			prog.Finish()
			if err != nil {
				return fmt.Errorf("sims ope: %w", err)
			}
			if plot != "" {
				if err := res.Plot(plot); err != nil {
					return fmt.Errorf("sims ope: --plot: %w", err)
				}
			}
			return emitFigure(a, res, plot)
		},
	}
	c.Workers = runtime.GOMAXPROCS(0)
	fl := cliflags.New(cmd.Flags(), &c)
	fl.StringVar(&plot, "plot", "", "write coverage against n as PNG (or another format by extension) to this file")
	fl.Bool("json", false, "print the result as JSON")
	return cmd
}
