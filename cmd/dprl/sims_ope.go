package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

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
	fl := cmd.Flags()
	fl.IntSliceVar(&c.Sizes, "n", []int{500, 2000, 10000}, "logged decisions per log (comma-separated sizes)")
	fl.IntVar(&c.Reps, "reps", 1000, "logs per size")
	fl.Float64SliceVar(&c.Epsilons, "epsilon", []float64{0, 1, 5}, "privacy levels: 0 the non-private report, > 0 the private audit at that epsilon (delta 1e-5)")
	fl.Float64Var(&c.LoggerEps, "logger-epsilon", 0.1, "the logger's epsilon (epsilon-greedy around the best fixed item)")
	fl.StringVar(&c.Logger, "logger", "", "the logging policy instead of epsilon-greedy: snapshot:FILE (a released policy's own probabilities, e.g. the DP agent's: dprl ledger snapshot), softmax:FILE:TEMP, epsilon-greedy:FILE:EPS")
	fl.Float64Var(&c.TargetEps, "target-epsilon", 0.1, "the target's epsilon (epsilon-greedy around each user's best item)")
	fl.IntVar(&c.Bootstrap, "bootstrap", 200, "percentile-bootstrap resamples (IPS, SNIPS)")
	fl.IntVar(&c.Workers, "workers", runtime.GOMAXPROCS(0), "goroutines (the result does not depend on it)")
	fl.Uint64Var(&c.Seed, "seed", 0, "seed of every draw (default: from the OS)")
	fl.StringVar(&c.DumpDir, "dump-logs", "", "write every simulated log's weights and rewards as CSV files to this existing directory (for other libraries' estimators on the same logs: scripts/ope/peers.py)")
	fl.StringVar(&plot, "plot", "", "write coverage against n as PNG (or another format by extension) to this file")
	fl.Bool("json", false, "print the result as JSON")
	return cmd
}
