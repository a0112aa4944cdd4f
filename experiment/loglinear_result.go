package experiment

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"dprl/internal/jsonstrict"
	"dprl/ledger/accountant"
	"dprl/policy"
)

// LogLinearMethod is the method name of a LogLinearResult.
const LogLinearMethod = "dppg-loglinear"

// WriteText writes the result as dprl train prints it: the configuration,
// then one line per run.
func (r LogLinearResult) WriteText(w io.Writer) error {
	eta := "Table 2's schedule"
	if r.Eta > 0 {
		eta = fmt.Sprintf("%g", r.Eta)
	}
	fisher := fmt.Sprintf("on %d public episodes", policy.DefaultLogLinearConfig().FisherEpisodes)
	if r.FisherExact {
		fisher = "exact"
	}
	alpha := fmt.Sprintf("alpha %g", r.Alpha)
	if r.Clip > 0 {
		alpha = fmt.Sprintf("alpha per run for a first S of %g", r.Clip)
	}
	clipAt := "the current eta"
	if r.ClipAtLR0 {
		clipAt = "eta_0"
	}
	if _, err := fmt.Fprintf(w, "%s %s (p = %g, optimal value %.3f, %d episodes, K %d per update, delta %g, %s, eta %s, baseline lr %g, start logit gap %g, S at %s, KL Fisher %s with ridge %g; %.1f s):\n", r.Env, r.Method, r.P, r.Optimal, r.Episodes, r.K, r.Delta, alpha, eta, r.BaselineLR, r.InitRight, clipAt, fisher, r.FisherRidge, r.Seconds); err != nil {
		return err
	}
	for _, run := range r.Runs {
		mean, std := MeanStd(run.Final)
		if _, err := fmt.Fprintf(w, "  epsilon %s per episode (z = %.3f) %-3s alpha %.4g: cumulative regret %.1f ± %.1f over %d seeds; regret per episode first 10%% %.4g, last 10%% %.4g; S %.3g to %.3g; final values %s\n",
			accountant.FormatEpsilon(run.Epsilon), run.Z, run.Region, run.Alpha, mean, std, len(run.Final), run.FirstSlope, run.LastSlope, run.ClipFirst, run.ClipLast, formatFloats(run.FinalValue)); err != nil {
			return err
		}
	}
	return nil
}

// formatFloats formats x with two decimals, space-separated.
func formatFloats(x []float64) string {
	s := make([]string, len(x))
	for i, v := range x {
		s[i] = fmt.Sprintf("%.2f", v)
	}
	return strings.Join(s, " ")
}

// WriteTrace writes the result's Trace (every seed's released policy at
// every curve point; post-processing of the releases) as JSON Lines.
func (r LogLinearResult) WriteTrace(w io.Writer) error {
	enc := json.NewEncoder(w)
	for _, tp := range r.Trace {
		if err := enc.Encode(tp); err != nil {
			return err
		}
	}
	return nil
}

// ReadLogLinearResult reads and checks one LogLinearResult written as JSON
// (dprl train --algo dppg-loglinear --json): no unknown field, the method,
// at least one run, and as many regret points as episode counts in each.
func ReadLogLinearResult(path string) (LogLinearResult, error) {
	var r LogLinearResult
	f, err := os.Open(path)
	if err != nil {
		return r, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<30))
	if err != nil {
		return r, err
	}
	if err := jsonstrict.Decode(b, &r); err != nil {
		return r, fmt.Errorf("%s: not a dprl train --algo %s --json result: %w", path, LogLinearMethod, err)
	}
	var errs []string
	if r.Method != LogLinearMethod {
		errs = append(errs, fmt.Sprintf("method %q, want %q", r.Method, LogLinearMethod))
	}
	if len(r.Runs) == 0 {
		errs = append(errs, "no runs")
	}
	for i, run := range r.Runs {
		if len(run.Mean) == 0 || len(run.Mean) != len(run.CurveEpisodes) {
			errs = append(errs, fmt.Sprintf("runs[%d]: %d regret points for %d episode counts", i, len(run.Mean), len(run.CurveEpisodes)))
		}
	}
	if len(errs) > 0 {
		return r, errors.New(path + ": " + strings.Join(errs, "; "))
	}
	return r, nil
}

// CountRuns returns the number of runs of all the results.
func CountRuns(results []LogLinearResult) int {
	n := 0
	for _, r := range results {
		n += len(r.Runs)
	}
	return n
}
