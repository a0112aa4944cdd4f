package experiment

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/policy"
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
