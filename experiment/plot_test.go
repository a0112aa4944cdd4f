package experiment

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/internal/chart"
	"dprl/policy"
	"dprl/sims"
)

// checkPNG fails unless path holds a PNG image.
func checkPNG(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if img, err := png.Decode(bytes.NewReader(b)); err != nil || img.Bounds().Dx() < 100 {
		t.Errorf("%s: not a PNG figure (%v)", filepath.Base(path), err)
	}
}

// TestPlots: every result's figure is written in the format its file's
// extension names; a learning curve without points is an error.
func TestPlots(t *testing.T) {
	dir := t.TempDir()
	curve := []policy.CurvePoint{{Users: 8, Mean: 10, Std: 2}, {Users: 16, Mean: 20, Std: 3}, {Users: 24, Mean: 25, Std: 1}}
	run := TrainResult{Env: "cartpole", Method: "dppg", Epsilon: 11.3, Delta: 1e-5, Z: 1, Curve: curve}
	if err := run.Plot(filepath.Join(dir, "run.png")); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, filepath.Join(dir, "run.png"))
	ppo := run
	ppo.Epsilon, ppo.Method = math.Inf(1), "ppo"
	if err := ppo.Plot(filepath.Join(dir, "ppo.svg")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "ppo.svg")); !bytes.Contains(b, []byte("<svg")) || bytes.Contains(b, []byte("ε")) {
		t.Errorf("non-private SVG: %d bytes, epsilon in the title: %v", len(b), bytes.Contains(b, []byte("ε")))
	}
	ppo.Curve = nil
	if err := ppo.Plot(filepath.Join(dir, "empty.png")); err == nil || !strings.Contains(err.Error(), "no learning-curve points") {
		t.Errorf("empty curve: %v", err)
	}
	seeds := SummarizeSeeds([]TrainResult{run, run})
	if err := seeds.Plot(filepath.Join(dir, "seeds.png")); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, filepath.Join(dir, "seeds.png"))
	sweep := TrainSweepResult{Env: "cartpole", Method: "dppg", Delta: 1e-5, Seeds: []uint64{1, 2}, Points: []SweepPoint{{Epsilon: 11, Mean: 30, Std: 5}, {Epsilon: 3, Mean: 20, Std: 4}}}
	if err := sweep.Plot(filepath.Join(dir, "sweep.png")); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, filepath.Join(dir, "sweep.png"))
	ll := fixedLogLinear() // its KL run starts at zero regret
	if err := ll.Plot(filepath.Join(dir, "regret.png")); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, filepath.Join(dir, "regret.png"))
	if err := PlotRegret(filepath.Join(dir, "log.pdf"), RegretTitle([]LogLinearResult{ll}), []LogLinearResult{ll, ll}, true); err != nil {
		t.Fatalf("log axes with a zero regret: %v", err)
	}
	if err := run.Plot(filepath.Join(dir, "run.txt")); err == nil {
		t.Error("a .txt figure was written")
	}
}

func TestRegretTitle(t *testing.T) {
	a, b := fixedLogLinear(), fixedLogLinear()
	if got := RegretTitle([]LogLinearResult{a, b}); got != "riverswim-0.9, log-linear DPPG (p = 0.9, mean cumulative regret over seeds)" {
		t.Errorf("one p: %q", got)
	}
	b.P = 0.6
	if got := RegretTitle([]LogLinearResult{a, b}); got != "RiverSwim, log-linear DPPG (mean cumulative regret over seeds)" {
		t.Errorf("two p: %q", got)
	}
}

