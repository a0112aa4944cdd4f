package report

import (
	"fmt"
	"time"

	"dprl/agent/statuspage"
	"dprl/internal/chart"
)

// pngChart draws a line or histogram figure with internal/chart: its title
// carries the panel's privacy label; a time axis becomes the time since
// its first point; a histogram is drawn as its outline and each mark as a
// dashed vertical line.
func pngChart(f statuspage.PageFigure) chart.Chart {
	title := f.Title + "\n"
	if f.Note != "" {
		title += f.Note + "\n"
	}
	c := chart.Chart{Title: title + f.Privacy.Short(), XLabel: f.XLabel, YLabel: f.YLabel, Width: 7, Height: 4.2, IntX: f.IntX && !f.XTime, IntY: f.IntY}
	scale, origin := 1.0, 0.0
	if f.XTime {
		scale, origin, c.XLabel = timeAxis(f.Figure)
	}
	for _, l := range f.Lines {
		s := chart.Series{Label: l.Label, Dashed: l.Dashed, Points: l.Points && !l.Step}
		for i := range l.X {
			x := (l.X[i] - origin) / scale
			if l.Step && i > 0 { // hold the previous value until x
				s.X, s.Y = append(s.X, x), append(s.Y, l.Y[i-1])
			}
			s.X, s.Y = append(s.X, x), append(s.Y, l.Y[i])
		}
		c.Series = append(c.Series, s)
	}
	if len(f.Bins) > 0 {
		s := chart.Series{Label: f.YLabel}
		top := 0.0
		for _, b := range f.Bins {
			s.X = append(s.X, b.Lo, b.Lo, b.Hi, b.Hi)
			s.Y = append(s.Y, 0, b.Count, b.Count, 0)
			top = max(top, b.Count)
		}
		c.Series = append(c.Series, s)
		for i, m := range f.Marks {
			c.Series = append(c.Series, chart.Series{Label: m.Label, X: []float64{m.X, m.X}, Y: []float64{0, top}, Dashed: true, Color: chart.Palette(3 + i)})
		}
	}
	return c
}

// timeAxis picks the unit of a time axis from its span: minutes, hours or
// days since its first point, named in the axis label.
func timeAxis(f statuspage.Figure) (scale, origin float64, label string) {
	lo, hi := 0.0, 0.0
	first := true
	for _, l := range f.Lines {
		for _, x := range l.X {
			if first || x < lo {
				lo = x
			}
			if first || x > hi {
				hi = x
			}
			first = false
		}
	}
	unit, scale := "minutes", 60.0
	switch span := hi - lo; {
	case span > 3*86400:
		unit, scale = "days", 86400
	case span > 3*3600:
		unit, scale = "hours", 3600
	}
	return scale, lo, fmt.Sprintf("%s since %s", unit, time.Unix(int64(lo), 0).UTC().Format("2006-01-02 15:04:05 UTC"))
}
