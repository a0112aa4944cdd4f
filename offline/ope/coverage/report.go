package coverage

import (
	"fmt"
	"io"
	"slices"

	"dprl/internal/chart"
)

// WriteText prints the study: the setting, then one table per privacy
// level (coverage with its standard error, mean width, the width over the
// oracle's, bias), then the lower bound's validity.
func (r *Result) WriteText(w io.Writer) error {
	pr := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	pr("%s\n", r.Simulation)
	pr("logger: %s; target: %s\n", r.Logger, r.Target)
	how := "exact, held-out users"
	if r.Per == "episode" {
		how = "Monte Carlo"
	}
	pr("true value %.4f per %s (%s); public weight bound %.4g; %d logs per size; nominal %.2f\n", r.Truth, r.Per, how, r.WeightBound, r.Reps, r.Level)
	eps := -1.0
	for _, row := range r.Rows {
		if row.Epsilon != eps {
			eps = row.Epsilon
			if eps == 0 {
				pr("\nnon-private\n")
			} else {
				pr("\nprivate, epsilon %g (z %.4g)\n", eps, r.NoiseMultipliers[fmt.Sprint(eps)])
			}
			pr("%6s  %-9s %-24s %9s %6s %8s %7s %8s\n", "n", "estimator", "interval", "coverage", "(se)", "width", "/oracle", "bias")
		}
		pr("%6d  %-9s %-24s %9.3f %6.3f %8.4f %7.2f %+8.4f\n", row.N, row.Estimator, row.Method, row.Coverage, row.CoverageSE, row.MeanWidth, row.WidthRatio, row.Bias)
	}
	if len(r.Bounds) > 0 {
		pr("\nlower bound (hcope), at or below the truth:\n")
		for _, b := range r.Bounds {
			pr("%6d  %.3f of logs, mean %.4f\n", b.N, b.Valid, b.Mean)
		}
	}
	return nil
}

// plotted says which intervals the figure shows (the table has them all):
// the recommended one, the usual asymptotic and bootstrap ones, and the
// private ones.
func plotted(r Row) bool {
	switch r.Estimator + " " + r.Method {
	case "EL empirical-likelihood", "IPS wald", "IPS percentile-bootstrap", "SNIPS wald", "DR wald",
		"EL-episode empirical-likelihood", "PDIS wald", "PDIS percentile-bootstrap", "PDWIS wald", "DR-episode wald", "WDR-episode wald":
		return true
	}
	return r.Epsilon > 0
}

// Plot draws coverage against n, one line per interval of plotted (the
// private ones dashed), with the nominal level, to path (PNG, SVG, ... by
// extension).
func (r *Result) Plot(path string) error {
	type id struct {
		eps       float64
		est, meth string
	}
	var ids []id
	byID := map[id]*chart.Series{}
	for _, row := range r.Rows {
		if !plotted(row) {
			continue
		}
		k := id{row.Epsilon, row.Estimator, row.Method}
		s := byID[k]
		if s == nil {
			label := row.Estimator + " " + row.Method
			if row.Epsilon > 0 {
				label = fmt.Sprintf("%s, epsilon %g", label, row.Epsilon)
			}
			s = &chart.Series{Label: label, Points: true, Dashed: row.Epsilon > 0}
			byID[k] = s
			ids = append(ids, k)
		}
		s.X = append(s.X, float64(row.N))
		s.Y = append(s.Y, row.Coverage)
		s.YErr = append(s.YErr, row.CoverageSE)
	}
	c := chart.Chart{Title: "Coverage of nominal 95% intervals on simulated " + r.Env + " logs (simulation only)", XLabel: "logged " + r.Per + "s n", YLabel: "coverage", LogX: true, Width: 8, Height: 5.5}
	var xs []float64
	for _, row := range r.Rows {
		if !slices.Contains(xs, float64(row.N)) {
			xs = append(xs, float64(row.N))
		}
	}
	slices.Sort(xs)
	nominal := make([]float64, len(xs))
	for i := range nominal {
		nominal[i] = r.Level
	}
	c.Series = append(c.Series, chart.Series{Label: "nominal", X: xs, Y: nominal, Color: chart.Color{R: 0x55, G: 0x55, B: 0x55, A: 0xff}, Dashed: true})
	for _, k := range ids {
		c.Series = append(c.Series, *byID[k])
	}
	return c.Save(path)
}
