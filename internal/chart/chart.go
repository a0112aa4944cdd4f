// Package chart draws dprl's line charts with gonum.org/v1/plot: a few
// series, each a line with an optional filled band, error bars or point
// markers, on linear or logarithmic axes, written as PNG, SVG, PDF or
// another of gonum's formats (the one a file's extension names).
// Result-specific figures (learning curves, privacy-utility curves, regret
// curves) are built from these helpers by the packages that own the
// results.
//
// A chart shows whatever values it is given: the caller is responsible for
// plotting only released values (or labelling simulation-only ones).
package chart

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"dprl/internal/atomicfile"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"
)

// Color is a non-premultiplied RGBA colour (color.Color premultiplies it).
type Color struct{ R, G, B, A uint8 }

// RGBA implements color.Color.
func (c Color) RGBA() (r, g, b, a uint32) {
	a = uint32(c.A) * 0x101
	return uint32(c.R) * 0x101 * a / 0xffff, uint32(c.G) * 0x101 * a / 0xffff, uint32(c.B) * 0x101 * a / 0xffff, a
}

// palette is the series colours, in order: the first six of matplotlib's
// tab10 (blue, orange, green, red, purple, brown).
var palette = [...]Color{{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff}, {0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}}

// Palette returns the i-th default series colour (cycling).
func Palette(i int) Color { return palette[((i%len(palette))+len(palette))%len(palette)] }

// distinct is fourteen colours that differ from each other and from the
// grey and olive that reference lines use: tab10 without its grey and
// olive, then black, dark gold, navy, salmon, teal and yellow-green.
var distinct = [...]Color{{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x17, 0xbe, 0xcf, 0xff}, {0x17, 0x17, 0x17, 0xff}, {0xb8, 0x86, 0x0b, 0xff},
	{0x00, 0x00, 0x80, 0xff}, {0xfa, 0x80, 0x72, 0xff}, {0x00, 0x80, 0x80, 0xff}, {0x9a, 0xcd, 0x32, 0xff}}

// Distinct returns the i-th of fourteen distinct series colours (cycling),
// for figures with more lines than Palette's six.
func Distinct(i int) Color { return distinct[((i%len(distinct))+len(distinct))%len(distinct)] }

// Grey and Olive are the colours of reference lines beside Distinct's.
var (
	Grey  = Color{0x7f, 0x7f, 0x7f, 0xff}
	Olive = Color{0xbc, 0xbd, 0x22, 0xff}
)

// bandAlpha is the opacity of a series' band.
const bandAlpha = 0x40

// Series is one line of a chart. X and Y have one value per point; Low and
// High, if not nil, bound a filled band around the line (one value each per
// point), and YErr, if not nil, draws a vertical error bar of plus or minus
// YErr[i] at point i.
type Series struct {
	// Label is the legend entry of the line; "" adds none.
	Label string
	// SpreadLabel is the legend entry of the band or the error bars (what
	// they show, e.g. "± 1 std over seeds"); "" adds none.
	SpreadLabel string
	X, Y        []float64
	Low, High   []float64
	YErr        []float64
	// Color is the colour of the line, its band (translucent), error bars
	// and markers; the zero value takes Palette(i) for the i-th series
	// drawn.
	Color Color
	// Dashed draws the line dashed; Points marks every point.
	Dashed, Points bool
}

// margin is the blank space around a figure, and titlePad the space
// between its title and the plot, so that neither the title nor the axis
// labels touch the image's edge.
const (
	margin   = vg.Length(8)
	titlePad = vg.Length(6)
)

// Chart is a figure of line series.
type Chart struct {
	Title, XLabel, YLabel string
	// LogX and LogY make an axis logarithmic; points with a non-positive
	// coordinate on a log axis are left out, and a series left with no
	// points is not drawn.
	LogX, LogY bool
	// IntX and IntY put a linear axis's ticks on whole numbers only
	// (versions, counts).
	IntX, IntY bool
	Series     []Series
	// Width and Height are the figure's size in inches (0: 6 by 4).
	Width, Height float64
	// YMin and YMax, unless both are 0, fix the y axis's range (room for
	// the legend above the data, say).
	YMin, YMax float64
}

