package main

import (
	"time"

	"github.com/spf13/cobra"

	"dprl/audit"
)

func newAuditCmd(a *app) *cobra.Command {
	var f audit.SuiteConfig
	var asJSON bool
	c := &cobra.Command{
		Use:   "audit [--mechanism dppg|gpope|all] [--runs N] [--confidence C] [--mutants]",
		Short: "Empirical privacy audit: a lower bound on each mechanism's epsilon from neighbouring inputs",
		Long: `audit runs each mechanism's real code path many times on pairs of
neighbouring inputs (white box: canary local updates or canary trajectories
inserted beside fixed synthetic data) and prints an empirical lower bound on
its epsilon that holds with probability --confidence. A bound above the
claimed epsilon proves the claim false (VIOLATION); a bound below it is what
a correct mechanism gives.

Mechanisms (--mechanism):
  dppg   DPPG's server step (the aggregator the agent and train use) with
         independent, tree and sqrt noise: K - 1 background local updates
         and a canary (an update 100 times the clip, or a NaN update) against
         the background alone, at the z the analytic accountant calibrates
         to (--epsilon, --delta); tree and sqrt over a horizon of 8 releases.
  gpope  offline GPOPE (dprl offline gtd2): a fixed log of 32 trajectories
         with and without a canary trajectory (reward 1e6, or a behaviour
         log-probability of -800, whose importance ratio overflows to +Inf),
         2 full-batch steps, at the z the PLD accountant calibrates to.
  all    both (default).
--mutants also audits deliberately broken copies of the aggregation step
(no noise, noise / 10, unclipped, NaN pass-through, float lattice noise) and
the copy without a defect (control): every mutant must be flagged, or the
audit lacks the power to vouch for the mechanisms.

Method: half of the releases fit three tests (projection on the mean
difference, any non-finite coordinate, Go's ziggurat lattice), the other half
count each test's false positives and negatives; one-sided Clopper-Pearson
bounds on the two rates, Bonferroni-corrected over the tests, give
epsilon >= max(log((1 - delta - FNR) / FPR), log((1 - delta - FPR) / FNR))
(Kairouz, Oh & Viswanath 2015). The largest bound N runs can show is about
log(N / 2 / 6), so the claims audited must lie below it.

Not audited: the sparse vector technique, DP-LSW, subsampled GPOPE, and the
agent end to end.

The data are synthetic and public, so the seed is printed; without --seed
it is drawn from the operating system. Progress goes to the log (stderr).
Exit status 1 if a mechanism or the control is flagged, or a mutant missed.`,
		Example: `  dprl audit
  dprl audit --mechanism dppg --runs 20000 --mutants --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.Validate(); err != nil {
				return renderedUsage(err)
			}
			f.Seed, _ = seedFlag(cmd, "seed", f.Seed)
			last := time.Now()
			f.Progress = func(target string, done, total int) {
				if time.Since(last) >= 3*time.Second {
					last = time.Now()
					a.log.Info().Str("target", target).Int("pairs", done).Int("of", total).Msg("audit")
				}
			}
			out, err := audit.RunSuite(f)
			if err := emit(a, asJSON, out, renderedUsage(err)); err != nil {
				return err
			}
			return out.Err()
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.Mechanism, "mechanism", audit.MechanismAll, "dppg, gpope or all")
	fl.IntVar(&f.Runs, "runs", 10000, "releases per side (with and without the canary) per canary, >= 4")
	fl.Float64Var(&f.Confidence, "confidence", 0.95, "probability with which each printed bound holds")
	fl.Float64Var(&f.Epsilon, "epsilon", 1, "the epsilon each mechanism's noise is calibrated to (the claim)")
	fl.Float64Var(&f.Delta, "delta", 1e-5, "the delta of the claim")
	fl.Uint64Var(&f.Seed, "seed", 0, "seed of the releases' randomness (default: from the operating system)")
	fl.BoolVar(&f.Mutants, "mutants", false, "also audit the broken copies of the aggregation step and the control")
	fl.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
