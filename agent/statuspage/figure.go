package statuspage

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"dprl/internal/ticks"
)

// Figure is one chart of the page: lines, categorical bars or a
// histogram, drawn as inline SVG on the page (SVG) and as PNG by the
// report (package report). It holds only the values it shows.
type Figure struct {
	// ID names the figure's file in a report (ID.png); lower case,
	// digits and dashes.
	ID                    string
	Title, XLabel, YLabel string
	// Note is a line under the title (what the values are).
	Note string
	// XTime says X values are Unix seconds (drawn as UTC times).
	XTime bool
	// IntX and IntY put the ticks of an axis of whole numbers (versions,
	// counts) on whole numbers only.
	IntX, IntY bool
	Lines      []Line
	// Bars are categorical bars, in order.
	Bars []Bar
	// Bins are a histogram's bins on a numeric X axis.
	Bins []Bin
	// Marks are vertical reference lines (a cap, the worst user).
	Marks []Mark
}

// Line is one series of a line chart.
type Line struct {
	Label  string
	X, Y   []float64
	Dashed bool
	// Points marks every point.
	Points bool
	// Step draws a step function: each value holds until the next X.
	Step bool
	// NoMarkLast leaves the last point unmarked (a value carried to now).
	NoMarkLast bool
}

// Bar is one categorical bar.
type Bar struct {
	Label string
	Value float64
}

// Bin is one histogram bin [Lo, Hi) and its count.
type Bin struct {
	Lo, Hi, Count float64
}

// Mark is a vertical reference line at X.
type Mark struct {
	X     float64
	Label string
}

// Empty reports whether the figure has nothing to draw.
func (f Figure) Empty() bool {
	for _, l := range f.Lines {
		if len(l.X) > 0 {
			return false
		}
	}
	return len(f.Bars) == 0 && len(f.Bins) == 0
}

// The SVG canvas, in user units (the SVG scales to its container); a
// bar chart with slanted labels is taller.
const (
	svgW, svgH                   = 560.0, 260.0
	padL, padR, padTop, padBelow = 62.0, 28.0, 30.0, 46.0
)

// seriesColors are the lines' and bars' colours (matplotlib's tab10, as
// internal/chart), and markColor the reference lines'.
var seriesColors = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"}

const markColor = "#d62728"

// svgFigure is a Figure laid out for the template: every coordinate a
// formatted number, every text a string the template escapes.
type svgFigure struct {
	ID, Title, XLabel, YLabel string
	Note                      string
	W, H                      string
	PlotX, PlotY, PlotW       string
	PlotH, PlotBottom         string
	PlotRight                 string
	XLabelX, XLabelY          string
	YLabelX, YLabelY          string
	XTicks, YTicks            []svgTick
	Paths                     []svgPath
	Dots                      []svgDot
	Rects                     []svgRect
	Marks                     []svgMark
	Legend                    []svgLegend
	// Desc is the figure's text alternative (its values in words).
	Desc  string
	Empty bool
}

type svgTick struct{ X1, Y1, X2, Y2, TX, TY, Label, Anchor string }
type svgPath struct {
	D, Color, Dash string
	label          string
}
type svgDot struct{ X, Y, Color, Title string }
type svgRect struct{ X, Y, W, H, Color, Title, LX, LY, Label, Anchor, Rotate string }
type svgMark struct{ X, Y1, Y2, TX, TY, Label, Anchor string }
type svgLegend struct{ X, Y, LX, LY, Color, Label, Dash string }

