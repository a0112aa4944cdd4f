package main

import (
	"dprl/experiment"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPlotRegret(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, args ...string) string {
		t.Helper()
		code, out, stderr := runCLI(t, append([]string{"train", "--json", "--log-level", "disabled", "--seed", "1"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a := write("a.json", "--algo", "dppg-loglinear", "--env", "riverswim", "--episodes", "20", "--seeds", "1", "--eps", "5", "--region", "l2,kl")
	b := write("b.json", "--algo", "dppg-loglinear", "--env", "riverswim-0.9", "--episodes", "30", "--seeds", "2", "--eps", "1", "--region", "l2", "--eta", "0.01")
	cp := write("cp.json", "--env", "cartpole", "--users", "16", "--K", "8", "--eval-episodes", "1")
	png := filepath.Join(dir, "regret.png")
	code, out, stderr := runCLI(t, "plot", "regret", "--out", png, a, b)
	if code != 0 || !strings.Contains(out, "3 runs from 2 files") {
		t.Fatalf("exit %d: %q %s", code, out, stderr)
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Fatalf("plot: %v", err)
	}
	// Log axes, with a run whose first regrets are 0 (started at the optimum).
	c := write("c.json", "--algo", "dppg-loglinear", "--env", "riverswim", "--episodes", "20", "--seeds", "1", "--eps", "5", "--region", "l2", "--init-right", "40")
	logPNG := filepath.Join(dir, "regret-log.png")
	if code, _, stderr := runCLI(t, "plot", "regret", "--log", "--out", logPNG, a, c); code != 0 {
		t.Fatalf("--log: exit %d: %s", code, stderr)
	}
	if st, err := os.Stat(logPNG); err != nil || st.Size() == 0 {
		t.Fatalf("log plot: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"method":"dppg-loglinear","runs":[],"extra":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plot", "regret", "--out", png}, "at least one result file"},
		{[]string{"plot", "regret", a}, "--out"},
		{[]string{"plot", "regret", "--out", png, filepath.Join(dir, "missing.json")}, "missing.json"},
		{[]string{"plot", "regret", "--out", png, cp}, "not a dprl train --algo dppg-loglinear --json result"},
		{[]string{"plot", "regret", "--out", png, bad}, "unknown field"},
		{[]string{"plot"}, "missing subcommand"},
	} {
		code, _, stderr := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d %q, want usage error with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestRegretLabel: the legend names p, the Fisher ridge and the Fisher
// estimate only when the figure's results differ in them, and the Fisher
// only for KL runs.
func TestRegretLabel(t *testing.T) {
	kl := func(p, ridge float64, exact bool) experiment.LogLinearResult {
		return experiment.LogLinearResult{P: p, FisherRidge: ridge, FisherExact: exact, Runs: []experiment.LogLinearRun{{Region: "kl", Epsilon: 1}, {Region: "l2", Epsilon: 5}}}
	}
	for _, tc := range []struct {
		name    string
		results []experiment.LogLinearResult
		want    []string // labels of every run, in order
	}{
		{"same", []experiment.LogLinearResult{kl(0.6, 1e-3, false), kl(0.6, 1e-3, false)},
			[]string{"DPPG-KL, ε = 1", "DPPG-L2, ε = 5", "DPPG-KL, ε = 1", "DPPG-L2, ε = 5"}},
		{"ridge", []experiment.LogLinearResult{kl(0.6, 1e-3, true), kl(0.6, 1e-2, true)},
			[]string{"DPPG-KL, ε = 1, ridge 0.001", "DPPG-L2, ε = 5", "DPPG-KL, ε = 1, ridge 0.01", "DPPG-L2, ε = 5"}},
		{"exact and p", []experiment.LogLinearResult{kl(0.6, 1e-3, false), kl(0.9, 1e-3, true)},
			[]string{"DPPG-KL, ε = 1, p = 0.6, sampled F", "DPPG-L2, ε = 5, p = 0.6", "DPPG-KL, ε = 1, p = 0.9, exact F", "DPPG-L2, ε = 5, p = 0.9"}},
		{"L2 only differs", []experiment.LogLinearResult{{P: 0.6, FisherRidge: 1, Runs: []experiment.LogLinearRun{{Region: "l2", Epsilon: 5}}}, kl(0.6, 1e-3, false)},
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
