package main

import (
	"encoding/json"
	"strings"
	"testing"

	"dprl/audit"
)

// TestAuditCommand runs "dprl audit" on DPPG with the mutants: every
// aggregator passes, every mutant is flagged, the control passes, and the
// exit status is 0; the JSON carries the claim, the bound and the test of
// each target.
func TestAuditCommand(t *testing.T) {
	code, stdout, stderr := runCLI(t, "audit", "--mechanism", "dppg", "--mutants", "--runs", "1000", "--seed", "3", "--json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var out audit.SuiteResult
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("JSON: %v\n%s", err, stdout)
	}
	if out.Runs != 1000 || out.Confidence != 0.95 || out.Seed != 3 || out.Failed {
		t.Fatalf("header: %+v", out)
	}
	kinds := map[string]int{}
	for _, r := range out.Results {
		kinds[string(r.Kind)]++
		want := map[string]string{"mechanism": "ok", "control": "ok", "mutant": "flagged"}[string(r.Kind)]
		if r.Verdict != want {
			t.Errorf("%s (%s): verdict %s (bound %v by %s), want %s", r.Target, r.Kind, r.Verdict, r.EpsilonLB, r.Best, want)
		}
		if r.Claim.Epsilon <= 0 || r.Claim.Epsilon > 1 || r.Claim.Delta != 1e-5 || r.Runs != 1000 || len(r.Tests) == 0 {
			t.Errorf("%s: claim %+v, runs %d, %d tests", r.Target, r.Claim, r.Runs, len(r.Tests))
		}
	}
	if kinds["mechanism"] != 3 || kinds["control"] != 1 || kinds["mutant"] != 5 {
		t.Fatalf("targets by kind %v, want 3 mechanisms, 1 control, 5 mutants", kinds)
	}
}

// TestAuditCommandText: the table names every target with its claim, bound,
// test and verdict.
func TestAuditCommandText(t *testing.T) {
	code, stdout, stderr := runCLI(t, "audit", "--mechanism", "dppg", "--runs", "400", "--seed", "4")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"400 releases per side per canary, confidence 0.95, seed 4", "claimed (eps, delta)", "eps_lb", "dppg/independent", "dppg/tree (8 releases)", "dppg/sqrt (8 releases)", "(1, 1e-05)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Count(stdout, " ok\n") != 3 {
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