func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// SVG lays the figure out for the page's template. Nothing is drawn over
// the data but the grid: a line chart's legend and its marks' labels go in
// rows above the plot (the marks' labels nearest it, each in its own row,
// at its line), and a bar chart's slanted labels get the room they need
// below and left of the plot.
func (f Figure) SVG() svgFigure {
	below, left, top := padBelow, padL, padTop
	rotate := false
	if len(f.Bars) > 0 {
		// Bar labels that do not fit their slot are drawn slanted, with
		// room below the plot for the longest and left of it for the
		// first ones (each ends at its bar, reaching left and down).
		longest := 0
		for _, b := range f.Bars {
			longest = max(longest, utf8.RuneCountInString(b.Label))
		}
		if slot := (svgW - padL - padR) / float64(len(f.Bars)); float64(longest)*charW > slot*0.95 {
			rotate = true
			below = max(padBelow, 22+float64(longest)*charW*slant)
			for range 2 { // the slot narrows as the plot moves right
				slot := (svgW - left - padR) / float64(len(f.Bars))
				for i, b := range f.Bars {
					reach := float64(utf8.RuneCountInString(b.Label))*charW*slant + edgePad
					left = max(left, reach-slot*(float64(i)+0.5))
				}
			}
		}
	}
	var legend [][]Line
	if len(f.Bars) == 0 {
		legend = legendRows(f.Lines, svgW-padL-padR)
		if rows := len(legend) + len(f.Marks); rows > 0 {
			top = max(padTop, 28+rowH*float64(rows-1))
		}
	}
	h := svgH + below - padBelow + top - padTop
	out := svgFigure{ID: f.ID, Title: f.Title, Note: f.Note, XLabel: f.XLabel, YLabel: f.YLabel, W: num(svgW), H: num(h),
		PlotX: num(left), PlotY: num(top), PlotW: num(svgW - left - padR), PlotH: num(h - top - below), PlotRight: num(svgW - padR),
		PlotBottom: num(h - below), XLabelX: num(left + (svgW-left-padR)/2), XLabelY: num(h - 6),
		YLabelX: "14", YLabelY: num(top + (h-top-below)/2), Empty: f.Empty()}
	if out.Empty {
		out.Desc = f.Title + ": nothing to show yet"
		return out
	}
	x0, x1 := left, svgW-padR
	y0, y1 := h-below, top // y0 is the bottom
	switch {
	case len(f.Bars) > 0:
		f.layoutBars(&out, x0, x1, y0, y1, rotate)
	default:
		f.layoutXY(&out, x0, x1, y0, y1)
		layoutLegend(&out, legend, x0, y1-markRowsH(len(f.Marks)))
	}
	return out
}

// The rows above a line chart's plot: rowH apart, the nearest's baseline
// rowGap above the plot; edgePad is the least space between a label and
// the SVG's edge; slant is the horizontal (and vertical) reach of a
// slanted label per unit of its length (cos 45°).
const (
	rowH    = 15.0
	rowGap  = 12.0
	edgePad = 4.0
	slant   = 0.71
)

// markRowsH is the height the marks' rows take above the plot.
func markRowsH(marks int) float64 { return rowH * float64(marks) }

// legendEntryW is the width a legend entry takes in its row: its line,
// its label and the gap to the next entry.
func legendEntryW(label string) float64 {
	return 26 + charW*float64(utf8.RuneCountInString(label)) + 16
}

// legendRows puts the labelled lines into rows of at most width.
func legendRows(lines []Line, width float64) [][]Line {
	var rows [][]Line
	used := width
	for _, l := range lines {
		if l.Label == "" {
			continue
		}
		w := legendEntryW(l.Label)
		if used+w > width && used > 0 {
			rows, used = append(rows, nil), 0
		}
		rows[len(rows)-1] = append(rows[len(rows)-1], l)
		used += w
	}
	return rows
}

// layoutLegend draws the legend's rows above bottom, each starting at x0,
// the last row nearest (its baseline rowGap above bottom); each entry
// takes its line's colour and dash (set by layoutXY in out.Paths, in the
// lines' order).
func layoutLegend(out *svgFigure, rows [][]Line, x0, bottom float64) {
	k := 0
	for r, row := range rows {
		y := bottom - rowGap - rowH*float64(len(rows)-1-r)
		x := x0
		for _, l := range row {
			p := out.Paths[k]
			for out.Paths[k].label != l.Label {
				k++
				p = out.Paths[k]
			}
			k++
			out.Legend = append(out.Legend, svgLegend{X: num(x), Y: num(y - 4), LX: num(x + 22), LY: num(y), Color: p.Color, Label: l.Label, Dash: p.Dash})
			x += legendEntryW(l.Label)
		}
	}
}

