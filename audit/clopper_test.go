package audit

import (
	"math"
	"testing"
)

// TestClopperPearsonUpper checks the bound against closed forms (k = 0:
// 1 - alpha^(1/n); k = n - 1: (1 - alpha)^(1/n); k = n: 1) and against
// values computed with mpmath at 40 digits (bisection on the regularized
// incomplete beta function); 3 of 50 at 0.025 is the upper end of the
// textbook two-sided 95% exact interval [0.0125, 0.1655].
func TestClopperPearsonUpper(t *testing.T) {
	tests := []struct {
		k, n  int
		alpha float64
		want  float64
	}{
		{0, 10, 0.05, 1 - math.Pow(0.05, 0.1)},
		{0, 1000, 0.001, 1 - math.Pow(0.001, 1.0/1000)},
		{9, 10, 0.05, math.Pow(0.95, 0.1)},
		{499, 500, 0.01, math.Pow(0.99, 1.0/500)},
		{10, 10, 0.05, 1},
		{0, 10, 0.05, 0.25886555089305221685},
		{3, 50, 0.025, 0.16548194660377287121},
		{10, 1000, 0.001, 0.023963812844688625381},
		{499, 1000, 0.05, 0.52548440313540995493},
		{7, 20, 0.01, 0.63093915582511808452},
		{1, 2500, 0.05 / 12, 0.0030506103481827588905},
		{990, 1000, 0.05 / 12, 0.99637185464797052795},
	}
	for _, tc := range tests {
		got, err := ClopperPearsonUpper(tc.k, tc.n, tc.alpha)
		if err != nil {
			t.Fatalf("(%d, %d, %v): %v", tc.k, tc.n, tc.alpha, err)
		}
		// Never below the exact value (the bound must not be optimistic),
		// and within a relative 1e-8 above it.
		if got < tc.want*(1-1e-15) || got > tc.want*(1+1e-8) {
			t.Errorf("ClopperPearsonUpper(%d, %d, %v) = %.17g, want %.17g (up to +1e-8 relative)", tc.k, tc.n, tc.alpha, got, tc.want)
		}
	}
}

// TestClopperPearsonCoverage computes the exact probability that the bound
// falls below the true rate, summing binomial probabilities: at most alpha
// for every p (the guarantee the epsilon lower bound rests on).
func TestClopperPearsonCoverage(t *testing.T) {
	const n, alpha = 60, 0.05
	ub := make([]float64, n+1)
	for k := range ub {
		var err error
		if ub[k], err = ClopperPearsonUpper(k, n, alpha); err != nil {
			t.Fatal(err)
		}
		if k > 0 && ub[k] <= ub[k-1] {
			t.Fatalf("bound not increasing in k: ub(%d) = %v <= ub(%d) = %v", k, ub[k], k-1, ub[k-1])
		}
	}
	worst := 0.0
	for _, p := range []float64{0.001, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 0.99} {
		miss := 0.0
		for k, u := range ub {
			if u < p {
				lg, _ := math.Lgamma(n + 1)
				lk, _ := math.Lgamma(float64(k + 1))
				lnk, _ := math.Lgamma(float64(n - k + 1))
				miss += math.Exp(lg - lk - lnk + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
			}
		}
		if miss > alpha {
			t.Errorf("p = %v: the bound is below p with probability %.4f > alpha = %v", p, miss, alpha)
		}
		worst = math.Max(worst, miss)
	}
	t.Logf("largest miss probability %.4f (alpha %v)", worst, alpha)
}

func TestClopperPearsonErrors(t *testing.T) {
	for _, tc := range []struct {
		k, n  int
		alpha float64
	}{{-1, 10, 0.05}, {11, 10, 0.05}, {0, 0, 0.05}, {1, 10, 0}, {1, 10, 1}, {1, 10, math.NaN()}} {
		if _, err := ClopperPearsonUpper(tc.k, tc.n, tc.alpha); err == nil {
			t.Errorf("ClopperPearsonUpper(%d, %d, %v): no error", tc.k, tc.n, tc.alpha)
		}
	}
}
