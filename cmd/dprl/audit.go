package main

import (
	"time"

	"github.com/spf13/cobra"

	"dprl/audit"
	"dprl/cmd/dprl/cliflags"
)

func newAuditCmd(a *app) *cobra.Command {
	f := audit.SuiteConfig{Mechanism: audit.MechanismAll} // the default of --mechanism
	c := &cobra.Command{
		Use:   "audit [--mechanism dppg|bandmf|gpope|learn|primorl|all] [--runs N] [--confidence C] [--mutants]",
		Short: "Empirical privacy audit: lower bounds on each mechanism's epsilon and mu from neighbouring inputs",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.Validate(); err != nil {
				return renderedUsage(err)
			}
			f.Seed = seedFlag(cmd, "seed", f.Seed)
			last := time.Now()
			f.Progress = func(target string, done, total int) {
				if time.Since(last) >= 3*time.Second {
					last = time.Now()
					a.log.Info().Str("target", target).Int("pairs", done).Int("of", total).Msg("audit")
				}
			}
			out, err := audit.RunSuite(f)
			if err := emit(a, out, renderedUsage(err)); err != nil {
				return err
			}
			return out.Err()
		},
	}
	fl := cliflags.New(c.Flags(), &f)
	fl.Bool("json", false, "print the result as JSON")
	return c
}
