package main

import (
	"dprl/experiment"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

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
				r, err := readLogLinearResult(path)
				if err != nil {
					return usageError{fmt.Errorf("plot regret: %w", err)}
				}
				results[i] = r
			}
			withP := false
			for _, r := range results {
				withP = withP || r.P != results[0].P
			}
			if title == "" {
				title = "RiverSwim, log-linear DPPG (mean cumulative regret over seeds)"
				if !withP {
					title = fmt.Sprintf("%s, log-linear DPPG (p = %g, mean cumulative regret over seeds)", results[0].Env, results[0].P)
				}
			}
			if err := plotRegret(out, title, results, withP, logLog); err != nil {
				return fmt.Errorf("plot regret: %w", err)
			}
			fmt.Fprintf(a.stdout, "wrote %s (%d runs from %d files)\n", out, countRuns(results), len(args))
			return nil
		},
	}
	regret.Flags().StringVar(&out, "out", "", "the PNG file to write (required)")
	regret.Flags().StringVar(&title, "title", "", "the figure's title (default: from the results)")
	regret.Flags().BoolVar(&logLog, "log", false, "logarithmic axes: linear regret is a line of slope 1, sublinear regret bends below it")
	return groupCmd("plot", "Draw figures from saved results", regret)
}

// readLogLinearResult reads and checks one dppg-loglinear --json result.
func readLogLinearResult(path string) (experiment.LogLinearResult, error) {
	var r experiment.LogLinearResult
	f, err := os.Open(path)
	if err != nil {
		return r, err
	}
	defer f.Close()
	dec := json.NewDecoder(io.LimitReader(f, 1<<30))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("%s: not a dprl train --algo %s --json result: %w", path, algoLogLinear, err)
	}
	var errs []string
	if r.Method != algoLogLinear {
		errs = append(errs, fmt.Sprintf("method %q, want %q", r.Method, algoLogLinear))
	}
	if len(r.Runs) == 0 {
		errs = append(errs, "no runs")
	}
	for i, run := range r.Runs {
		if len(run.Mean) == 0 || len(run.Mean) != len(run.CurveEpisodes) {
			errs = append(errs, fmt.Sprintf("runs[%d]: %d regret points for %d episode counts", i, len(run.Mean), len(run.CurveEpisodes)))
		}
	}
	if len(errs) > 0 {
		return r, errors.New(path + ": " + strings.Join(errs, "; "))
	}
	return r, nil
}

func countRuns(results []experiment.LogLinearResult) int {
	n := 0
	for _, r := range results {
		n += len(r.Runs)
	}
	return n
}
