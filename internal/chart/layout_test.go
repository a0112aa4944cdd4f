package chart

import (
	"bytes"
	"image"
	"image/draw"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// primorlLike is dprl offline primorl --plot's figure as issue 36 saw it:
// returns around -1,000 with error bars, the legend's corner taken.
func primorlLike() Chart {
	y := []float64{-950, -1290, -1250, -1090, -1120, -1420, -1470, -1030, -1210, -960, -1100, -1460, -1460, -1400, -1550, -1650, -1500, -1440, -1350, -1240}
	e := []float64{200, 180, 30, 70, 40, 180, 70, 270, 200, 260, 20, 60, 110, 60, 90, 130, 40, 50, 50, 80}
	x := make([]float64, len(y))
	for i := range x {
		x[i] = float64(300 * (i + 1))
	}
	return Chart{Title: "primorl on pendulum: NOT private", XLabel: "SAC steps in the model", YLabel: "return on the simulator", Width: 7, Height: 4.2,
		Series: []Series{{Label: "deterministic policy", SpreadLabel: "± 1 std over 3 episodes", X: x, Y: y, YErr: e, Points: true}}}
}

// trainLike is dprl train --plot's learning curve: a noisy rise with a
// wide band over the whole plot, and two dashed reference lines along its
// bottom.
func trainLike() Chart {
	s := Series{Label: "mean return", SpreadLabel: "± 1 std over the episodes"}
	for i := range 51 {
		m := 20 + 410*(1-math.Exp(-float64(i)/8)) + 50*math.Sin(float64(i)*1.7)
		sd := 10 + 90*(1-math.Exp(-float64(i)/6))
		s.X, s.Y = append(s.X, float64(40*i)), append(s.Y, m)
		s.Low, s.High = append(s.Low, m-sd), append(s.High, m+sd)
	}
	return Chart{Title: "cartpole dppg (z = 1, ε = 50.88 per episode, δ = 1e-05)", XLabel: "users", YLabel: "return", Series: []Series{s,
		{Label: "uniform random: 22.22", X: []float64{0, 2000}, Y: []float64{22.22, 22.22}, Dashed: true},
		{Label: "best constant 1: 9.364", X: []float64{0, 2000}, Y: []float64{9.364, 9.364}, Dashed: true}}}
}

// mspbeLike is dprl offline gtd2 --plot's figure: a log y axis whose label
// is longer than the axis.
func mspbeLike() Chart {
	s := Series{}
	for i := 1; i <= 200; i++ {
		s.X, s.Y = append(s.X, float64(5*i)), append(s.Y, 0.02*math.Pow(float64(i), -1.3)+5e-5)
	}
	return Chart{Title: "GPOPE on chain.jsonl: (1, 1e-05)-DP", XLabel: "iteration", YLabel: "MSPBE, exact (chain model, behaviour = target)", LogY: true, Series: []Series{s}}
}

// usersLike is dprl report's policy-users figure: a histogram outline
// with x and y counts in the thousands.
func usersLike() Chart {
	return Chart{Title: "Users by composed epsilon", XLabel: "composed epsilon", YLabel: "users", Width: 7, Height: 4.2, Series: []Series{
		{Label: "users", X: []float64{0, 0, 2, 2, 4, 4}, Y: []float64{0, 600, 600, 2500, 2500, 0}},
		{Label: "worst user 4.378", X: []float64{4.378, 4.378}, Y: []float64{0, 2500}, Dashed: true}}}
}

// artifacts is where the figures of these tests are kept for people to
// look at: $DPRL_TEST_ARTIFACTS, else the test's temporary directory.
func artifacts(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("DPRL_TEST_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// tickNumber is a tick label; needless is one with trailing zeros after
// the decimal point.
var (
	tickNumber = regexp.MustCompile(`^−?-?[0-9][0-9.e+\-]*$`)
	needless   = regexp.MustCompile(`\.[0-9]*0$|\.$`)
)

// TestTickLabelsTidy: no tick label of the figures carries
// needless decimals ("-750.00", "2500.00"), and each axis has at least
// three labelled ticks (the SVG keeps the text).
func TestTickLabelsTidy(t *testing.T) {
	for name, c := range map[string]Chart{"primorl": primorlLike(), "train": trainLike(), "users": usersLike()} {
		var b bytes.Buffer
		if err := c.Write(&b, "svg"); err != nil {
			t.Fatal(err)
		}
		var labels []string
		for _, m := range regexp.MustCompile(`>([^<>]*)</text>`).FindAllStringSubmatch(b.String(), -1) {
			if s := strings.TrimSpace(m[1]); tickNumber.MatchString(s) {
				labels = append(labels, s)
				if needless.MatchString(s) {
					t.Errorf("%s: tick label %q has needless decimals", name, s)
				}
			}
		}
		if len(labels) < 6 {
			t.Errorf("%s: tick labels %q, want at least three per axis", name, labels)
		}
	}
}

// TestLegendClearOfData: the legend covers none of the data (the issue's
// primorl.png and train.png; the tick test draws users.png). Each chart is
// drawn with its labels (so with a legend) and without; every pixel where
// the two differ inside the unlabelled image must be background or grid
// there (grey: r = g = b), never a line, band, error bar or marker (the
// palette's colours). A legend moved outside the plot leaves the plot
// where it was and adds width at the right.
func TestLegendClearOfData(t *testing.T) {
	dir, keep := artifacts(t), os.Getenv("DPRL_TEST_ARTIFACTS") != ""
	for name, c := range map[string]Chart{"primorl": primorlLike(), "train": trainLike()} {
		with := render(t, c)
		bare := c
		bare.Series = append([]Series(nil), c.Series...)
		for i := range bare.Series {
			bare.Series[i].Label, bare.Series[i].SpreadLabel = "", ""
		}
		without := render(t, bare)
		if keep {
			if err := os.WriteFile(filepath.Join(dir, "legend-"+name+".png"), encode(t, with), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if with.Bounds().Dy() != without.Bounds().Dy() || with.Bounds().Dx() < without.Bounds().Dx() {
			t.Fatalf("%s: %v with a legend, %v without", name, with.Bounds(), without.Bounds())
		}
		covered := 0
		w, wo := rgba(with), rgba(without)
		r := wo.Bounds()
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				a, b := w.PixOffset(x, y), wo.PixOffset(x, y)
				pa, pb := w.Pix[a:a+4], wo.Pix[b:b+4]
				if bytes.Equal(pa, pb) {
					continue
				}
				if pb[0] != pb[1] || pb[1] != pb[2] {
					covered++
				}
			}
		}
		if covered > 0 {
			t.Errorf("%s: the legend covers %d pixels of data (figure in %s)", name, covered, dir)
		}
	}
}

// TestLongAxisLabelFits: an axis label longer than its axis (mspbe.png's
// y label) is wrapped to fit: nothing is drawn in the margin along the
// image's edges.
func TestLongAxisLabelFits(t *testing.T) {
	img := render(t, mspbeLike())
	if os.Getenv("DPRL_TEST_ARTIFACTS") != "" {
		if err := os.WriteFile(filepath.Join(artifacts(t), "mspbe.png"), encode(t, img), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if x, y, ok := drawnInMargin(img, 8); ok {
		t.Errorf("pixel (%d, %d) in the margin is drawn: the label is clipped", x, y)
	}
}

// drawnInMargin returns the first pixel within edge pixels of the image's
// border that is not white.
func drawnInMargin(img image.Image, edge int) (int, int, bool) {
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if x >= r.Min.X+edge && x < r.Max.X-edge && y >= r.Min.Y+edge && y < r.Max.Y-edge {
				continue
			}
			if cr, cg, cb, _ := img.At(x, y).RGBA(); cr != 0xffff || cg != 0xffff || cb != 0xffff {
				return x, y, true
			}
		}
	}
	return 0, 0, false
}

func render(t *testing.T, c Chart) image.Image {
	t.Helper()
	var b bytes.Buffer
	if err := c.Write(&b, "png"); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// rgba returns img as an *image.RGBA (converted if it is not one).
func rgba(img image.Image) *image.RGBA {
	if r, ok := img.(*image.RGBA); ok {
		return r
	}
	out := image.NewRGBA(img.Bounds())
	draw.Draw(out, out.Bounds(), img, img.Bounds().Min, draw.Src)
	return out
}

func encode(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestIntegerTicks: an axis of whole numbers (IntX, IntY: versions,
// counts) is marked at whole numbers only, however short its range.
func TestIntegerTicks(t *testing.T) {
	for _, r := range [][2]float64{{0, 3}, {1, 2}, {0, 6}, {0, 2500}} {
		for _, tk := range (roundTicks{integer: true}).Ticks(r[0], r[1]) {
			if tk.Value != math.Round(tk.Value) || strings.Contains(tk.Label, ".") {
				t.Errorf("range %v: tick %v %q", r, tk.Value, tk.Label)
			}
		}
	}
}
