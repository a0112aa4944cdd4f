package sims

import (
	"math"
	"testing"
)

func TestDOPRI5ClosedForm(t *testing.T) {
	tests := []struct {
		name   string
		f      ODEFunc
		y0     []float64
		t1     float64
		exact  func(t float64) []float64
		maxErr float64
	}{
		{
			name:  "decay y'=-2y",
			f:     func(dy []float64, _ float64, y []float64) { dy[0] = -2 * y[0] },
			y0:    []float64{3},
			t1:    2,
			exact: func(t float64) []float64 { return []float64{3 * math.Exp(-2*t)} },
		},
		{
			name: "harmonic oscillator",
			f: func(dy []float64, _ float64, y []float64) {
				dy[0], dy[1] = y[1], -y[0]
			},
			y0:    []float64{1, 0},
			t1:    10,
			exact: func(t float64) []float64 { return []float64{math.Cos(t), -math.Sin(t)} },
		},
		{
			name:  "time-dependent y'=cos t",
			f:     func(dy []float64, t float64, _ []float64) { dy[0] = math.Cos(t) },
			y0:    []float64{0},
			t1:    5,
			exact: func(t float64) []float64 { return []float64{math.Sin(t)} },
		},
		{
			name:  "logistic y'=y(1-y)",
			f:     func(dy []float64, _ float64, y []float64) { dy[0] = y[0] * (1 - y[0]) },
			y0:    []float64{0.1},
			t1:    8,
			exact: func(t float64) []float64 { return []float64{1 / (1 + 9*math.Exp(-t))} },
		},
	}
	for _, tc := range tests {
		for _, tol := range []float64{1e-6, 1e-10} {
			t.Run(tc.name, func(t *testing.T) {
				d := NewDOPRI5(len(tc.y0), tol, tol)
				y := append([]float64(nil), tc.y0...)
				if err := d.Integrate(tc.f, 0, tc.t1, y); err != nil {
					t.Fatal(err)
				}
				want := tc.exact(tc.t1)
				for i := range y {
					// Global error stays within a small multiple of the tolerance.
					if e := math.Abs(y[i] - want[i]); e > 50*tol*(1+math.Abs(want[i])) {
						t.Errorf("tol %g: y[%d] = %.15g, want %.15g (err %.3g)", tol, i, y[i], want[i], e)
					}
				}
			})
		}
	}
}

func TestDOPRI5Chunked(t *testing.T) {
	// Integrating in pieces reaches the same point as in one go.
	f := func(dy []float64, _ float64, y []float64) { dy[0] = -y[0] }
	d := NewDOPRI5(1, 1e-12, 1e-12)
	y := []float64{1}
	for i := range 10 {
		if err := d.Integrate(f, float64(i)*0.1, float64(i+1)*0.1, y); err != nil {
			t.Fatal(err)
		}
	}
	if e := math.Abs(y[0] - math.Exp(-1)); e > 1e-10 {
		t.Errorf("y(1) = %.15g, want %.15g", y[0], math.Exp(-1))
	}
}

func TestDOPRI5MaxSteps(t *testing.T) {
	f := func(dy []float64, _ float64, y []float64) { dy[0] = -y[0] }
	d := NewDOPRI5(1, 1e-12, 1e-12)
	d.MaxSteps = 3
	if err := d.Integrate(f, 0, 100, []float64{1}); err == nil {
		t.Fatal("want an error when the step budget is exhausted")
	}
}
