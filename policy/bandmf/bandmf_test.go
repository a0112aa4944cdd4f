package bandmf

import (
	"math"
	"testing"

	"dprl/ledger/accountant/bandsens"
)

// TestInverseCoefficients checks C h = e_0 by convolution, and the
// prefix-noise identity of the full square root: with b = T the noise of
// the prefix sum after T releases is A C^{-1} z = C z, whose last row has
// norm sqrt(sum_{j<T} c_j^2) (the square root's column norm).
func TestInverseCoefficients(t *testing.T) {
	for _, b := range []int{1, 2, 3, 7, 40} {
		c := bandsens.SqrtCoefficients(b)
		h := InverseCoefficients(c, 60)
		for n := range 60 {
			s := 0.0
			for j := 0; j < b && j <= n; j++ {
				s += c[j] * h[n-j]
			}
			want := 0.0
			if n == 0 {
				want = 1
			}
			if math.Abs(s-want) > 1e-12 {
				t.Fatalf("b = %d: (C h)_%d = %v, want %v", b, n, s, want)
			}
		}
	}
	for _, T := range []int{1, 5, 64, 500} {
		c := bandsens.SqrtCoefficients(T)
		if got, want := PrefixNoise(c, T), bandsens.ColumnNorm(c); math.Abs(got-want) > 1e-9*want {
			t.Fatalf("T = %d: full square root prefix noise %v, want %v", T, got, want)
		}
		if got := PrefixNoise([]float64{1}, T); math.Abs(got-math.Sqrt(float64(T))) > 1e-12*got {
			t.Fatalf("T = %d: independent prefix noise %v, want sqrt(T)", T, got)
		}
	}
}

// TestCheckRounding checks the rounding condition's boundary.
func TestCheckRounding(t *testing.T) {
	if err := CheckRounding(bandsens.SqrtCoefficients(100), 256); err != nil {
		t.Fatalf("100 bands, K = 256: %v", err)
	}
	if err := CheckRounding(bandsens.SqrtCoefficients(4096), 1<<15); err == nil {
		t.Fatal("4096 bands, K = 2^15: accepted")
	}
}

// TestNoiseRatio measures the prefix-sum noise of the banded square root
// relative to independent noise at equal per-user epsilon (the same
// per-user Gaussian multiplier z / sqrt(k) when sep = b): runs of T
// releases in which a user takes part k times, any two b apart (b =
// floor((T-1)/(k-1)), the largest band that lets k participations fit),
// and a few fixed bands. Run with -v for the table.
func TestNoiseRatio(t *testing.T) {
	for _, T := range []int{1000, 10000} {
		for _, k := range []int{10, 30, 100} {
			b := (T - 1) / (k - 1)
			r, err := NoiseRatio(bandsens.SqrtCoefficients(b), T, k, b)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("T = %5d, k = %3d, b = %4d: banded/independent prefix noise %.3f (%.2fx lower)", T, k, b, r, 1/r)
			if !(r < 1) {
				t.Errorf("T = %d, k = %d, b = %d: ratio %v, want < 1", T, k, b, r)
			}
		}
		for _, b := range []int{1, 2, 4, 16, 64, 256} {
			r, err := NoiseRatio(bandsens.SqrtCoefficients(b), T, 10, b)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("T = %5d, b = %4d: ratio %.3f (%.2fx lower)", T, b, r, 1/r)
			if b == 1 && math.Abs(r-1) > 1e-5 {
				t.Errorf("one band: ratio %v, want 1", r)
			}
		}
	}
	// Separation below the bandwidth raises the sensitivity above sqrt(k).
	c := bandsens.SqrtCoefficients(16)
	rho, err := bandsens.Sensitivities(c, 10, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("16 bands, separation 4: rho(10) = %.3f vs sqrt(10) = %.3f", rho[10], math.Sqrt(10))
	if !(rho[10] > math.Sqrt(10)) {
		t.Errorf("separation below the band: rho(10) = %v, want > sqrt(10)", rho[10])
	}
}