// charW is the width of a label character, in user units (11px text).
const charW = 6.2

// layoutBars draws categorical bars from 0; rotate slants their labels.
func (f Figure) layoutBars(out *svgFigure, x0, x1, y0, y1 float64, rotate bool) {
	hi := 0.0
	for _, b := range f.Bars {
		hi = max(hi, b.Value)
	}
	ys := ticks.Cover(0, hi, 5, f.IntY)
	top := ys[len(ys)-1]
	sy := func(v float64) float64 { return y0 - (y0-y1)*v/top }
	out.YTicks = yTicks(ys, sy, x0, x1)
	slot := (x1 - x0) / float64(len(f.Bars))
	var desc []string
	for i, b := range f.Bars {
		x := x0 + slot*float64(i) + slot*0.15
		y := sy(b.Value)
		v := formatNum(b.Value)
		r := svgRect{X: num(x), Y: num(y), W: num(slot * 0.7), H: num(y0 - y), Color: seriesColors[0],
			Title: b.Label + ": " + v, LX: num(x + slot*0.35), LY: num(y0 + 14), Label: b.Label, Anchor: "middle"}
		if rotate {
			r.Anchor, r.LY = "end", num(y0+10)
			r.Rotate = fmt.Sprintf("rotate(-45 %s %s)", r.LX, r.LY)
		}
		out.Rects = append(out.Rects, r)
		desc = append(desc, b.Label+" "+v)
	}
	out.Desc = f.Title + ": " + strings.Join(desc, ", ")
}

// layoutXY draws lines, histogram bins and marks on numeric axes.
func (f Figure) layoutXY(out *svgFigure, x0, x1, y0, y1 float64) {
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), 0.0, math.Inf(-1)
	see := func(x, y float64) {
		if isFinite(x) && isFinite(y) {
			xlo, xhi, ylo, yhi = min(xlo, x), max(xhi, x), min(ylo, y), max(yhi, y)
		}
	}
	for _, l := range f.Lines {
		for i := range l.X {
			see(l.X[i], l.Y[i])
		}
	}
	for _, b := range f.Bins {
		see(b.Lo, b.Count)
		see(b.Hi, 0)
	}
	for _, m := range f.Marks {
		see(m.X, 0)
	}
	if xlo == xhi {
		xlo, xhi = xlo-1, xhi+1
	}
	if yhi <= ylo {
		yhi = ylo + 1
	}
	var xs []float64
	var xlabels []string
	fx := formatNum
	if f.XTime {
		var step float64
		xs, step = timeTicks(xlo, xhi)
		fx = func(v float64) string { return formatTime(v, step) }
		for _, v := range xs {
			xlabels = append(xlabels, fx(v))
		}
	} else {
		xs = ticks.Cover(xlo, xhi, 6, f.IntX)
		xlabels = ticks.Labels(xs)
	}
	ys := ticks.Cover(ylo, yhi, 5, f.IntY)
	xa, xb, ya, yb := min(xs[0], xlo), max(xs[len(xs)-1], xhi), ys[0], ys[len(ys)-1]
	sx := func(v float64) float64 { return x0 + (x1-x0)*(v-xa)/(xb-xa) }
	sy := func(v float64) float64 { return y0 - (y0-y1)*(v-ya)/(yb-ya) }
	out.YTicks = yTicks(ys, sy, x0, x1)
	for i, v := range xs {
		if v < xa || v > xb {
			continue
		}
		x := sx(v)
		t := svgTick{X1: num(x), Y1: num(y0), X2: num(x), Y2: num(y1), TX: num(x), TY: num(y0 + 16), Label: xlabels[i], Anchor: "middle"}
		if w := charW * float64(utf8.RuneCountInString(t.Label)); x+w/2 > svgW {
			t.Anchor = "end" // a label that would leave the canvas ends at its tick
		}
		out.XTicks = append(out.XTicks, t)
	}
	var desc []string
	for _, b := range f.Bins {
		xl, xr, y := sx(b.Lo), sx(b.Hi), sy(b.Count)
		title := fmt.Sprintf("%s to %s: %s", formatNum(b.Lo), formatNum(b.Hi), formatNum(b.Count))
		out.Rects = append(out.Rects, svgRect{X: num(xl + 0.5), Y: num(y), W: num(max(xr-xl-1, 1)), H: num(y0 - y), Color: seriesColors[0], Title: title})
		desc = append(desc, title)
	}
	for i, l := range f.Lines {
		color := seriesColors[i%len(seriesColors)]
		var d strings.Builder
		pen := "M"
		for j := range l.X {
			if !isFinite(l.X[j]) || !isFinite(l.Y[j]) {
				pen = "M"
				continue
			}
			if l.Step && pen == "L" {
				fmt.Fprintf(&d, "H%s ", num(sx(l.X[j])))
			}
			fmt.Fprintf(&d, "%s%s %s ", pen, num(sx(l.X[j])), num(sy(l.Y[j])))
			pen = "L"
			if (l.Points || len(l.X) == 1) && !(l.NoMarkLast && j == len(l.X)-1) {
				out.Dots = append(out.Dots, svgDot{X: num(sx(l.X[j])), Y: num(sy(l.Y[j])), Color: color, Title: fx(l.X[j]) + ": " + formatNum(l.Y[j])})
			}
		}
		dash := ""
		if l.Dashed {
			dash = "6 4"
		}
		out.Paths = append(out.Paths, svgPath{D: strings.TrimSpace(d.String()), Color: color, Dash: dash, label: l.Label})
		if n := len(l.X); n > 0 {
			desc = append(desc, fmt.Sprintf("%s: %d points, last %s at %s", cmpOr(l.Label, "line"), n, formatNum(l.Y[n-1]), fx(l.X[n-1])))
		}
	}
	for i, m := range f.Marks {
		// Its label in a row of its own above the plot (the first
		// nearest), centred on the line but inside the SVG.
		x := sx(m.X)
		w := charW * float64(utf8.RuneCountInString(m.Label))
		start := min(max(x-w/2, edgePad), svgW-edgePad-w*1.15)
		out.Marks = append(out.Marks, svgMark{X: num(x), Y1: num(y0), Y2: num(y1), TX: num(start), TY: num(y1 - rowGap - rowH*float64(i)), Label: m.Label, Anchor: "start"})
		desc = append(desc, m.Label)
	}
	out.Desc = f.Title + ": " + strings.Join(desc, "; ")
}

