package audit

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"dprl/ledger/accountant"
	"dprl/noise"
)

func testRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x61756469)) }

// The audits of the tests: runs per side, and the claimed (epsilon, delta)
// the real mechanisms are calibrated to. The held-out half (1000 releases
// per side) caps a bound near log(1000 / 6) = 5; the claim is 1.
const (
	testRuns    = 2000
	testEpsilon = 1.0
	testDelta   = 1e-5
)

func TestEpsilonLowerBound(t *testing.T) {
	tests := []struct {
		fpr, fnr, delta, want float64
	}{
		{0.5, 0.5, 0, 0},
		{0.01, 0.5, 0, math.Log(50)},
		{0.5, 0.01, 0, math.Log(50)},
		{0.01, 0.5, 0.1, math.Log(40)},
		{0.9, 0.9, 0, 0},
		{0.6, 0.5, 0, 0},
		{0, 0.5, 0, math.Inf(1)},
	}
	for _, tc := range tests {
		if got := EpsilonLowerBound(tc.fpr, tc.fnr, tc.delta); math.Abs(got-tc.want) > 1e-12 && got != tc.want {
			t.Errorf("EpsilonLowerBound(%v, %v, %v) = %v, want %v", tc.fpr, tc.fnr, tc.delta, got, tc.want)
		}
	}
}

// gaussianTarget is the Gaussian mechanism on a scalar with sensitivity 1
// and noise multiplier z (exact sampler), claiming eps at delta.
func gaussianTarget(z, eps, delta float64) Target {
	buf := make([]float64, 1)
	return Target{Name: "gaussian", Claim: Claim{Epsilon: eps, Delta: delta}, Canaries: []Canary{{
		Name: "shift 1",
		Release: func(in bool, rng *rand.Rand) ([]float64, error) {
			buf[0] = 0
			if in {
				buf[0] = 1
			}
			noise.NewGaussian(rng).Add(buf, z)
			return buf, nil
		},
	}}}
}

// TestRunGaussianKnownEpsilon audits the Gaussian mechanism with z = 1,
// whose exact epsilon the analytic accountant gives: the bound stays below
// it, is well above 0 (the shift is one standard deviation), and flags a
// claim of half the bound.
func TestRunGaussianKnownEpsilon(t *testing.T) {
	trueEps, err := accountant.GaussianEpsilon(1, testDelta)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(gaussianTarget(1, trueEps, testDelta), Options{Runs: testRuns, Confidence: 0.95}, testRNG(1))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Violation || rep.EpsilonLB > trueEps {
		t.Fatalf("Gaussian mechanism z = 1: bound %v above its exact epsilon %v", rep.EpsilonLB, trueEps)
	}
	if rep.EpsilonLB < 0.5 || rep.Best != "projection (canary: shift 1)" {
		t.Fatalf("Gaussian mechanism z = 1: bound %v by %q, want >= 0.5 by the projection", rep.EpsilonLB, rep.Best)
	}
	wrong, err := Run(gaussianTarget(1, rep.EpsilonLB/2, testDelta), Options{Runs: testRuns, Confidence: 0.95}, testRNG(1))
	if err != nil {
		t.Fatal(err)
	}
	if !wrong.Violation {
		t.Fatalf("a claim of %v below the bound %v is not flagged", wrong.Claim.Epsilon, wrong.EpsilonLB)
	}
	t.Logf("z = 1: bound %.3f, exact epsilon %.3f at delta %g", rep.EpsilonLB, trueEps, testDelta)
}

// TestRunNonFiniteLeak: a mechanism that releases NaN half the time when
// the canary is in, and noise otherwise, is caught by the non-finite test
// (the projection sees nothing: NaN reads as 0).
func TestRunNonFiniteLeak(t *testing.T) {
	buf := make([]float64, 2)
	tg := Target{Name: "nan leak", Claim: Claim{Epsilon: 1, Delta: testDelta}, Canaries: []Canary{{
		Name: "nan",
		Release: func(in bool, rng *rand.Rand) ([]float64, error) {
			buf[0], buf[1] = 0, 0
			noise.NewGaussian(rng).Add(buf, 1)
			if in && rng.IntN(2) == 0 {
				buf[1] = math.NaN()
			}
			return buf, nil
		},
	}}}
	rep, err := Run(tg, Options{Runs: testRuns, Confidence: 0.95}, testRNG(2))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Violation || rep.Best != "non-finite (canary: nan)" || rep.EpsilonLB < 4 {
		t.Fatalf("NaN leak: bound %v by %q, want > 4 by the non-finite test", rep.EpsilonLB, rep.Best)
	}
}

func TestRunValidation(t *testing.T) {
	good := gaussianTarget(1, 1, testDelta)
	for _, tc := range []struct {
		name string
		t    Target
		o    Options
		want string
	}{
		{"runs", good, Options{Runs: 3, Confidence: 0.95}, "runs"},
		{"confidence", good, Options{Runs: 10, Confidence: 1}, "confidence"},
		{"claim", Target{Name: "x", Claim: Claim{Epsilon: math.NaN()}, Canaries: good.Canaries}, Options{Runs: 10, Confidence: 0.9}, "claims"},
		{"no canary", Target{Name: "x", Claim: Claim{Epsilon: 1}}, Options{Runs: 10, Confidence: 0.9}, "no canary"},
		{"lattice", Target{Name: "x", Claim: Claim{Epsilon: 1}, Canaries: []Canary{{Name: "c", Release: good.Canaries[0].Release, Lattice: &Lattice{Sigma: 1, In: []float64{1}}}}}, Options{Runs: 10, Confidence: 0.9}, "lattice"},
	} {
		if _, err := Run(tc.t, tc.o, testRNG(3)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.want)
		}
	}
	boom := errors.New("boom")
	bad := Target{Name: "x", Claim: Claim{Epsilon: 1}, Canaries: []Canary{{Name: "c", Release: func(bool, *rand.Rand) ([]float64, error) { return nil, boom }}}}
	if _, err := Run(bad, Options{Runs: 10, Confidence: 0.9}, testRNG(3)); !errors.Is(err, boom) {
		t.Errorf("a failing release: error %v, want it wrapped", err)
	}
}

// TestZigguratLattice: the distinguisher recognises v + sigma NormFloat64()
// on v (more than 99% of draws: the ziggurat's strips) and almost never on
// v + sigma, nor the exact sampler's outputs on either.
func TestZigguratLattice(t *testing.T) {
	const n, v, sigma = 10000, 0.3, 0.7
	z := NewZigguratLattice()
	rng := testRNG(4)
	g := noise.NewGaussian(testRNG(5))
	buf := make([]float64, 1)
	var onV, onW, exact int
	for range n {
		o := v + sigma*rng.NormFloat64()
		if z.Fits(o, v, sigma) {
			onV++
		}
		if z.Fits(o, v+sigma, sigma) {
			onW++
		}
		buf[0] = v
		g.Add(buf, sigma)
		if z.Fits(buf[0], v, sigma) {
			exact++
		}
	}
	if onV < n*99/100 || onW > n/100 || exact > n/100 {
		t.Fatalf("fits: float noise on v %d, on v + sigma %d, exact sampler %d of %d", onV, onW, exact, n)
	}
}