// TestRegretLabel: the legend names p, the Fisher ridge and the Fisher
// estimate only when the figure's results differ in them, and the Fisher
// only for KL runs.
func TestRegretLabel(t *testing.T) {
	kl := func(p, ridge float64, exact bool) LogLinearResult {
		return LogLinearResult{P: p, FisherRidge: ridge, FisherExact: exact, Runs: []LogLinearRun{{Region: "kl", Epsilon: 1}, {Region: "l2", Epsilon: 5}}}
	}
	for _, tc := range []struct {
		name    string
		results []LogLinearResult
		want    []string // labels of every run, in order
	}{
		{"same", []LogLinearResult{kl(0.6, 1e-3, false), kl(0.6, 1e-3, false)},
			[]string{"DPPG-KL, ε = 1", "DPPG-L2, ε = 5", "DPPG-KL, ε = 1", "DPPG-L2, ε = 5"}},
		{"ridge", []LogLinearResult{kl(0.6, 1e-3, true), kl(0.6, 1e-2, true)},
			[]string{"DPPG-KL, ε = 1, ridge 0.001", "DPPG-L2, ε = 5", "DPPG-KL, ε = 1, ridge 0.01", "DPPG-L2, ε = 5"}},
		{"exact and p", []LogLinearResult{kl(0.6, 1e-3, false), kl(0.9, 1e-3, true)},
			[]string{"DPPG-KL, ε = 1, p = 0.6, sampled F", "DPPG-L2, ε = 5, p = 0.6", "DPPG-KL, ε = 1, p = 0.9, exact F", "DPPG-L2, ε = 5, p = 0.9"}},
		{"L2 only differs", []LogLinearResult{{P: 0.6, FisherRidge: 1, Runs: []LogLinearRun{{Region: "l2", Epsilon: 5}}}, kl(0.6, 1e-3, false)},
			[]string{"DPPG-L2, ε = 5", "DPPG-KL, ε = 1", "DPPG-L2, ε = 5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withP := tc.results[0].P != tc.results[len(tc.results)-1].P
			ridge, exact := klFisherDiffers(tc.results)
			var got []string
			for _, r := range tc.results {
				for _, run := range r.Runs {
					got = append(got, regretLabel(r, run, withP, ridge, exact))
				}
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("labels\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// TestCurveChartBaselines: a learning curve carries the environment's
// reference lines, the uniform and the best constant policy (dashed, over
// the curve's users), on the one-step bandit (returns are clicks in [0, 1])
// and on recsys (its reference lines from fewer episodes than a figure
// uses, to keep the test fast: the best constant policy is topic 19, far
// above the uniform policy).
func TestCurveChartBaselines(t *testing.T) {
	curve := []policy.CurvePoint{{Users: 0, Mean: 1}, {Users: 500, Mean: 2}}
	bandit, err := curveChart("bandit", "ppo", math.Inf(1), 0, 1e-5, curve, "± 1 std over the episodes")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := curveChart("nope", "ppo", math.Inf(1), 0, 1e-5, curve, ""); err == nil || !strings.Contains(err.Error(), "reference lines") {
		t.Errorf("unknown environment: error %v", err)
	}
	b, err := sims.Baselines(sims.BaselineConfig{Env: "recsys", Episodes: 200, Seed: PlotBaselineSeed})
	if err != nil {
		t.Fatal(err)
	}
	recsys := withReferenceLines(chart.Chart{Series: []chart.Series{{X: []float64{0, 500}, Y: []float64{1, 2}}}}, b)
	for _, c := range []struct {
		env                     string
		chart                   chart.Chart
		best                    string
		uniformLow, uniformHigh float64
		bestLow                 float64
	}{
		{"bandit", bandit, "best constant ", 0.05, 0.5, 0.1},
		{"recsys", recsys, "best constant 19: ", 130, 175, 300},
	} {
		if len(c.chart.Series) != 3 {
			t.Fatalf("%s: %d series, want the curve and two reference lines", c.env, len(c.chart.Series))
		}
		u, b := c.chart.Series[1], c.chart.Series[2]
		if !strings.HasPrefix(u.Label, "uniform random: ") || !strings.HasPrefix(b.Label, c.best) {
			t.Errorf("%s: labels %q, %q", c.env, u.Label, b.Label)
		}
		if u.X[0] != 0 || u.X[1] != 500 || !(u.Y[0] > c.uniformLow && u.Y[0] < c.uniformHigh) || !(b.Y[0] > c.bestLow && b.Y[0] > u.Y[0]) || !u.Dashed || !b.Dashed || c.chart.Series[0].Dashed {
			t.Errorf("%s: uniform %v %v, best constant %v", c.env, u.X, u.Y, b.Y)
		}
	}
}

// TestCurveChartEpsilonRoundedUp: the title's epsilon is rounded up as
// every epsilon shown (accountant.FormatEpsilon: a %.4g of 4.37141 would
// print 4.371, below the guarantee).
func TestCurveChartEpsilonRoundedUp(t *testing.T) {
	c, err := curveChart("cartpole", "dppg", 4.37141, 1, 1e-5, []policy.CurvePoint{{Users: 1, Mean: 10}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.Title, "ε = 4.372 per episode") {
		t.Errorf("title %q, want ε = 4.372", c.Title)
	}
}
