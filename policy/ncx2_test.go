package policy

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

func TestNoncentralChi2CentralCase(t *testing.T) {
	for _, k := range []int{1, 3, 12} {
		for _, p := range []float64{0.1, 0.6, 0.99} {
			got, err := NoncentralChi2Quantile(p, k, 0)
			if err != nil {
				t.Fatal(err)
			}
			want := distuv.ChiSquared{K: float64(k)}.Quantile(p)
			if math.Abs(got-want) > 1e-9*want {
				t.Errorf("k=%d p=%v: %v, want %v", k, p, got, want)
			}
		}
	}
}

// TestNoncentralChi2MonteCarlo checks the quantile against the empirical
// distribution of sum_i (N(mu_i, 1))^2 with sum mu_i^2 = lambda.
func TestNoncentralChi2MonteCarlo(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct {
		k      int
		lambda float64
	}{{12, 1}, {12, 0.25}, {4, 9}, {1, 30}} {
		q, err := NoncentralChi2Quantile(0.6, c.k, c.lambda)
		if err != nil {
			t.Fatal(err)
		}
		mu := math.Sqrt(c.lambda) // all of it on the first coordinate
		const n = 100000
		below := 0
		for i := 0; i < n; i++ {
			var s float64
			for j := 0; j < c.k; j++ {
				x := rng.NormFloat64()
				if j == 0 {
					x += mu
				}
				s += x * x
			}
			if s <= q {
				below++
			}
		}
		if got := float64(below) / n; math.Abs(got-0.6) > 5*math.Sqrt(0.24/n) {
			t.Errorf("k=%d lambda=%v: P(X <= q) = %.4f, want 0.6", c.k, c.lambda, got)
		}
	}
}

func TestNoncentralChi2Errors(t *testing.T) {
	if _, err := NoncentralChi2Quantile(1, 3, 1); err == nil {
		t.Error("p = 1 accepted")
	}
	if _, err := NoncentralChi2CDF(1, 0, 1); err == nil {
		t.Error("k = 0 accepted")
	}
	if _, err := NoncentralChi2CDF(1, 2, math.NaN()); err == nil {
		t.Error("NaN lambda accepted")
	}
}

// TestNoncentralChi2LargeLambda: above the exact sum's range the quantile
// is the upper bound (sqrt(lambda) + sqrt(q_k(p)))^2: still at or above
// the exact quantile, within 2% of it at the switch (checked with the exact
// CDF), and fast even for a noise multiplier as small as 1e-9 (lambda =
// z^-2 = 1e18), where the CDF's series refuses.
func TestNoncentralChi2LargeLambda(t *testing.T) {
	const p, k, lambda = 0.6, 12, 2.5e5
	q, err := NoncentralChi2Quantile(p, k, lambda)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := NoncentralChi2CDF(q, k, lambda); c < p {
		t.Errorf("P(X <= q) = %v at the bound q = %v, want >= %v", c, q, p)
	}
	if c, _ := NoncentralChi2CDF(q/1.02, k, lambda); c >= p {
		t.Errorf("P(X <= q / 1.02) = %v, want < %v: the bound is more than 2%% above the quantile", c, p)
	}
	q, err = NoncentralChi2Quantile(p, k, 1e18)
	if err != nil || !(q > 1e18) || q > 1.0001e18 {
		t.Errorf("lambda 1e18: quantile %v (%v), want just above 1e18", q, err)
	}
	if _, err := NoncentralChi2CDF(1e18, k, 1e18); err == nil || !strings.Contains(err.Error(), "terms") {
		t.Errorf("CDF at lambda 1e18: %v, want an error about the series' length", err)
	}
}
