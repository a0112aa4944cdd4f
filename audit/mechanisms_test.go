package audit

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"dprl/policy"
	"dprl/sessionlog"
)

// runAll audits the targets with the test's runs and seed.
func runAll(t *testing.T, seed uint64, targets ...Target) []Report {
	t.Helper()
	reps := make([]Report, len(targets))
	for i, tg := range targets {
		var err error
		if reps[i], err = Run(tg, Options{Runs: testRuns, Confidence: 0.95}, testRNG(seed+uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
	return reps
}

// TestAuditFlagsEveryMutant is the auditor's power: every deliberately
// broken aggregation step is flagged (bound above the claimed epsilon 1) by
// the test its defect exposes, and the copy without a defect is not.
func TestAuditFlagsEveryMutant(t *testing.T) {
	want := map[Defect]string{
		DefectNoNoise:        "(canary: large update)",
		DefectNoiseTenth:     "projection (canary: large update)",
		DefectUnclipped:      "projection (canary: large update)",
		DefectNaNPassThrough: "projection (canary: NaN update)",
		DefectFloatLattice:   "float-lattice (canary: large update)",
	}
	var targets []Target
	for _, d := range Defects {
		tg, err := Mutant(d, testEpsilon, testDelta)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, tg)
	}
	for i, rep := range runAll(t, 10, targets...) {
		d := Defects[i]
		t.Logf("%-28s claim %.3f, bound %.3f by %s", rep.Target, rep.Claim.Epsilon, rep.EpsilonLB, rep.Best)
		if d == DefectNone {
			if rep.Violation {
				t.Errorf("the control (no defect) is flagged: bound %v > %v by %s", rep.EpsilonLB, rep.Claim.Epsilon, rep.Best)
			}
			continue
		}
		// A margin: the bound at least 2.5 times the claim.
		if !rep.Violation || rep.EpsilonLB < 2.5*rep.Claim.Epsilon {
			t.Errorf("%s: bound %v, want flagged above 2.5 x the claim %v", rep.Target, rep.EpsilonLB, rep.Claim.Epsilon)
		}
		if !strings.HasSuffix(rep.Best, want[d]) {
			t.Errorf("%s: bound by %q, want %q", rep.Target, rep.Best, want[d])
		}
	}
}

// TestAuditRealMechanismsWithinClaim audits the real code paths: DPPG's
// aggregator with independent, tree and square-root noise, and GPOPE, all
// stay below the claimed epsilon, with a margin (below half of it). A GPOPE
// whose clip let the rho = +Inf canary's non-finite gradient into the sum
// (as "norm > C" does) fails here with a bound near 5.4: the exact sampler
// reads the NaN coordinates as 0 and clamps the infinite ones, so the
// release jumps far from the one without the canary.
func TestAuditRealMechanismsWithinClaim(t *testing.T) {
	var targets []Target
	for _, n := range []policy.Noise{policy.NoiseIndependent, policy.NoiseTree, policy.NoiseSqrt} {
		tg, err := DPPG(n, testEpsilon, testDelta)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, tg)
	}
	g, err := GPOPE(testEpsilon, testDelta)
	if err != nil {
		t.Fatal(err)
	}
	targets = append(targets, g)
	for _, rep := range runAll(t, 20, targets...) {
		t.Logf("%-28s claim %.3f, bound %.3f by %s", rep.Target, rep.Claim.Epsilon, rep.EpsilonLB, rep.Best)
		if math.Abs(rep.Claim.Epsilon-testEpsilon) > 1e-3 {
			t.Errorf("%s claims %v, want the calibrated %v", rep.Target, rep.Claim.Epsilon, testEpsilon)
		}
		if rep.Violation || rep.EpsilonLB > rep.Claim.Epsilon/2 {
			t.Errorf("%s: bound %v by %s, want below half the claim %v", rep.Target, rep.EpsilonLB, rep.Best, rep.Claim.Epsilon)
		}
	}
}

// TestGPOPECanariesAreValidRecords: the canary trajectories are records the
// session log reader accepts, so a real log can hold them.
func TestGPOPECanariesAreValidRecords(t *testing.T) {
	var buf bytes.Buffer
	w := sessionlog.NewWriter(&buf)
	for _, s := range []sessionlog.Session{gpopeTrajectory("large", 1e6, math.Log(0.5)), gpopeTrajectory("inf", 1, -800)} {
		if err := w.Write(&s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	rd := sessionlog.NewReader(&buf, sessionlog.ReaderOptions{Name: "canaries", Spec: sessionlog.Spec{ObsDim: gpopeStates, Discrete: 2}})
	n := 0
	for {
		if _, err := rd.Next(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("the reader refuses a canary: %v", err)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("read %d canaries, want 2", n)
	}
}

func TestSuiteAndVerdict(t *testing.T) {
	for _, tc := range []struct {
		mech    string
		mutants bool
		n       int
	}{{MechanismDPPG, false, 3}, {MechanismGPOPE, false, 1}, {MechanismAll, false, 4}, {MechanismAll, true, 10}} {
		es, err := Suite(tc.mech, tc.mutants, testEpsilon, testDelta)
		if err != nil || len(es) != tc.n {
			t.Errorf("Suite(%s, %v): %d targets, %v; want %d", tc.mech, tc.mutants, len(es), err, tc.n)
		}
	}
	if _, err := Suite("svt", false, testEpsilon, testDelta); err == nil {
		t.Error("Suite(svt): no error")
	}
	for _, tc := range []struct {
		k    Kind
		viol bool
		want string
		fail bool
	}{
		{KindMechanism, false, "ok", false}, {KindMechanism, true, "VIOLATION", true},
		{KindControl, false, "ok", false}, {KindControl, true, "VIOLATION", true},
		{KindMutant, true, "flagged", false}, {KindMutant, false, "MISSED", true},
	} {
		if v, fail := Verdict(tc.k, Report{Violation: tc.viol}); v != tc.want || fail != tc.fail {
			t.Errorf("Verdict(%s, violation %v) = %s, %v; want %s, %v", tc.k, tc.viol, v, fail, tc.want, tc.fail)
		}
	}
}
