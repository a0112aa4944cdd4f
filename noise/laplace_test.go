package noise

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestBernoulliExp(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, x := range []struct{ num, den uint64 }{{0, 1}, {1, 2}, {1, 1}, {23, 10}, {7, 3}} {
		const n = 200000
		hits := 0
		for i := 0; i < n; i++ {
			if bernoulliExp(rng, x.num, x.den) {
				hits++
			}
		}
		p := math.Exp(-float64(x.num) / float64(x.den))
		se := math.Sqrt(p * (1 - p) / n)
		if got := float64(hits) / n; math.Abs(got-p) > 5*se+1e-9 {
			t.Errorf("Bernoulli(exp(-%d/%d)): %.4f, want %.4f", x.num, x.den, got, p)
		}
	}
}

// TestDiscreteLaplacePMF compares sample frequencies with the exact pmf
// P(y) = (1-r)/(1+r) r^|y|, r = exp(-1/t).
func TestDiscreteLaplacePMF(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, scale := range []uint64{1, 3, 10} {
		const n = 200000
		counts := map[int64]int{}
		var sum, sq float64
		for i := 0; i < n; i++ {
			y := DiscreteLaplace(rng, scale)
			counts[y]++
			sum += float64(y)
			sq += float64(y * y)
		}
		r := math.Exp(-1 / float64(scale))
		for y := int64(-3); y <= 3; y++ {
			p := (1 - r) / (1 + r) * math.Pow(r, math.Abs(float64(y)))
			se := math.Sqrt(p * (1 - p) / n)
			if got := float64(counts[y]) / n; math.Abs(got-p) > 5*se {
				t.Errorf("t=%d: P(%d) = %.5f, want %.5f", scale, y, got, p)
			}
		}
		// Variance 2r/(1-r)^2.
		v := 2 * r / ((1 - r) * (1 - r))
		if got := sq/n - (sum/n)*(sum/n); math.Abs(got-v) > 0.05*v {
			t.Errorf("t=%d: variance %.3f, want %.3f", scale, got, v)
		}
	}
}

func BenchmarkDiscreteLaplace(b *testing.B) {
	rng := rand.New(rand.NewChaCha8([32]byte{1}))
	const t = 62_076_193 // laplaceScale(59.2) in offline/svt
	b.ReportAllocs()
	for b.Loop() {
		DiscreteLaplace(rng, t)
	}
}
