package main

import (
	"fmt"

	"dprl/experiment"

	"github.com/spf13/cobra"
)

func newPlotCmd(a *app) *cobra.Command {
	var out, title string
	var logLog bool
	regret := &cobra.Command{
		Use:   "regret FILE.json...",
		Short: "Draw the regret curves of several dprl train --algo dppg-loglinear --json results on one PNG",
		Long: `Reads results written by dprl train --algo dppg-loglinear --json (runs
with different constants, e.g. one per epsilon or trust region) and draws
every run's mean cumulative regret on one figure, as the paper's Figure 1
does. Runs at epsilon < 2 are dashed; the legend gives p when the files
differ in p. --log draws both axes on a log scale, where linear regret is
a line of slope 1 and sublinear regret bends below it.`,
		Example: `  dprl plot regret --out regret.png eps5.json eps1.json
  dprl plot regret --log --out regret-log.png eps5.json eps1.json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("plot regret: give at least one result file")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			if out == "" {
				return usagef("plot regret: --out FILE.png is required")
			}
			results := make([]experiment.LogLinearResult, len(args))
			for i, path := range args {
				r, err := experiment.ReadLogLinearResult(path)
				if err != nil {
					return usageError{fmt.Errorf("plot regret: %w", err)}
				}
				results[i] = r
			}
			if title == "" {
				title = experiment.RegretTitle(results)
			}
			if err := experiment.PlotRegret(out, title, results, logLog); err != nil {
				return fmt.Errorf("plot regret: %w", err)
			}
			fmt.Fprintf(a.stdout, "wrote %s (%d runs from %d files)\n", out, experiment.CountRuns(results), len(args))
			return nil
		},
	}
	regret.Flags().StringVar(&out, "out", "", "the PNG file to write (required)")
	regret.Flags().StringVar(&title, "title", "", "the figure's title (default: from the results)")
	regret.Flags().BoolVar(&logLog, "log", false, "logarithmic axes: linear regret is a line of slope 1, sublinear regret bends below it")
	return groupCmd("plot", "Draw figures from saved results", regret)
}
