package main

import (
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
	a := write("a.json", "--algo", "dppg-loglinear", "--env", "riverswim", "--episodes", "20", "--seeds", "1", "--epsilon", "5", "--region", "l2,kl")
	b := write("b.json", "--algo", "dppg-loglinear", "--env", "riverswim-0.9", "--episodes", "30", "--seeds", "2", "--epsilon", "1", "--region", "l2", "--eta", "0.01")
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
	c := write("c.json", "--algo", "dppg-loglinear", "--env", "riverswim", "--episodes", "20", "--seeds", "1", "--epsilon", "5", "--region", "l2", "--init-right", "40")
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