// formats are the file formats Write and Save accept (gonum's).
var formats = map[string]bool{"png": true, "svg": true, "pdf": true, "eps": true, "jpg": true, "jpeg": true, "tif": true, "tiff": true, "tex": true}

// FormatOf returns the format Save would use for path: its extension, lower
// case, without the dot; an error if it is not one of png, svg, pdf, eps,
// jpg (jpeg), tif (tiff) or tex.
func FormatOf(path string) (string, error) {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	if !formats[ext] {
		return "", fmt.Errorf("chart: %s: unsupported format %q (want .png, .svg, .pdf, .eps, .jpg, .tif or .tex)", path, ext)
	}
	return ext, nil
}

// Save writes the chart to path in the format its extension names (see
// FormatOf), atomically: the file appears complete or not at all.
func (c Chart) Save(path string) error {
	format, err := FormatOf(path)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, 0o644, func(w io.Writer) error { return c.Write(w, format) })
}

// Write draws the chart and writes it to w in format (see FormatOf).
//
// The legend goes in a corner of the plot that holds none of the data
// (lines, bands, error bars, markers), the first free one of top left, top
// right, bottom left and bottom right; when every corner holds data it
// goes outside, right of the plot, and the figure is that much wider (the
// plot keeps its size).
func (c Chart) Write(w io.Writer, format string) error {
	if !formats[format] {
		return fmt.Errorf("chart: unsupported format %q (want png, svg, pdf, eps, jpg, tif or tex)", format)
	}
	p, geo, err := c.plot()
	if err != nil {
		return err
	}
	width, height := c.Width, c.Height
	if width <= 0 || height <= 0 {
		width, height = 6, 4
	}
	fw, fh := vg.Length(width)*vg.Inch, vg.Length(height)*vg.Inch
	// Measure on a canvas of the figure's size: where the data falls
	// depends only on it, the axes and the title.
	probe := draw.NewCanvas(new(recorder.Canvas), fw, fh)
	area := draw.Crop(probe, margin, -margin, margin, -margin)
	ylab := takeLogYLabel(p)
	wrapAxisLabels(p, &ylab, area)
	box, outside := geo.place(p, ylab.crop(area))
	extra := vg.Length(0)
	if outside {
		extra = box.Size().X + legendGap
	}
	cv, err := draw.NewFormattedCanvas(fw+extra, fh, format)
	if err != nil {
		return err
	}
	dc := draw.New(cv)
	dc.SetColor(p.BackgroundColor) // the margin in the figure's background
	dc.Fill(dc.Rectangle.Path())
	plotArea := draw.Crop(dc, margin, -margin-extra, margin, -margin)
	p.Draw(ylab.crop(plotArea))
	ylab.draw(p, plotArea)
	if len(geo.legend) > 0 {
		if outside {
			box = box.Add(vg.Point{X: plotArea.Max.X + legendGap - box.Min.X})
		}
		drawLegend(dc, geo.legend, box)
	}
	_, err = cv.WriteTo(w)
	return err
}

