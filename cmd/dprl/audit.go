package main

import (
	"time"

	"github.com/spf13/cobra"

	"dprl/audit"
)

func newAuditCmd(a *app) *cobra.Command {
	var f audit.SuiteConfig
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
	fl := c.Flags()
	fl.StringVar(&f.Mechanism, "mechanism", audit.MechanismAll, "dppg, bandmf, gpope, learn, primorl or all")
	fl.IntVar(&f.Runs, "runs", 10000, "releases per side (with and without the canary) per canary, >= 4")
	fl.Float64Var(&f.Confidence, "confidence", 0.95, "probability with which each printed bound holds")
	fl.Float64Var(&f.Epsilon, "epsilon", 1, "the epsilon each mechanism's noise is calibrated to (the claim)")
	fl.Float64Var(&f.Delta, "delta", 1e-5, "the delta of the claim")
	fl.Uint64Var(&f.Seed, "seed", 0, "seed of the releases' randomness (default: from the operating system)")
	fl.BoolVar(&f.Mutants, "mutants", false, "also audit each mechanism with noise / 2 and sensitivity x 2, the broken copies of the aggregation step and the control")
	fl.Bool("json", false, "print the result as JSON")
	return c
}
