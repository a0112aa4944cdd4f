package coverage

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStudy runs a small study: every interval gets a row at every size
// and level, the recommended interval covers, the private rows carry
// their noise multiplier, the lower bound is valid, the result does not
// depend on the number of workers, and the table and the figure are
// written.
func TestStudy(t *testing.T) {
	c := Config{Sizes: []int{500}, Reps: 40, Epsilons: []float64{0, 5}, Bootstrap: 50, HeldOut: 20000, Seed: 3, Workers: 2}
	r, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if !(r.Truth > 0.6 && r.Truth < 0.75) || r.WeightBound < 90 || r.WeightBound > 92 {
		t.Fatalf("truth %v, weight bound %v", r.Truth, r.WeightBound)
	}
	rows := map[string]Row{}
	for _, row := range r.Rows {
		rows[row.Estimator+" "+row.Method] = row
	}
	for _, k := range []string{"EL empirical-likelihood", "IPS wald", "IPS percentile-bootstrap", "IPS empirical-bernstein", "SNIPS wald", "SNIPS percentile-bootstrap", "DR wald", "DRos wald", "Switch-DR wald", "DP-EL dp-empirical-likelihood"} {
		if _, ok := rows[k]; !ok {
			t.Errorf("no row %q", k)
		}
	}
	if el := rows["EL empirical-likelihood"]; el.Coverage < 0.9 || el.WidthRatio > 1.6 {
		t.Errorf("EL %+v", el)
	}
	if r.NoiseMultipliers["5"] < 0.8 || r.NoiseMultipliers["5"] > 1 {
		t.Errorf("noise multipliers %v", r.NoiseMultipliers)
	}
	if len(r.Bounds) != 1 || r.Bounds[0].Valid < 0.95 {
		t.Errorf("lower bounds %+v", r.Bounds)
	}
	c.Workers = 1
	r1, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(r1.Rows) != len(r.Rows) || r1.Rows[0] != r.Rows[0] || r1.Rows[len(r.Rows)-1] != r.Rows[len(r.Rows)-1] {
		t.Errorf("one worker: %+v, two: %+v", r1.Rows[0], r.Rows[0])
	}
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil || !strings.Contains(b.String(), SimulationOnly) || !strings.Contains(b.String(), "private, epsilon 5") {
		t.Errorf("text: %v\n%s", err, b.String())
	}
	png := filepath.Join(t.TempDir(), "cov.png")
	if err := r.Plot(png); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(png); err != nil || fi.Size() < 10000 {
		t.Errorf("figure: %v", err)
	}
	if _, err := Run(context.Background(), Config{Sizes: []int{10}}); err == nil {
		t.Error("a log of 10 decisions accepted")
	}
}

// TestStudyRiverSwim runs a small episode study: EL-episode, PDIS and
// PDWIS rows and the private one, the truth by Monte Carlo, the public
// bound 1.25^20, widths counted over the return range, no lower bound.
func TestStudyRiverSwim(t *testing.T) {
	c := Config{Env: "riverswim", LoggerEps: 0.8, TargetEps: 0.5, Sizes: []int{300}, Reps: 20, Epsilons: []float64{0, 5}, Bootstrap: 30, HeldOut: 20000, Seed: 4, Workers: 2}
	r, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Per != "episode" || math.Abs(r.WeightBound-math.Pow(1.25, 20)) > 1e-9 || !(r.Truth > 0.2 && r.Truth < 0.6) || len(r.Bounds) != 0 {
		t.Fatalf("result %+v", r)
	}
	rows := map[string]Row{}
	for _, row := range r.Rows {
		rows[row.Estimator+" "+row.Method] = row
	}
	for _, k := range []string{"EL-episode empirical-likelihood", "PDIS wald", "PDIS percentile-bootstrap", "PDWIS wald", "PDWIS percentile-bootstrap", "DR-episode wald", "WDR-episode wald", "DP-EL dp-empirical-likelihood"} {
		if _, ok := rows[k]; !ok {
			t.Errorf("no row %q", k)
		}
	}
	if el := rows["EL-episode empirical-likelihood"]; el.Coverage < 0.9 || el.MeanWidth <= 1 {
		t.Errorf("EL-episode %+v: want it to cover, wider than a click's range (returns reach 20)", el)
	}
	if _, err := Run(context.Background(), Config{Env: "riverswim", Logger: "snapshot:x"}); err == nil {
		t.Error("a logger file accepted for riverswim")
	}
	if _, err := Run(context.Background(), Config{Env: "cartpole"}); err == nil {
		t.Error("cartpole accepted")
	}
}

// TestStudyRecSys runs a small episode study on the recommendation
// simulator's sessions cut to their first 5 slates: the public bound is
// the larger per-step ratio to the 5th power, the truth a watch time in
// [0, 4 x 5], and every interval covers in most logs.
func TestStudyRecSys(t *testing.T) {
	c := Config{Env: "recsys", Horizon: 5, LoggerEps: 0.3, TargetEps: 0.1, Sizes: []int{300}, Reps: 20, Epsilons: []float64{0, 5}, Bootstrap: 30, HeldOut: 20000, Seed: 4, Workers: 2}
	r, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	on := (1 - 0.1 + 0.1/20) / (1 - 0.3 + 0.3/20)
	if r.Per != "episode" || r.OutcomeMax != 20 || math.Abs(r.WeightBound-math.Pow(on, 5)) > 1e-9 || !(r.Truth > 1 && r.Truth < 20) {
		t.Fatalf("result %+v", r)
	}
	for _, row := range r.Rows {
		if row.Coverage < 0.8 || !(row.MeanWidth > 0 && row.MeanWidth <= 20) {
			t.Errorf("row %+v: want coverage >= 0.8 and a width inside the return range", row)
		}
	}
	if len(r.Rows) != 10 {
		t.Errorf("%d rows, want 10 (EL-episode, PDIS, PDWIS, DR-episode and WDR-episode x 2, DP-EL)", len(r.Rows))
	}
	for _, h := range []int{-1, 401} {
		if _, err := Run(context.Background(), Config{Env: "recsys", Horizon: h}); err == nil {
			t.Errorf("horizon %d accepted", h)
		}
	}
}