// yTicks are the y axis's ticks at ys, labelled with ticks.Labels.
func yTicks(ys []float64, sy func(float64) float64, x0, x1 float64) []svgTick {
	var out []svgTick
	labels := ticks.Labels(ys)
	for i, v := range ys {
		y := sy(v)
		out = append(out, svgTick{X1: num(x0), Y1: num(y), X2: num(x1), Y2: num(y), TX: num(x0 - 6), TY: num(y + 4), Label: labels[i]})
	}
	return out
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// timeSteps are the tick steps of a time axis, in seconds.
var timeSteps = []float64{1, 5, 15, 30, 60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 7 * 86400, 30 * 86400, 365 * 86400}

// timeTicks returns round times covering [lo, hi] (Unix seconds), about
// five of them, and their step.
func timeTicks(lo, hi float64) ([]float64, float64) {
	step := timeSteps[len(timeSteps)-1]
	for _, s := range timeSteps {
		if (hi-lo)/s <= 6 {
			step = s
			break
		}
	}
	var out []float64
	for v := math.Floor(lo/step) * step; v <= hi+step || len(out) < 2; v += step {
		out = append(out, v)
		if v >= hi {
			break
		}
	}
	return out, step
}

// formatTime labels a tick of a time axis with the precision its step
// needs, in UTC.
func formatTime(v, step float64) string {
	t := time.Unix(int64(v), 0).UTC()
	switch {
	case step < 60:
		return t.Format("15:04:05")
	case step < 86400:
		return t.Format("Jan 2 15:04")
	default:
		return t.Format("2006-01-02")
	}
}

// formatNum prints a value with four significant digits at most.
func formatNum(v float64) string {
	if v == 0 {
		return "0"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
