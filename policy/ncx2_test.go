package policy

import (
	"math"
	"math/rand/v2"
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
