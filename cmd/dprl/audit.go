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
		Use:   "audit [--mechanism dppg|bandmf|gpope|learn|primorl|all] [--runs N] [--confidence C] [--mutants]",
		Short: "Empirical privacy audit: lower bounds on each mechanism's epsilon and mu from neighbouring inputs",
		Long: `audit runs each mechanism's real code path many times on pairs of
neighbouring inputs (white box: a canary local update, trajectory or expert
inserted beside fixed synthetic data; the auditor also knows the un-noised
values) and prints empirical lower bounds that hold with probability
--confidence: on epsilon at the claimed delta, assuming nothing, and on the
mu of the Gaussian-DP guarantee the mechanism's accounting rests on. A bound
above the claim proves the claim false (VIOLATION); bounds below it are what
a correct mechanism gives.

Mechanisms (--mechanism):
  dppg     DPPG's server step (the aggregator the agent and train use) with
           independent, tree and sqrt noise: K - 1 background local updates
           and a canary (an update 100 times the clip, or a NaN update)
           against the background alone, at the z the analytic accountant
           calibrates to (--epsilon, --delta); tree and sqrt over a horizon
           of 8 releases.
  bandmf   the same aggregator with banded noise (b = 4), the agent's
           correlated noise: the canary in the first release, the 4 releases
           that hold its column audited.
  gpope    offline GPOPE (dprl offline gtd2): a fixed log of 32 trajectories
           with and without a canary trajectory (reward 1e6, or a behaviour
           log-probability of -800, whose importance ratio overflows to +Inf),
           2 full-batch steps, at the z the PLD accountant calibrates to.
  learn    one expert-level DP-SGD step of dprl offline learn (CQL): 16
           experts with and without a canary expert (reward 1e6), q = 1.
  primorl  one round of dprl offline primorl's private ensemble training:
           16 trajectories with and without a canary (target 1e6), q = 1.
  all      every one (default).
--mutants also audits each mechanism's real code path run with half the
noise (noise / 2) and clipped at twice the norm its noise is calibrated for
(sensitivity x 2), and, with dppg, deliberately broken copies of the
aggregation step (no noise, noise / 10, unclipped, NaN pass-through, float
lattice noise) and the copy without a defect (control): every mutant must be
flagged, or the audit lacks the power to vouch for the mechanisms.

Method: half of the releases fit each test's threshold (projection on the
mean difference, projection on the un-noised difference, any non-finite
coordinate, Go's ziggurat lattice), the other half count its false
positives and negatives; one-sided Clopper-Pearson bounds on the two rates,
Bonferroni-corrected, give
epsilon >= max(log((1 - delta - FNR) / FPR), log((1 - delta - FPR) / FNR))
(Kairouz, Oh & Viswanath 2015) and, for a mu-GDP mechanism,
mu >= Phi^-1(1 - FPR) - Phi^-1(FNR) (Dong, Roth & Su 2022; Nasr et al. 2023).
The epsilon bound at delta 1e-5 cannot exceed about log(N / 12) and misses
a 2x error in the noise; the mu bound flags one at the default 10,000 runs
(the mechanisms' claimed mu is 0.27 at epsilon 1; their noise / 2 copies
show 0.4 to 0.5).

Not audited: the sparse vector technique, DP-LSW, subsampled sampling
(q < 1) and the agent end to end.

The data are synthetic and public, so the seed is printed; without --seed
it is drawn from the operating system. Each target's time is printed.
Progress goes to the log (stderr). Exit status 1 if a mechanism or the
control is flagged, or a mutant missed.`,
		Example: `  dprl audit
  dprl audit --mechanism dppg --runs 20000 --mutants --json
  dprl audit --mechanism learn --epsilon 4 --runs 600 --mutants`,
		Args: noArgs,
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
			if err := emit(a, asJSON, out, renderedUsage(err)); err != nil {
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
	fl.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