// plot builds the gonum plot: the grid first (below the data), then every
// series' band, error bars, line and markers, in order; and the data's
// geometry with the legend's entries, which Write places.
func (c Chart) plot() (*plot.Plot, *geometry, error) {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = c.Title, c.XLabel, c.YLabel
	p.Title.Padding = titlePad
	p.X.Tick.Marker, p.Y.Tick.Marker = roundTicks{c.IntX}, roundTicks{c.IntY}
	if c.LogX {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	}
	if c.LogY {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	}
	geo := &geometry{}
	p.Add(plotter.NewGrid())
	if c.YMin != 0 || c.YMax != 0 {
		p.Y.Min, p.Y.Max = c.YMin, c.YMax
	}
	drawn := 0
	for k, s := range c.Series {
		if err := s.check(); err != nil {
			return nil, nil, fmt.Errorf("chart: series %d: %w", k, err)
		}
		keep := c.kept(s)
		if len(keep) == 0 {
			continue
		}
		col := s.Color
		if col == (Color{}) {
			col = Palette(drawn)
		}
		drawn++
		xy := make(plotter.XYs, len(keep))
		for j, i := range keep {
			xy[j] = plotter.XY{X: s.X[i], Y: s.Y[i]}
		}
		var spread plot.Thumbnailer // the band's or error bars' legend mark
		if s.Low != nil {
			band := make(plotter.XYs, 0, 2*len(keep))
			for _, i := range keep {
				band = append(band, plotter.XY{X: s.X[i], Y: s.High[i]})
			}
			for j := len(keep) - 1; j >= 0; j-- {
				band = append(band, plotter.XY{X: s.X[keep[j]], Y: s.Low[keep[j]]})
			}
			poly, err := plotter.NewPolygon(band)
			if err != nil {
				return nil, nil, err
			}
			geo.bands = append(geo.bands, band)
			poly.Color = Color{col.R, col.G, col.B, bandAlpha}
			poly.LineStyle.Width = 0
			p.Add(poly)
			spread = poly
		}
		if s.YErr != nil {
			errs := make(plotter.YErrors, len(keep))
			for j, i := range keep {
				errs[j].Low, errs[j].High = s.YErr[i], s.YErr[i]
			}
			bars, err := plotter.NewYErrorBars(struct {
				plotter.XYer
				plotter.YErrorer
			}{xy, errs})
			if err != nil {
				return nil, nil, err
			}
			for j, i := range keep {
				geo.bars = append(geo.bars, plotter.XYs{{X: s.X[i], Y: s.Y[i] - errs[j].Low}, {X: s.X[i], Y: s.Y[i] + errs[j].High}})
			}
			bars.Color = col
			p.Add(bars)
			spread = errorBarMark{bars.LineStyle}
		}
		line, err := plotter.NewLine(xy)
		if err != nil {
			return nil, nil, err
		}
		geo.lines = append(geo.lines, xy)
		line.Color = col
		line.Width = vg.Points(1.5)
		if s.Dashed {
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(line)
		if s.Points {
			sc, err := plotter.NewScatter(xy)
			if err != nil {
				return nil, nil, err
			}
			sc.Color = col
			p.Add(sc)
			geo.points = append(geo.points, xy...)
		}
		if s.Label != "" {
			geo.legend = append(geo.legend, legendEntry{s.Label, line})
		}
		if s.SpreadLabel != "" && spread != nil {
			geo.legend = append(geo.legend, legendEntry{s.SpreadLabel, spread})
		}
	}
	if drawn == 0 {
		return nil, nil, errors.New("chart: no points to draw")
	}
	return p, geo, nil
}

// errorBarMark is the legend mark of error bars: a vertical bar with caps.
type errorBarMark struct{ style draw.LineStyle }

// Thumbnail draws the mark in c.
func (m errorBarMark) Thumbnail(c *draw.Canvas) {
	x, lo, hi, w := c.Center().X, c.Min.Y, c.Max.Y, (c.Max.X-c.Min.X)/6
	c.StrokeLines(m.style, []vg.Point{{X: x, Y: lo}, {X: x, Y: hi}}, []vg.Point{{X: x - w, Y: lo}, {X: x + w, Y: lo}}, []vg.Point{{X: x - w, Y: hi}, {X: x + w, Y: hi}})
}

// check reports a series whose slices differ in length or hold non-finite
// values (gonum rejects them).
func (s Series) check() error {
	n := len(s.X)
	if len(s.Y) != n {
		return fmt.Errorf("%d x values, %d y values", n, len(s.Y))
	}
	if (s.Low == nil) != (s.High == nil) || (s.Low != nil && (len(s.Low) != n || len(s.High) != n)) {
		return fmt.Errorf("band of %d low and %d high values for %d points", len(s.Low), len(s.High), n)
	}
	if s.YErr != nil && len(s.YErr) != n {
		return fmt.Errorf("%d error bars for %d points", len(s.YErr), n)
	}
	for _, v := range [][]float64{s.X, s.Y, s.Low, s.High, s.YErr} {
		for _, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("non-finite value %v", x)
			}
		}
	}
	return nil
}

// kept returns the indices of the points of s that the chart's axes can
// show: all of them, except those with a non-positive coordinate on a log
// axis.
func (c Chart) kept(s Series) []int {
	keep := make([]int, 0, len(s.X))
	for i := range s.X {
		if (c.LogX && !(s.X[i] > 0)) || (c.LogY && !(s.Y[i] > 0)) {
			continue
		}
		keep = append(keep, i)
	}
	return keep
}
