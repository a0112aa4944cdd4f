package main

import (
	"errors"

	"dprl/internal/flagsrc"
	"dprl/report"

	"github.com/spf13/cobra"
)

func newReportCmd(a *app) *cobra.Command {
	o := report.Options{OutDir: "dprl-report"}
	var asJSON bool
	c := &cobra.Command{
		Use:   "report --data DIR [--out DIR] [--env NAME] [--force]",
		Short: "Write the status page's figures from a ledger, as PNGs and one self-contained HTML file, for an audit",
		Long: `Reads the ledger of a data directory, read-only, and writes to --out the
figures of the agent's status page that the ledger holds: the policy version,
releases over time, the users' composed epsilons and, with --env (the
agent's), the released versions evaluated on that public simulator. Each
figure is a PNG; report.html holds them all with their privacy labels (inline
SVG, no script, no external resource); a multi-policy agent's models get a
section each. Stop the agent first: it holds the ledgers' locks. Existing
outputs are refused without --force.`,
		Example: `  dprl report --data ./dprl-data --env cartpole --out audit-2026-11`,
		Args:    noArgs,
		RunE: func(*cobra.Command, []string) error {
			if o.DataDir == "" {
				return usagef("--data is required")
			}
			o.Logger = a.log
			res, err := report.Write(o)
			if errors.Is(err, report.ErrExists) {
				return usageError{err}
			}
			return emit(a, asJSON, res, err)
		},
	}
	c.Flags().StringVar(&o.DataDir, "data", "", "the agent's data directory (required)")
	c.Flags().StringVar(&o.OutDir, "out", o.OutDir, "directory to write report.html and the PNGs to (created if missing)")
	c.Flags().StringVar(&o.EnvSpec, "env", "", "the agent's --env: evaluate the released versions on that simulator")
	flagsrc.Alias(c.Flags(), "env-spec", "env", a.stderr)
	c.Flags().BoolVar(&o.Force, "force", false, "overwrite existing outputs")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
