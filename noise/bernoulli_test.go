package noise

import (
	"math"
	"testing"
)

func TestBernoulli(t *testing.T) {
	rng := testRNG(21)
	for _, q := range []float64{0, 1e-3, 0.3, 0.5, 0.999, 1, 2, -1, math.NaN()} {
		const n = 200_000
		hits := 0
		for range n {
			if Bernoulli(rng, q) {
				hits++
			}
		}
		want := min(max(q, 0), 1)
		if math.IsNaN(q) {
			want = 0
		}
		if sd := math.Sqrt(want * (1 - want) / n); math.Abs(float64(hits)/n-want) > 5*sd+1e-12 {
			t.Errorf("q = %v: frequency %v", q, float64(hits)/n)
		}
	}
	// The threshold never exceeds q 2^64: the probability is at most q.
	for _, q := range []float64{math.Nextafter(1, 0), 0x1p-60, 1e-300, 0.1} {
		if thr := math.Ldexp(float64(uint64(math.Ldexp(q, 64))), -64); thr > q {
			t.Errorf("q = %v: probability %v > q", q, thr)
		}
	}
}
