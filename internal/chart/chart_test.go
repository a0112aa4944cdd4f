package chart

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sample is a chart with every kind of series: a band, error bars with
// markers, a dashed line.
func sample() Chart {
	return Chart{Title: "t", XLabel: "x", YLabel: "y", Series: []Series{
		{Label: "band", SpreadLabel: "band spread", X: []float64{1, 2, 3}, Y: []float64{1, 2, 1.5}, Low: []float64{0.5, 1.5, 1}, High: []float64{1.5, 2.5, 2}},
		{Label: "bars", SpreadLabel: "bars spread", X: []float64{1, 2, 3}, Y: []float64{2, 3, 2.5}, YErr: []float64{0.1, 0.2, 0.3}, Points: true},
		{X: []float64{1, 3}, Y: []float64{0, 4}, Dashed: true, Color: Color{1, 2, 3, 255}},
	}}
}

// TestWritePNG: the PNG decodes at 6 by 4 inches (96 dpi) and is a function
// of the chart (two writes give the same bytes). At 3 by 2 inches no
// corner of the sample's plot is free for its legend, which goes right of
// the plot: the figure is as high and wider.
func TestWritePNG(t *testing.T) {
	var a, b bytes.Buffer
	if err := sample().Write(&a, "png"); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if r := img.Bounds(); r.Dx() != 576 || r.Dy() != 384 {
		t.Errorf("image %v, want 576x384", r)
	}
	if err := sample().Write(&b, "png"); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Errorf("a second write differs (%v)", err)
	}
	c := sample()
	c.Width, c.Height = 3, 2
	a.Reset()
	if err := c.Write(&a, "png"); err != nil {
		t.Fatal(err)
	}
	if img, err := png.Decode(&a); err != nil || img.Bounds().Dx() <= 288 || img.Bounds().Dy() != 192 {
		t.Errorf("3 by 2 inches with the legend outside: %v", err)
	}
	for i := range c.Series {
		c.Series[i].Label, c.Series[i].SpreadLabel = "", ""
	}
	a.Reset()
	if err := c.Write(&a, "png"); err != nil {
		t.Fatal(err)
	}
	if img, err := png.Decode(&a); err != nil || img.Bounds().Dx() != 288 || img.Bounds().Dy() != 192 {
		t.Errorf("3 by 2 inches without a legend: %v", err)
	}
}

// TestMarginsAndLegend: nothing is drawn in a margin along the image's
// edges (the title and the axis labels stay clear of it: the PNG's outer
// rows and columns are all background), and the legend has an entry for
// each line and for each series' band or error bars (SVG keeps the text).
func TestMarginsAndLegend(t *testing.T) {
	var b bytes.Buffer
	c := sample()
	c.Title = "a title as long as the figure is wide, which must not touch the image's top edge at all"
	if err := c.Write(&b, "png"); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	r, edge := img.Bounds(), 8 // pixels: 6 points at 96 dpi
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if x >= r.Min.X+edge && x < r.Max.X-edge && y >= r.Min.Y+edge && y < r.Max.Y-edge {
				continue
			}
			if cr, cg, cb, _ := img.At(x, y).RGBA(); cr != 0xffff || cg != 0xffff || cb != 0xffff {
				t.Fatalf("pixel (%d, %d) in the margin is drawn: %v", x, y, img.At(x, y))
			}
		}
	}
	b.Reset()
	if err := sample().Write(&b, "svg"); err != nil {
		t.Fatal(err)
	}
	for _, entry := range []string{">band<", ">band spread<", ">bars<", ">bars spread<"} {
		if !strings.Contains(b.String(), entry) {
			t.Errorf("the legend lacks %s", entry)
		}
	}
}

// TestSaveFormats: Save picks the format from the extension and writes
// nothing for an unsupported one.
func TestSaveFormats(t *testing.T) {
	dir := t.TempDir()
	for ext, prefix := range map[string]string{".png": "\x89PNG", ".SVG": "<?xml", ".pdf": "%PDF"} {
		path := filepath.Join(dir, "c"+ext)
		if err := sample().Save(path); err != nil {
			t.Fatalf("%s: %v", ext, err)
		}
		b, err := os.ReadFile(path)
		if err != nil || !bytes.HasPrefix(b, []byte(prefix)) {
			t.Errorf("%s: %v, starts %q", ext, err, b[:min(len(b), 8)])
		}
	}
	for _, name := range []string{"c.txt", "c", "c.gif"} {
		path := filepath.Join(dir, name)
		if err := sample().Save(path); err == nil || !strings.Contains(err.Error(), "unsupported format") {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s written", name)
		}
	}
	if err := sample().Write(new(bytes.Buffer), "gif"); err == nil {
		t.Error("gif accepted")
	}
}

// TestLogAxes: points with a non-positive coordinate on a log axis are left
// out (gonum's log scale would panic on them); a chart left with no point
// is an error.
func TestLogAxes(t *testing.T) {
	c := Chart{LogX: true, LogY: true, Series: []Series{
		{Label: "zeros first", X: []float64{1, 2, 3, 4}, Y: []float64{0, 0, 1, 2}},
		{Label: "negative x", X: []float64{-1, 10}, Y: []float64{1, 5}, YErr: []float64{1, 1}},
		{Label: "nothing left", X: []float64{1, 2}, Y: []float64{0, -1}},
	}}
	if err := c.Write(new(bytes.Buffer), "png"); err != nil {
		t.Fatal(err)
	}
	c.Series = c.Series[2:]
	if err := c.Write(new(bytes.Buffer), "png"); err == nil || !strings.Contains(err.Error(), "no points") {
		t.Errorf("no drawable point: %v", err)
	}
	if kept := (Chart{LogY: true}).kept(Series{X: []float64{1, 2, 3}, Y: []float64{0, 1, 2}}); len(kept) != 2 || kept[0] != 1 {
		t.Errorf("kept %v, want [1 2]", kept)
	}
}

// TestSeriesErrors: slices of different lengths and non-finite values are
// rejected with the series' index.
func TestSeriesErrors(t *testing.T) {
	for _, s := range []Series{
		{X: []float64{1, 2}, Y: []float64{1}},
		{X: []float64{1}, Y: []float64{1}, Low: []float64{0}},
		{X: []float64{1}, Y: []float64{1}, Low: []float64{0, 1}, High: []float64{2, 3}},
		{X: []float64{1}, Y: []float64{1}, YErr: []float64{}},
		{X: []float64{1}, Y: []float64{math.NaN()}},
	} {
		c := Chart{Series: []Series{{X: []float64{1}, Y: []float64{1}}, s}}
		if err := c.Write(new(bytes.Buffer), "png"); err == nil || !strings.Contains(err.Error(), "series 1") {
			t.Errorf("%+v: %v", s, err)
		}
	}
}

func TestColor(t *testing.T) {
	if r, g, b, a := (Color{0xff, 0x80, 0, 0x80}).RGBA(); a != 0x8080 || r != 0x8080 || g != 0x8080*0x8080/0xffff || b != 0 {
		t.Errorf("premultiplied %x %x %x %x", r, g, b, a)
	}
	if Palette(0) != Palette(6) || Palette(0) == Palette(1) || Palette(-1) != Palette(5) {
		t.Error("the palette does not cycle through six colours")
	}
}
