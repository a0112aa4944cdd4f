package main

import (
	"errors"

	"dprl/internal/flagsrc"
	"dprl/report"

	"github.com/spf13/cobra"
)

func newReportCmd(a *app) *cobra.Command {
	o := report.Options{OutDir: "dprl-report"}
	c := &cobra.Command{
		Use:     "report --data DIR [--out DIR] [--env NAME] [--force]",
		Short:   "Write the status page's figures from a ledger, as PNGs and one self-contained HTML file, for an audit",
		Example: `  dprl report --data ./dprl-data --env cartpole --out audit-2026-11`,
		RunE: func(*cobra.Command, []string) error {
			if o.DataDir == "" {
				return usagef("--data is required")
			}
			o.Logger = a.log
			res, err := report.Write(o)
			if errors.Is(err, report.ErrExists) {
				return usageError{err}
			}
			return emit(a, res, err)
		},
	}
	c.Flags().StringVar(&o.DataDir, "data", "", "the agent's data directory (required)")
	c.Flags().StringVar(&o.OutDir, "out", o.OutDir, "directory to write report.html and the PNGs to (created if missing)")
	c.Flags().StringVar(&o.EnvSpec, "env", "", "the agent's --env: evaluate the released versions on that simulator")
	flagsrc.Alias(c.Flags(), "env-spec", "env", a.stderr)
	c.Flags().BoolVar(&o.Force, "force", false, "overwrite existing outputs")
	c.Flags().Bool("json", false, "print the result as JSON")
	return c
}
