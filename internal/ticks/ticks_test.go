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

// TestTicks: Cover takes the smallest round step giving at most n
// intervals and covers the range; Within takes the step nearest n
// intervals and stays inside the range; integer steps are whole.
func TestTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi  float64
		n       int
		integer bool
		cover   []float64
		within  []float64
	}{
		{0, 7, 5, false, []float64{0, 2, 4, 6, 8}, []float64{0, 1, 2, 3, 4, 5, 6, 7}},
		{0.5, 7, 5, true, []float64{0, 2, 4, 6, 8}, []float64{1, 2, 3, 4, 5, 6, 7}},
		{0, 0.3, 6, false, []float64{0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3}, []float64{0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3}},
		{0, 3, 6, true, []float64{0, 1, 2, 3}, []float64{0, 1, 2, 3}},
		{-1780, -700, 5, false, []float64{-2000, -1500, -1000, -500}, []float64{-1600, -1400, -1200, -1000, -800}},
		{0, 2500, 5, false, []float64{0, 500, 1000, 1500, 2000, 2500}, []float64{0, 500, 1000, 1500, 2000, 2500}},
		{300, 6000, 5, false, []float64{0, 2000, 4000, 6000}, []float64{1000, 2000, 3000, 4000, 5000, 6000}},
	} {
		if got := Cover(tc.lo, tc.hi, tc.n, tc.integer); !near(got, tc.cover) {
			t.Errorf("Cover(%v, %v, %d, %v) = %v, want %v", tc.lo, tc.hi, tc.n, tc.integer, got, tc.cover)
		}
		if got := Within(tc.lo, tc.hi, tc.n, tc.integer); !near(got, tc.within) {
			t.Errorf("Within(%v, %v, %d) = %v, want %v", tc.lo, tc.hi, tc.n, got, tc.within)
		}
	}
}

func near(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*max(1, math.Abs(y)) })
}
