package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/experiment/vw"
	"dprl/stream/loadgen"
)

func TestBenchServe(t *testing.T) {
	code, out, errOut := runCLI(t, "bench", "serve", "--duration", "400ms", "--concurrency", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r loadgen.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !(r.AgentRPS > 0 && r.EchoRPS > 0 && r.AgentP99Ms > 0 && r.EchoP99Ms > 0) || r.RPSRatio != r.AgentRPS/r.EchoRPS {
		t.Errorf("result %+v", r)
	}
	if code, _, _ := runCLI(t, "bench", "serve", "--concurrency", "0"); code != exitUsage {
		t.Errorf("--concurrency 0: exit %d, want %d", code, exitUsage)
	}
}

// TestBenchVWUsage: the VW binary is required, a learner may not set the
// driver's own arguments, and a binary that is not VW is named.
func TestBenchVWUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"bench", "vw"}, exitUsage, `required flag(s) "vw"`},
		{[]string{"bench", "vw", "--vw", "vw", "--learner", "--squarecb --daemon"}, exitUsage, "--daemon is set by the driver"},
		{[]string{"bench", "vw", "--vw", "vw", "--learner", " "}, exitUsage, "want VW arguments"},
		{[]string{"bench", "vw", "--vw", "vw", "--seeds", "0"}, exitUsage, "--seeds 0"},
		{[]string{"bench", "vw", "--vw", "/nonexistent/vw", "--seed", "1", "--seeds", "1"}, 1, "--version"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.msg)
		}
	}
}

// TestBenchVW runs the whole command briefly against a real VW binary
// (DPRL_VW; skipped without one, as in CI): VW's rows, dprl's PPO and
// DPPG rows (at the default user epsilons 1 and 5) and the serving
// comparison in one JSON result, and the regret figure.
func TestBenchVW(t *testing.T) {
	bin := os.Getenv("DPRL_VW")
	if bin == "" {
		t.Skip("needs a Vowpal Wabbit binary: set DPRL_VW=/path/to/vw")
	}
	plot := filepath.Join(t.TempDir(), "regret.png")
	code, out, errOut := runCLI(t, "bench", "vw", "--vw", bin, "--users", "1500", "--seed", "3", "--seeds", "1", "--no-demo",
		"--held-out", "500", "--baseline-users", "2000", "--serve", "300ms", "--serve-rounds", "1", "--json", "--plot", plot)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r vw.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(r.VW) != 2 || len(r.DPRL.Methods) != 3 || r.Serving == nil || r.VWVersion == "" {
		t.Fatalf("result %s", out)
	}
	if fi, err := os.Stat(plot); err != nil || fi.Size() == 0 {
		t.Errorf("--plot: %v", err)
	}
	for _, l := range r.VW {
		if !(l.HeldOutMean > r.DPRL.Baselines.Uniform && l.RegretMean > 0) {
			t.Errorf("%s: %+v", l.Label(), l)
		}
	}
}
