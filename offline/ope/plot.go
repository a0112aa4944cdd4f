package ope

import (
	"fmt"

	"dprl/internal/chart"
)

// Plot draws the audit as a figure to path (PNG, SVG, ... by extension):
// each interval a vertical segment at its own x position with its estimate
// marked, and the lower end (private) or the high-confidence lower bound
// (non-private) as a dashed line. A figure holding the non-private report
// says so in its title.
func (r *Result) Plot(path string) error {
	c := chart.Chart{XLabel: "interval (see the legend)", YLabel: "value per " + r.Per, IntX: true, Width: 8, Height: 5}
	x := 0.0
	var lows []float64
	add := func(e Estimate, iv Interval) {
		c.Series = append(c.Series,
			chart.Series{Label: fmt.Sprintf("%s %s [%.3f, %.3f]", e.Estimator, iv.Method, iv.Lo, iv.Hi), X: []float64{x + 1, x + 1}, Y: []float64{iv.Lo, iv.Hi}, Points: true, Color: chart.Palette(int(x))},
			chart.Series{X: []float64{x + 1}, Y: []float64{e.Value}, Points: true, Color: chart.Color{A: 0xff}})
		x++
	}
	if p := r.Private; p != nil {
		add(p.Estimate, p.Estimate.Intervals[0])
		lows = append(lows, p.LowerEnd)
	}
	if np := r.NonPrivate; np != nil {
		ests := np.Episodes
		if np.Report != nil {
			ests = np.Report.Estimates
		}
		for _, e := range ests {
			for _, iv := range e.Intervals {
				if iv.Method == MethodEL || iv.Method == MethodWald {
					add(e, iv)
				}
			}
		}
	}
	if x == 0 {
		return fmt.Errorf("ope: nothing to plot")
	}
	line := func(label string, v float64, col chart.Color) {
		c.Series = append(c.Series, chart.Series{Label: label, X: []float64{0.5, x + 0.5}, Y: []float64{v, v}, Dashed: true, Color: col})
	}
	if len(lows) > 0 {
		line(fmt.Sprintf("private lower end %.3f", lows[0]), lows[0], chart.Color{R: 0xd6, G: 0x27, B: 0x28, A: 0xff})
	}
	c.Title = fmt.Sprintf("Audit of %s: %.0f%% intervals", r.Target, 100*r.Level)
	if np := r.NonPrivate; np != nil {
		if np.Report != nil {
			line(fmt.Sprintf("hcope lower bound %.3f (non-private)", np.Report.LowerBound.Value), np.Report.LowerBound.Value, chart.Color{R: 0x55, G: 0x55, B: 0x55, A: 0xff})
		}
		c.Title += " (includes NOT differentially private estimates)"
	}
	return c.Save(path)
}
