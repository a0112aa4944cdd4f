package primorl

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"dprl/internal/chart"
	"dprl/internal/jsonstrict"
	"dprl/ledger/accountant"

	"gonum.org/v1/gonum/stat/distuv"
)

// ReadResult reads a Result written by dprl offline primorl --json.
func ReadResult(path string) (Result, error) {
	var r Result
	if err := jsonstrict.ReadFile(path, &r); err != nil {
		return Result{}, err
	}
	if r.Env == "" || math.IsNaN(r.Score) {
		return Result{}, fmt.Errorf("%s: not a dprl offline primorl result", path)
	}
	if r.Method == "" {
		r.Method = "primorl" // results written before the MOPO baseline
	}
	return r, nil
}

// Summary is the mean and spread of one configuration's runs (seeds).
type Summary struct {
	// Label is "mopo", "no privacy" or "epsilon E".
	Label   string  `json:"label"`
	Epsilon float64 `json:"epsilon,omitempty"`
	Runs    int     `json:"runs"`
	Mean    float64 `json:"mean_score"`
	Std     float64 `json:"std_score"`
	// CI95 is the half-width of the t 95% confidence interval of the mean
	// (0 for one run).
	CI95 float64 `json:"ci95"`
}

// Summaries are the configurations of a set of results (Summarize).
type Summaries []Summary

// ScoreDefinition is what a summary's score is, printed above it.
const ScoreDefinition = "score: the released policy's mean return on the simulator, on Pendulum normalised to 1000 (return + 1500) / 1500 (the PriMORL paper's)"

// WriteText writes the score's definition (ScoreDefinition), then one line
// per configuration.
func (ss Summaries) WriteText(w io.Writer) error {
	if _, err := fmt.Fprintln(w, ScoreDefinition); err != nil {
		return err
	}
	for _, s := range ss {
		runs := "runs"
		if s.Runs == 1 {
			runs = "run"
		}
		if _, err := fmt.Fprintf(w, "%-16s %d %s: score %.1f ± %.1f (95%% CI ± %.1f)\n", s.Label, s.Runs, runs, s.Mean, s.Std, s.CI95); err != nil {
			return err
		}
	}
	return nil
}

// Summarize groups results by configuration - MOPO, no privacy, and each
// epsilon (rounded to 4 significant digits, as printed) - and returns each
// group's score statistics: the baselines first, then by epsilon.
func Summarize(results []Result) Summaries {
	type key struct {
		label string
		eps   float64
	}
	groups := map[key][]float64{}
	var keys []key
	for _, r := range results {
		k := key{label: "no privacy"}
		switch {
		case r.Method == "mopo":
			k.label = "mopo"
		case r.Private:
			e := accountant.Ceil(r.Epsilon, accountant.EpsilonDigits) // as the command prints it
			k = key{label: "epsilon " + accountant.FormatEpsilon(e), eps: e}
		}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r.Score)
	}
	slices.SortFunc(keys, func(a, b key) int {
		rank := func(k key) int {
			switch k.label {
			case "mopo":
				return 0
			case "no privacy":
				return 1
			}
			return 2
		}
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		switch {
		case a.eps < b.eps:
			return -1
		case a.eps > b.eps:
			return 1
		}
		return 0
	})
	out := make(Summaries, 0, len(keys))
	for _, k := range keys {
		s := groups[k]
		var mean, v float64
		for _, x := range s {
			mean += x / float64(len(s))
		}
		for _, x := range s {
			v += (x - mean) * (x - mean)
		}
		sum := Summary{Label: k.label, Epsilon: k.eps, Runs: len(s), Mean: mean}
		if len(s) > 1 {
			sum.Std = math.Sqrt(v / float64(len(s)-1))
			t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(s) - 1)}
			sum.CI95 = t.Quantile(0.975) * sum.Std / math.Sqrt(float64(len(s)))
		}
		out = append(out, sum)
	}
	return out
}

// PaperPendulum are the PriMORL paper's Pendulum results (Table 1, 5
// seeds): the private runs' (epsilon, score), then the no-privacy and MOPO
// scores.
var PaperPendulum = struct {
	Epsilon, Score  []float64
	NoPrivacy, MOPO float64
}{Epsilon: []float64{5.1, 22.3}, Score: []float64{778.9, 817.4}, NoPrivacy: 810.4, MOPO: 795.9}

// PlotScores draws the paper's Figure 4 from summaries: the mean score
// against epsilon with bars of one standard deviation over seeds (the 95%
// confidence intervals are in the summaries), and the no-privacy
// and MOPO means as dashed horizontal lines across the epsilon range. With
// paper set (Pendulum), the paper's Table 1 points are drawn too.
func PlotScores(path, title string, sums Summaries, paper bool) error {
	var x, y, ci []float64
	for _, s := range sums {
		if s.Epsilon > 0 {
			x, y, ci = append(x, s.Epsilon), append(y, s.Mean), append(ci, s.Std)
		}
	}
	if len(x) == 0 {
		return errors.New("primorl: no private result to plot against epsilon")
	}
	c := chart.Chart{Title: title, XLabel: "epsilon (trajectory level, delta 1e-5)", YLabel: "normalised score", LogX: true, Width: 7, Height: 4.2,
		Series: []chart.Series{{Label: "PriMORL", SpreadLabel: "± 1 std over seeds", X: x, Y: y, YErr: ci, Points: true}}}
	lo, hi := slices.Min(x), slices.Max(x)
	for _, s := range sums {
		if s.Epsilon == 0 {
			c.Series = append(c.Series, chart.Series{Label: fmt.Sprintf("%s (%.0f)", s.Label, s.Mean), X: []float64{lo, hi}, Y: []float64{s.Mean, s.Mean}, Dashed: true})
		}
	}
	if paper {
		p := PaperPendulum
		c.Series = append(c.Series, chart.Series{Label: fmt.Sprintf("paper: PriMORL (no privacy %.0f, MOPO %.0f)", p.NoPrivacy, p.MOPO),
			X: p.Epsilon, Y: p.Score, Points: true, Dashed: true})
	}
	return c.Save(path)
}
