package audit

import (
	"crypto/sha256"
	"dprl/internal/fielderr"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"text/tabwriter"
	"time"
)

// ConfigError is an error of a SuiteConfig. Its message names the
// configuration's fields ({Runs}); Render names them as the caller exposes
// them (a command line renders {Runs} as --runs). It is the one typed
// configuration error of the module (fielderr.Error).
type ConfigError = fielderr.Error

// configFields are the SuiteConfig fields a ConfigError may name.
var configFields = fielderr.Fields{"Mechanism", "Mutants", "Runs", "Confidence", "Epsilon", "Delta", "Seed"}

// SuiteConfig configures RunSuite ("dprl audit").
type SuiteConfig struct {
	// Mechanism is one of Mechanisms, or MechanismAll.
	Mechanism string `flag:"mechanism" usage:"dppg, bandmf, gpope, learn, primorl or all"`
	// Mutants adds each mechanism's miscalibrated runs (Fault) and, with
	// dppg, the broken copies of the aggregation step and the control
	// (Suite).
	Mutants bool `flag:"mutants" usage:"also audit each mechanism with noise / 2 and sensitivity x 2, the broken copies of the aggregation step and the control"`
	// Runs is the number of releases per side per canary, >= 4.
	Runs int `flag:"runs" default:"10000" usage:"releases per side (with and without the canary) per canary, >= 4"`
	// Confidence is the probability, in (0, 1), with which each bound holds.
	Confidence float64 `flag:"confidence" default:"0.95" usage:"probability with which each printed bound holds"`
	// Epsilon and Delta are the claim every target is calibrated to.
	Epsilon float64 `flag:"epsilon" default:"1" usage:"the epsilon each mechanism's noise is calibrated to (the claim)"`
	Delta   float64 `flag:"delta" default:"1e-5" usage:"the delta of the claim"`
	// Seed keys every target's randomness (TargetKey). The data are
	// synthetic and public, so the seed is part of the result.
	Seed uint64 `flag:"seed" usage:"seed of the releases' randomness (default: from the operating system)"`
	// Progress, if set, is called after every pair of releases with the
	// target's name, the pairs done and its total.
	Progress func(target string, done, total int)
}

// Validate reports the first problem as a *ConfigError: Runs, Confidence,
// then the suite (Suite: the mechanism's name and the claim, which every
// target is calibrated to).
func (c SuiteConfig) Validate() error {
	_, err := c.targets()
	return err
}

// targets validates c and returns its suite.
func (c SuiteConfig) targets() ([]Entry, error) {
	switch {
	case c.Runs < 4:
		return nil, configFields.Errorf("{Runs} %d: want >= 4", c.Runs)
	case !(c.Confidence > 0 && c.Confidence < 1):
		return nil, configFields.Errorf("{Confidence} %v: want 0 < confidence < 1", c.Confidence)
	}
	entries, err := Suite(c.Mechanism, c.Mutants, c.Epsilon, c.Delta)
	if err != nil {
		return nil, configFields.Wrap(err)
	}
	return entries, nil
}

// TargetKey is the ChaCha8 key of one target's releases: the seed and a
// hash of the target's name, so that each target's numbers depend only on
// the seed (not on which other targets run).
func TargetKey(seed uint64, target string) [32]byte {
	var k [32]byte
	binary.LittleEndian.PutUint64(k[:8], seed)
	h := sha256.Sum256([]byte("dprl audit\x00" + target))
	copy(k[8:], h[:24])
	return k
}

// SuiteResult is the audit of a suite ("dprl audit").
type SuiteResult struct {
	Runs       int     `json:"runs"`
	Confidence float64 `json:"confidence"`
	Seed       uint64  `json:"seed"`
	// Results are the targets' reports, in suite order.
	Results []SuiteReport `json:"results"`
	// Failed is true when a mechanism or the control is flagged or a
	// mutant is missed.
	Failed bool `json:"failed"`
	// Seconds is the wall time of the whole suite (operational, not a
	// statistic of any private data: the data are synthetic).
	Seconds float64 `json:"seconds"`
}

// SuiteReport is one target's report with its kind and verdict.
type SuiteReport struct {
	Kind    Kind   `json:"kind"`
	Verdict string `json:"verdict"`
	// Seconds is the wall time of the target's audit.
	Seconds float64 `json:"seconds"`
	Report
}

// RunSuite audits every target of c's suite (Run), each with a ChaCha8
// generator keyed by TargetKey(c.Seed, name). Configuration errors are
// *ConfigErrors. A failed verdict is not an error: see SuiteResult.Err.
func RunSuite(c SuiteConfig) (SuiteResult, error) {
	entries, err := c.targets()
	if err != nil {
		return SuiteResult{}, err
	}
	out := SuiteResult{Runs: c.Runs, Confidence: c.Confidence, Seed: c.Seed}
	start := time.Now()
	for _, e := range entries {
		t0 := time.Now()
		opt := Options{Runs: c.Runs, Confidence: c.Confidence}
		if c.Progress != nil {
			name := e.Target.Name
			opt.Progress = func(done, total int) { c.Progress(name, done, total) }
		}
		rep, err := Run(e.Target, opt, rand.New(rand.NewChaCha8(TargetKey(c.Seed, e.Target.Name))))
		if err != nil {
			return SuiteResult{}, err
		}
		v, bad := Verdict(e.Kind, rep)
		out.Failed = out.Failed || bad
		out.Results = append(out.Results, SuiteReport{Kind: e.Kind, Verdict: v, Seconds: time.Since(t0).Seconds(), Report: rep})
	}
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// Err returns an error naming every failed target with its verdict, or nil
// when none failed.
func (r SuiteResult) Err() error {
	var failed []string
	for _, x := range r.Results {
		if _, bad := Verdict(x.Kind, x.Report); bad {
			failed = append(failed, fmt.Sprintf("%s %s", x.Target, x.Verdict))
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return errors.New("audit: " + strings.Join(failed, "; "))
}

// WriteText writes the settings and a table of the targets: the claimed
// (epsilon, delta) and mu, the (epsilon, delta) lower bound, the
// Gaussian-DP lower bound on mu, the test that decided the verdict, the
// verdict and the target's time; then the suite's time.
func (r SuiteResult) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%d releases per side per canary, confidence %g, seed %d\n", r.Runs, r.Confidence, r.Seed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "target\tclaimed (eps, delta)\tmu\teps_lb\tmu_lb\ttest\tverdict\ttime")
	for _, x := range r.Results {
		best, mu, muLB := x.Best, "-", "-"
		if x.Claim.Mu > 0 {
			mu, muLB = fmt.Sprintf("%.3f", x.Claim.Mu), fmt.Sprintf("%.3f", x.MuLB)
			if !(x.EpsilonLB > x.Claim.Epsilon) {
				best = x.BestGDP
			}
		}
		if best == "" {
			best = "-"
		}
		fmt.Fprintf(tw, "%s\t(%.4g, %g)\t%s\t%.3f\t%s\t%s\t%s\t%.1f s\n", x.Target, x.Claim.Epsilon, x.Claim.Delta, mu, x.EpsilonLB, muLB, best, x.Verdict, x.Seconds)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d targets in %.1f s\n", len(r.Results), r.Seconds)
	return err
}
