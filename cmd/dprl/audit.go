package main

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"dprl/audit"
)

// auditFlags holds the flags of "dprl audit".
type auditFlags struct {
	mechanism      string
	runs           int
	confidence     float64
	epsilon, delta float64
	seed           uint64
	mutants        bool
	json           bool
}

// auditOutput is the result of "dprl audit".
type auditOutput struct {
	Runs       int           `json:"runs"`
	Confidence float64       `json:"confidence"`
	Seed       uint64        `json:"seed"`
	Results    []auditResult `json:"results"`
	// Failed is true when a mechanism or the control is flagged or a
	// mutant is missed (exit status 1).
	Failed bool `json:"failed"`
}

// auditResult is one target's report with its kind and verdict.
type auditResult struct {
	Kind    audit.Kind `json:"kind"`
	Verdict string     `json:"verdict"`
	audit.Report
}

func newAuditCmd(a *app) *cobra.Command {
	var f auditFlags
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
         2 full-batch steps, at the z the RDP accountant calibrates to.
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
			switch {
			case f.runs < 4:
				return usagef("--runs %d: want >= 4", f.runs)
			case !(f.confidence > 0 && f.confidence < 1):
				return usagef("--confidence %v: want 0 < confidence < 1", f.confidence)
			}
			entries, err := audit.Suite(f.mechanism, f.mutants, f.epsilon, f.delta)
			if err != nil {
				return usageError{err}
			}
			seed, err := seedFlag(cmd, "seed", f.seed)
			if err != nil {
				return err
			}
			out := auditOutput{Runs: f.runs, Confidence: f.confidence, Seed: seed}
			var failed []string
			for _, e := range entries {
				last := time.Now()
				opt := audit.Options{Runs: f.runs, Confidence: f.confidence, Progress: func(done, total int) {
					if time.Since(last) >= 3*time.Second {
						last = time.Now()
						a.log.Info().Str("target", e.Target.Name).Int("pairs", done).Int("of", total).Msg("audit")
					}
				}}
				rep, err := audit.Run(e.Target, opt, rand.New(rand.NewChaCha8(auditKey(seed, e.Target.Name))))
				if err != nil {
					return err
				}
				v, bad := audit.Verdict(e.Kind, rep)
				if bad {
					failed = append(failed, fmt.Sprintf("%s %s", e.Target.Name, v))
				}
				out.Results = append(out.Results, auditResult{Kind: e.Kind, Verdict: v, Report: rep})
			}
			out.Failed = len(failed) > 0
			if err := emit(a.stdout, f.json, out, out.text); err != nil {
				return err
			}
			if out.Failed {
				return fmt.Errorf("audit: %s", strings.Join(failed, "; "))
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.mechanism, "mechanism", audit.MechanismAll, "dppg, gpope or all")
	fl.IntVar(&f.runs, "runs", 10000, "releases per side (with and without the canary) per canary, >= 4")
	fl.Float64Var(&f.confidence, "confidence", 0.95, "probability with which each printed bound holds")
	fl.Float64Var(&f.epsilon, "epsilon", 1, "the epsilon each mechanism's noise is calibrated to (the claim)")
	fl.Float64Var(&f.delta, "delta", 1e-5, "the delta of the claim")
	fl.Uint64Var(&f.seed, "seed", 0, "seed of the releases' randomness (default: from the operating system)")
	fl.BoolVar(&f.mutants, "mutants", false, "also audit the broken copies of the aggregation step and the control")
	fl.BoolVar(&f.json, "json", false, "print the result as JSON")
	return c
}

// auditKey is the ChaCha8 key of one target's releases: the seed and a hash
// of the target's name, so that each target's numbers depend only on the
// seed (not on which other targets run).
func auditKey(seed uint64, target string) [32]byte {
	var k [32]byte
	binary.LittleEndian.PutUint64(k[:8], seed)
	h := sha256.Sum256([]byte("dprl audit\x00" + target))
	copy(k[8:], h[:24])
	return k
}

func (o auditOutput) text(w io.Writer) error {
	fmt.Fprintf(w, "%d releases per side per canary, confidence %g, seed %d\n", o.Runs, o.Confidence, o.Seed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "target\tclaimed (eps, delta)\teps_lb\ttest\tverdict")
	for _, r := range o.Results {
		best := r.Best
		if best == "" {
			best = "-"
		}
		fmt.Fprintf(tw, "%s\t(%.4g, %g)\t%.3f\t%s\t%s\n", r.Target, r.Claim.Epsilon, r.Claim.Delta, r.EpsilonLB, best, r.Verdict)
	}
	return tw.Flush()
}
