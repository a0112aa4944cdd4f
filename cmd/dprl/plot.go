package main

import (
	"fmt"

	"dprl/experiment"
	"dprl/offline/primorl"
	"dprl/offline/qlearn"

	"github.com/spf13/cobra"
)

func newPlotCmd(a *app) *cobra.Command {
	var out, title string
	var logLog bool
	regret := &cobra.Command{
		Use:   "regret FILE.json...",
		Short: "Draw the regret curves of several dprl train --algo dppg-loglinear --json results on one PNG",
		Args:  resultFiles("regret"),
		RunE: func(_ *cobra.Command, args []string) error {
			if out == "" {
				return usagef("plot regret: --out FILE.png is required")
			}
			results, err := readResults("regret", args, experiment.ReadLogLinearResult)
			if err != nil {
				return err
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
	return groupCmd("plot", "Draw figures from saved results", regret, newPlotPriMORLCmd(a), newPlotLearnCmd(a))
}

// newPlotPriMORLCmd draws score against epsilon from primorl results.
func newPlotPriMORLCmd(a *app) *cobra.Command {
	var out, title string
	cmd := &cobra.Command{
		Use:     "primorl FILE.json...",
		Short:   "Score against epsilon of dprl offline primorl --json results (the paper's Figure 4)",
		Example: `  dprl plot primorl --out docs/primorl-pendulum.png runs/*.json`,
		Args:    resultFiles("primorl"),
		RunE: func(_ *cobra.Command, args []string) error {
			results, err := readResults("primorl", args, primorl.ReadResult)
			if err != nil {
				return err
			}
			sums := primorl.Summarize(results)
			if out != "" {
				if title == "" {
					title = "PriMORL on " + results[0].Env
				}
				if err := primorl.PlotScores(out, title, sums, results[0].Env == "pendulum"); err != nil {
					return fmt.Errorf("plot primorl: %w", err)
				}
			}
			return emitFigure(a, sums, out)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the figure to write (PNG or SVG by extension)")
	cmd.Flags().StringVar(&title, "title", "", "the figure's title (default: PriMORL on ENV)")
	cmd.Flags().Bool("json", false, "print the summaries as JSON")
	return cmd
}

// newPlotLearnCmd summarises and draws dprl offline learn results.
func newPlotLearnCmd(a *app) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:     "learn FILE.json...",
		Short:   "Normalised return against epsilon of dprl offline learn --json results (the expert-level paper's Figure 3)",
		Example: `  dprl plot learn --out docs/expert-level.png runs/*.json`,
		Args:    resultFiles("learn"),
		RunE: func(_ *cobra.Command, args []string) error {
			groups, err := qlearn.SummarizeFiles(args)
			if err != nil {
				return usageError{fmt.Errorf("plot learn: %w", err)}
			}
			if out != "" {
				if err := groups.Plot(out); err != nil {
					return fmt.Errorf("plot learn: %w", err)
				}
			}
			return emitFigure(a, groups, out)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the figure to write (PNG or SVG by extension)")
	cmd.Flags().Bool("json", false, "print the groups as JSON")
	return cmd
}

// resultFiles is the Args of dprl plot name: at least one result file.
func resultFiles(name string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usagef("plot %s: give at least one result file", name)
		}
		return nil
	}
}

// readResults reads the result files of dprl plot name with read; a file
// it cannot read is a usage error.
func readResults[R any](name string, paths []string, read func(string) (R, error)) ([]R, error) {
	results := make([]R, len(paths))
	for i, path := range paths {
		r, err := read(path)
		if err != nil {
			return nil, usageError{fmt.Errorf("plot %s: %w", name, err)}
		}
		results[i] = r
	}
	return results, nil
}

// emitFigure prints res (text or --json) and, in text, the figure written
// to out, if any.
func emitFigure[R texter](a *app, res R, out string) error {
	if err := emit(a, res, nil); err != nil || out == "" || a.json() {
		return err
	}
	_, err := fmt.Fprintf(a.stdout, "wrote %s\n", out)
	return err
}
