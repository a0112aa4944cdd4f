package ticks

import (
	"math"
	"slices"
	"testing"
)

// TestLabels: the fewest decimals that tell the ticks apart and state each
// value exactly; no trailing zeros, no "-0", exponents for huge or tiny
// magnitudes. The figures had "-750.00" and "2500.00".
func TestLabels(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want []string
	}{
		{[]float64{-1750, -1250, -750}, []string{"-1750", "-1250", "-750"}},
		{[]float64{0, 2500, 5000, 7500}, []string{"0", "2500", "5000", "7500"}},
		{[]float64{0, 0.25, 0.5, 0.75, 1}, []string{"0", "0.25", "0.5", "0.75", "1"}},
		{[]float64{0.1, 0.2, 0.30000000000000004}, []string{"0.1", "0.2", "0.3"}},
		{[]float64{-0.5, 0, 0.5}, []string{"-0.5", "0", "0.5"}},
		{[]float64{1, 1.5, 2, 2.5}, []string{"1", "1.5", "2", "2.5"}},
		{[]float64{0.001, 0.002, 0.003}, []string{"0.001", "0.002", "0.003"}},
		{[]float64{0, 2e-5, 4e-5}, []string{"0", "2e-5", "4e-5"}},
		{[]float64{0, 5e5, 1e6, 1.5e6}, []string{"0", "5e5", "1e6", "1.5e6"}},
		{[]float64{math.Copysign(0, -1), 1}, []string{"0", "1"}},
		{[]float64{4.377178100058402}, []string{"4.377"}},
		{nil, []string{}},
	} {
		if got := Labels(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Labels(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestTicks: round steps; Cover covers the range, Within stays inside it;
// integer steps are whole.
func TestTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		n      int
		int    bool
		step   float64
	}{
		{0, 10, 5, false, 2}, {0, 1, 5, false, 0.2}, {-1800, -700, 5, false, 200}, {0, 5000, 5, false, 1000}, {0, 4.4, 5, false, 1}, {0, 3, 5, true, 1}, {0, 0.3, 6, true, 1}, {0, 7, 5, false, 1},
	} {
		if got := Step(tc.lo, tc.hi, tc.n, tc.int); math.Abs(got-tc.step) > 1e-12 {
			t.Errorf("Step(%v, %v, %d, %v) = %v, want %v", tc.lo, tc.hi, tc.n, tc.int, got, tc.step)
		}
		c := Cover(tc.lo, tc.hi, tc.n, tc.int)
		if c[0] > tc.lo || c[len(c)-1] < tc.hi || len(c) > 3*tc.n {
			t.Errorf("Cover(%v, %v) = %v", tc.lo, tc.hi, c)
		}
		w := Within(tc.lo, tc.hi, tc.n)
		if len(w) < 2 || w[0] < tc.lo || w[len(w)-1] > tc.hi {
			t.Errorf("Within(%v, %v) = %v", tc.lo, tc.hi, w)
		}
	}
}
