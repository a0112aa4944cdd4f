package main

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"dprl/audit"
)

// TestAuditCommand runs "dprl audit" on every mechanism with the mutants,
// at a claim of epsilon 4 (mu 0.93), where 600 runs have the power to flag
// a 2x error: every mechanism passes, every mutant (noise / 2 and
// sensitivity x 2 of dppg, bandmf, gpope, learn and primorl, and the
// broken copies of the aggregation step) is flagged, the control passes,
// and the exit status is 0; the JSON carries the claim, the bounds, the
// test and the time of each target. Under the race detector it audits
// bandmf alone (the package audit's tests cover every mechanism).
func TestAuditCommand(t *testing.T) {
	mech, want := "all", map[string]int{"mechanism": 7, "control": 1, "mutant": 15}
	if raceEnabled {
		mech, want = "bandmf", map[string]int{"mechanism": 1, "mutant": 2}
	}
	code, stdout, stderr := runCLI(t, "audit", "--mechanism", mech, "--mutants", "--runs", "600", "--epsilon", "4", "--seed", "3", "--json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var out audit.SuiteResult
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("JSON: %v\n%s", err, stdout)
	}
	if out.Runs != 600 || out.Confidence != 0.95 || out.Seed != 3 || out.Failed || !(out.Seconds > 0) {
		t.Fatalf("header: %+v", out)
	}
	kinds := map[string]int{}
	for _, r := range out.Results {
		kinds[string(r.Kind)]++
		want := map[string]string{"mechanism": "ok", "control": "ok", "mutant": "flagged"}[string(r.Kind)]
		if r.Verdict != want {
			t.Errorf("%s (%s): verdict %s (bound %v by %s), want %s", r.Target, r.Kind, r.Verdict, r.EpsilonLB, r.Best, want)
		}
		if r.Claim.Epsilon <= 3.99 || r.Claim.Epsilon > 4.01 || r.Claim.Delta != 1e-5 || !(r.Claim.Mu > 0) || r.Runs != 600 || len(r.Tests) == 0 || !(r.Seconds > 0) {
			t.Errorf("%s: claim %+v, runs %d, %d tests, %v s", r.Target, r.Claim, r.Runs, len(r.Tests), r.Seconds)
		}
	}
	if !maps.Equal(kinds, want) {
		t.Fatalf("targets by kind %v, want %v", kinds, want)
	}
}

// TestAuditCommandText: the table names every target with its claim, bound,
// test and verdict.
func TestAuditCommandText(t *testing.T) {
	code, stdout, stderr := runCLI(t, "audit", "--mechanism", "dppg", "--runs", "100", "--seed", "4")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"100 releases per side per canary, confidence 0.95, seed 4", "claimed (eps, delta)", "eps_lb", "mu_lb", "dppg/independent", "dppg/tree (8 releases)", "dppg/sqrt (8 releases)", "(1, 1e-05)", "0.268", "3 targets in "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Count(stdout, " ok ") != 3 {
		t.Errorf("want 3 ok verdicts:\n%s", stdout)
	}
}

// TestAuditCommandUnderpowered: with too few runs the mutants cannot be
// flagged (the largest bound 10 held-out releases can show is below the
// claim), which is a failure: exit status 1, naming the missed mutants.
func TestAuditCommandUnderpowered(t *testing.T) {
	code, stdout, stderr := runCLI(t, "audit", "--mechanism", "dppg", "--mutants", "--runs", "20", "--seed", "5")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (stderr %q)", code, stderr)
	}
	if !strings.Contains(stderr, "mutant: no noise MISSED") || !strings.Contains(stdout, "MISSED") {
		t.Fatalf("stderr %q / stdout %q do not name the missed mutants", stderr, stdout)
	}
}

func TestAuditCommandUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--mechanism", "svt"}, "mechanism"},
		{[]string{"--runs", "3"}, "--runs"},
		{[]string{"--confidence", "1"}, "--confidence"},
		{[]string{"--epsilon", "-1"}, "epsilon"},
		{[]string{"extra"}, "unexpected argument"},
	} {
		code, _, stderr := runCLI(t, append([]string{"audit"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %q", tc.args, code, stderr, tc.want)
		}
	}
}
