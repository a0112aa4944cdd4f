package evaluate

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"dprl/internal/chart"
	"dprl/ledger/accountant"
)

// WritePlot writes gpope's MSPBE against the iteration (Result.Curve, on a
// log scale) as a 6 x 4 inch PNG to path, titled with the base name of the
// log it was computed from (data) and the run's guarantee. The curve is
// what Config.Curve recorded: measured with public moments, or, only under
// --non-private, with the private log's, which CurveKind and the axis
// label say.
func (o *Result) WritePlot(path, data string) error {
	title := fmt.Sprintf("GPOPE on %s: (%s, %g)-DP", filepath.Base(data), accountant.FormatEpsilon(o.Epsilon), o.Delta)
	return writeMSPBEPNG(path, o.Curve, o.CurveKind, title)
}

// writeMSPBEPNG plots MSPBE against the iteration on a log scale (a zero
// MSPBE is drawn at 1e-300), in the format path's extension names
// (chart.FormatOf).
func writeMSPBEPNG(path string, points []CurvePoint, kind, title string) error {
	if len(points) == 0 {
		return errors.New("no MSPBE values to plot")
	}
	s := chart.Series{}
	for _, pt := range points {
		s.X, s.Y = append(s.X, float64(pt.Iter)), append(s.Y, math.Max(pt.MSPBE, 1e-300))
	}
	return chart.Chart{Title: title, XLabel: "iteration", YLabel: "MSPBE, " + strings.SplitN(kind, ":", 2)[0], LogY: true,
		Series: []chart.Series{s}}.Save(path)
}
