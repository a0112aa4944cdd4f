package evaluate

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// WritePlot writes gpope's MSPBE against the iteration (Result.Curve, on a
// log scale) as a 6 x 4 inch PNG to path, titled with the base name of the
// log it was computed from (data) and the run's guarantee. The curve is
// what Config.Curve recorded: measured with public moments, or, only under
// --non-private, with the private log's, which CurveKind and the axis
// label say.
func (o *Result) WritePlot(path, data string) error {
	title := fmt.Sprintf("GPOPE on %s: (%.3g, %g)-DP", filepath.Base(data), o.Epsilon, o.Delta)
	return writeMSPBEPNG(path, o.Curve, o.CurveKind, title)
}

// writeMSPBEPNG plots MSPBE against the iteration on a log scale.
func writeMSPBEPNG(path string, points []CurvePoint, kind, title string) error {
	curve := make(plotter.XYs, len(points))
	for i, pt := range points {
		curve[i] = plotter.XY{X: float64(pt.Iter), Y: pt.MSPBE}
	}
	if len(curve) == 0 {
		return errors.New("no MSPBE values to plot")
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "iteration"
	p.Y.Label.Text = "MSPBE, " + strings.SplitN(kind, ":", 2)[0]
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	for i := range curve {
		curve[i].Y = math.Max(curve[i].Y, 1e-300)
	}
	l, err := plotter.NewLine(curve)
	if err != nil {
		return err
	}
	p.Add(l, plotter.NewGrid())
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}
