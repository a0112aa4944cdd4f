package chart

import (
	"math"
	"strings"

	"dprl/internal/ticks"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// roundTicks marks a linear axis at round values (ticks.Within; whole
// numbers only when integer), each labelled with the fewest decimals that
// tell the ticks apart (ticks.Labels): "-750", never gonum's "-750.00".
type roundTicks struct{ integer bool }

// Ticks implements plot.Ticker.
func (r roundTicks) Ticks(lo, hi float64) []plot.Tick {
	vs := ticks.Within(lo, hi, 5, r.integer)
	labels := ticks.Labels(vs)
	out := make([]plot.Tick, len(vs))
	for i, v := range vs {
		out[i] = plot.Tick{Value: v, Label: labels[i]}
	}
	return out
}

// The legend's layout: legendPad is the blank space inside its box,
// legendInset its distance from the plot's edges, legendClear the least
// distance between its box and any data, legendGap the space between the
// plot and a legend outside it.
const (
	legendPad   = vg.Length(3)
	legendInset = vg.Length(4)
	legendClear = vg.Length(5)
	legendGap   = vg.Length(10)
)

// legendEntry is one line of the legend: a label and its mark.
type legendEntry struct {
	label string
	mark  plot.Thumbnailer
}

// geometry is what a chart draws, in data coordinates, for placing the
// legend clear of it: lines (polylines), bands (closed polygons), error
// bars (vertical segments with caps) and markers.
type geometry struct {
	lines, bands, bars []plotter.XYs
	points             plotter.XYs
	legend             []legendEntry
}

// newLegend is the legend of entries, drawn from the top left of its
// canvas.
func newLegend(entries []legendEntry) plot.Legend {
	l := plot.NewLegend()
	l.Top, l.Left = true, true
	for _, e := range entries {
		l.Add(e.label, e.mark)
	}
	return l
}

// legendSize is the size of the legend's box, its padding included.
func legendSize(entries []legendEntry) vg.Point {
	l := newLegend(entries)
	sty := l.TextStyle
	var w, h vg.Length
	for _, e := range entries {
		w = max(w, sty.Width(e.label))
		h = max(h, sty.Rectangle(e.label).Max.Y)
	}
	n := vg.Length(len(entries))
	return vg.Point{
		X: l.ThumbnailWidth + sty.Rectangle(" ").Max.X + w + 2*legendPad,
		Y: n*h + (n-1)*l.Padding + sty.FontExtents().Descent + 2*legendPad,
	}
}

// drawLegend fills box with the background and draws the legend in it.
func drawLegend(c draw.Canvas, entries []legendEntry, box vg.Rectangle) {
	c.SetColor(Color{0xff, 0xff, 0xff, 0xff})
	c.Fill(box.Path())
	l := newLegend(entries)
	inner := vg.Rectangle{Min: vg.Point{X: box.Min.X + legendPad, Y: box.Min.Y + legendPad}, Max: vg.Point{X: box.Max.X - legendPad, Y: box.Max.Y - legendPad}}
	l.Draw(draw.Canvas{Canvas: c.Canvas, Rectangle: inner})
}

// place returns the legend's box in area (the plot's canvas): in the first
// corner of the data canvas, of top left, top right, bottom left and
// bottom right, whose box is at least legendClear from all the data; else
// outside (true), its top at the data canvas's, its left edge at 0 (Write
// moves it right of the plot).
func (g *geometry) place(p *plot.Plot, area draw.Canvas) (vg.Rectangle, bool) {
	if len(g.legend) == 0 {
		return vg.Rectangle{}, false
	}
	size := legendSize(g.legend)
	dc := p.DataCanvas(area)
	corners := []vg.Point{
		{X: dc.Min.X + legendInset, Y: dc.Max.Y - legendInset - size.Y},
		{X: dc.Max.X - legendInset - size.X, Y: dc.Max.Y - legendInset - size.Y},
		{X: dc.Min.X + legendInset, Y: dc.Min.Y + legendInset},
		{X: dc.Max.X - legendInset - size.X, Y: dc.Min.Y + legendInset},
	}
	for _, at := range corners {
		box := vg.Rectangle{Min: at, Max: at.Add(size)}
		if box.Min.X >= dc.Min.X && box.Max.X <= dc.Max.X && box.Min.Y >= dc.Min.Y && box.Max.Y <= dc.Max.Y && !g.hits(p, dc, grow(box, legendClear)) {
			return box, false
		}
	}
	return vg.Rectangle{Min: vg.Point{Y: dc.Max.Y - size.Y}, Max: vg.Point{X: size.X, Y: dc.Max.Y}}, true
}

// grow returns r with d added on every side.
func grow(r vg.Rectangle, d vg.Length) vg.Rectangle {
	return vg.Rectangle{Min: vg.Point{X: r.Min.X - d, Y: r.Min.Y - d}, Max: vg.Point{X: r.Max.X + d, Y: r.Max.Y + d}}
}

// markerRadius bounds a marker's extent from its point (gonum's glyph
// radius, 2.5 points, and its outline), capHalf an error bar cap's half
// width (gonum's default cap, 5 points wide).
const (
	markerRadius = vg.Length(3.5)
	capHalf      = vg.Length(2.5)
)

// hits reports whether r (in canvas coordinates) meets any of the data
// drawn on dc.
func (g *geometry) hits(p *plot.Plot, dc draw.Canvas, r vg.Rectangle) bool {
	tx, ty := p.Transforms(&dc)
	pt := func(xy plotter.XY) vg.Point { return vg.Point{X: tx(xy.X), Y: ty(xy.Y)} }
	for _, l := range g.lines {
		for i := range l {
			if i == 0 && len(l) == 1 && segmentMeets(pt(l[0]), pt(l[0]), r) {
				return true
			}
			if i > 0 && segmentMeets(pt(l[i-1]), pt(l[i]), r) {
				return true
			}
		}
	}
	for _, b := range g.bars {
		lo, hi := pt(b[0]), pt(b[1])
		if overlaps(vg.Rectangle{Min: vg.Point{X: lo.X - capHalf, Y: min(lo.Y, hi.Y)}, Max: vg.Point{X: lo.X + capHalf, Y: max(lo.Y, hi.Y)}}, r) {
			return true
		}
	}
	for _, xy := range g.points {
		c := pt(xy)
		if overlaps(vg.Rectangle{Min: vg.Point{X: c.X - markerRadius, Y: c.Y - markerRadius}, Max: vg.Point{X: c.X + markerRadius, Y: c.Y + markerRadius}}, r) {
			return true
		}
	}
	for _, band := range g.bands {
		poly := make([]vg.Point, len(band))
		for i, xy := range band {
			poly[i] = pt(xy)
		}
		for i := range poly {
			if segmentMeets(poly[i], poly[(i+1)%len(poly)], r) {
				return true
			}
		}
		if inPolygon(vg.Point{X: (r.Min.X + r.Max.X) / 2, Y: (r.Min.Y + r.Max.Y) / 2}, poly) {
			return true
		}
	}
	return false
}

// overlaps reports whether two rectangles share a point.
func overlaps(a, b vg.Rectangle) bool {
	return a.Min.X <= b.Max.X && b.Min.X <= a.Max.X && a.Min.Y <= b.Max.Y && b.Min.Y <= a.Max.Y
}

// segmentMeets reports whether the segment from a to b meets r: clipped to
// r's slab in x and then in y (Liang and Barsky), something is left.
func segmentMeets(a, b vg.Point, r vg.Rectangle) bool {
	t0, t1 := 0.0, 1.0
	dx, dy := float64(b.X-a.X), float64(b.Y-a.Y)
	clip := func(p, q float64) bool { // p t <= q
		switch {
		case p == 0:
			return q >= 0
		case p < 0:
			t0 = math.Max(t0, q/p)
		default:
			t1 = math.Min(t1, q/p)
		}
		return t0 <= t1
	}
	return clip(-dx, float64(a.X-r.Min.X)) && clip(dx, float64(r.Max.X-a.X)) &&
		clip(-dy, float64(a.Y-r.Min.Y)) && clip(dy, float64(r.Max.Y-a.Y))
}

// inPolygon reports whether c is inside the polygon (even-odd rule).
func inPolygon(c vg.Point, poly []vg.Point) bool {
	in := false
	for i, j := 0, len(poly)-1; i < len(poly); j, i = i, i+1 {
		a, b := poly[i], poly[j]
		if (a.Y > c.Y) != (b.Y > c.Y) && c.X < (b.X-a.X)*(c.Y-a.Y)/(b.Y-a.Y)+a.X {
			in = !in
		}
	}
	return in
}

// wrapAxisLabels breaks an axis label longer than its axis (the data
// canvas's side in area) into lines at spaces, so that it is not drawn
// past the figure's edges; y is the y label when the chart draws it
// itself (takeLogYLabel).
func wrapAxisLabels(p *plot.Plot, y *yLabel, area draw.Canvas) {
	dc := p.DataCanvas(y.crop(area))
	p.Y.Label.Text = wrap(p.Y.Label.Text, p.Y.Label.TextStyle, 0.95*(dc.Max.Y-dc.Min.Y))
	y.text = wrap(y.text, y.style, 0.95*(dc.Max.Y-dc.Min.Y))
	p.X.Label.Text = wrap(p.X.Label.Text, p.X.Label.TextStyle, 0.95*(dc.Max.X-dc.Min.X))
}

// yLabel is a y axis label the chart draws itself, left of the plot and
// centred on its data. gonum pads a logarithmic y axis for its label as if
// the label were centred on the arithmetic mean of the axis's range (far
// up the log axis), which leaves a blank band under the title and clips a
// long label; text "" leaves the label to gonum.
type yLabel struct {
	text  string
	style text.Style
	pad   vg.Length
}

// takeLogYLabel takes a logarithmic y axis's label out of p, to be drawn
// by the chart; a linear axis's label stays with gonum (zero yLabel).
func takeLogYLabel(p *plot.Plot) yLabel {
	if _, log := p.Y.Scale.(plot.LogScale); !log || p.Y.Label.Text == "" {
		return yLabel{}
	}
	l := yLabel{text: p.Y.Label.Text, style: p.Y.Label.TextStyle, pad: p.Y.Label.Padding}
	p.Y.Label.Text = ""
	return l
}

// crop returns area less the label's strip at its left.
func (l yLabel) crop(area draw.Canvas) draw.Canvas {
	if l.text == "" {
		return area
	}
	return draw.Crop(area, l.style.Height(l.text)+l.pad, 0, 0, 0)
}

// draw writes the label in area's left strip, rotated, centred on the
// plot's data canvas.
func (l yLabel) draw(p *plot.Plot, area draw.Canvas) {
	if l.text == "" {
		return
	}
	dc := p.DataCanvas(l.crop(area))
	sty := l.style
	sty.Rotation += math.Pi / 2
	x := area.Min.X + l.style.Height(l.text) - l.style.FontExtents().Descent
	area.FillText(sty, vg.Point{X: x, Y: (dc.Min.Y + dc.Max.Y) / 2}, l.text)
}

// wrap breaks s into lines of at most width in style sty, at spaces (a
// word longer than width stays whole on its line).
func wrap(s string, sty interface{ Width(string) vg.Length }, width vg.Length) string {
	if !strings.Contains(s, " ") || sty.Width(s) <= width {
		return s
	}
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case sty.Width(line+" "+w) <= width:
			line += " " + w
		default:
			lines, line = append(lines, line), w
		}
	}
	return strings.Join(append(lines, line), "\n")
}
