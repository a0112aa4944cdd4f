// Command yieldplot draws the SVT yield (stable transitions as a fraction of
// the queried transitions, mean over seeds) against the number of experts M,
// one line per eps1, from the TSV files written by yield.sh:
//
//	go run ./offline/svt/testdata/yieldplot OUT.png RUNS.tsv...
package main

import (
	"bufio"
	"fmt"
	"image/color"
	"os"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

type key struct {
	env string
	eps float64
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: yieldplot OUT.png RUNS.tsv...")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "yieldplot:", err)
		os.Exit(1)
	}
}

func run(out string, files []string) error {
	sum := map[key]map[float64][]float64{}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		for line := 0; sc.Scan(); line++ {
			c := strings.Split(sc.Text(), "\t")
			if line == 0 || len(c) < 10 {
				continue
			}
			m, err1 := strconv.ParseFloat(c[1], 64)
			eps, err2 := strconv.ParseFloat(c[2], 64)
			y, err3 := strconv.ParseFloat(c[9], 64)
			if err1 != nil || err2 != nil || err3 != nil {
				f.Close()
				return fmt.Errorf("%s:%d: bad row %q", name, line+1, sc.Text())
			}
			k := key{c[0], eps}
			if sum[k] == nil {
				sum[k] = map[float64][]float64{}
			}
			sum[k][m] = append(sum[k][m], y)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return err
		}
	}
	keys := make([]key, 0, len(sum))
	for k := range sum {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].env != keys[j].env {
			return keys[i].env < keys[j].env
		}
		return keys[i].eps < keys[j].eps
	})
	p := plot.New()
	p.Title.Text = "SVT stable-prefix yield (T = 25, δ1 = 1/M, p_min = 0.02; mean of 3 seeds)"
	p.X.Label.Text = "experts M"
	p.Y.Label.Text = "stable / queried transitions"
	palette := []color.RGBA{{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff}, {0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}}
	epsIndex := map[float64]int{}
	for _, k := range keys {
		if _, ok := epsIndex[k.eps]; !ok {
			epsIndex[k.eps] = len(epsIndex)
		}
	}
	for _, k := range keys {
		ms := make([]float64, 0, len(sum[k]))
		for m := range sum[k] {
			ms = append(ms, m)
		}
		sort.Float64s(ms)
		xy := make(plotter.XYs, len(ms))
		for j, m := range ms {
			var s float64
			for _, y := range sum[k][m] {
				s += y
			}
			xy[j] = plotter.XY{X: m, Y: s / float64(len(sum[k][m]))}
		}
		line, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		c := palette[epsIndex[k.eps]%len(palette)] // one colour per eps1; acrobot dashed
		line.Color, pts.Color = c, c
		line.Width = vg.Points(1.5)
		if k.env == "acrobot" {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(line, pts)
		p.Legend.Add(fmt.Sprintf("%s ε1 = %g", k.env, k.eps), line, pts)
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	return p.Save(7*vg.Inch, 4.5*vg.Inch, out)
}
