package main

import (
	"errors"

	"dprl/cmd/dprl/cliflags"
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
	cliflags.New(c.Flags(), &o)
	flagsrc.Alias(c.Flags(), "env-spec", "env", a.stderr)
	c.Flags().Bool("json", false, "print the result as JSON")
	return c
}
