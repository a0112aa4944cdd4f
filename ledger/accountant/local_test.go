package accountant

import (
	"errors"
	"math"
	"testing"
)

// TestLocalGaussian checks the local DP epsilons against the analytic
// Gaussian mechanism: per value multiplier z, per step z/sqrt(values), per
// session z/sqrt(steps x values).
func TestLocalGaussian(t *testing.T) {
	eps := func(z float64) float64 {
		e, err := GaussianEpsilon(z, 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	// 4 values per step (3 observation components and the reward).
	g, err := NewLocalGaussian(4, 1e-5, 4)
	if err != nil {
		t.Fatal(err)
	}
	if g.PerValueEpsilon != eps(4) || g.PerStepEpsilon != eps(4/math.Sqrt(4)) {
		t.Errorf("per value %v (want %v), per step %v (want %v)", g.PerValueEpsilon, eps(4), g.PerStepEpsilon, eps(2))
	}
	s, err := g.SessionEpsilon(25)
	if err != nil || s != eps(4/math.Sqrt(100)) {
		t.Errorf("session of 25 steps: %v %v, want %v", s, err, eps(0.4))
	}
	if _, err := g.SessionEpsilon(0); !errors.Is(err, ErrInvalid) {
		t.Errorf("session of 0 steps: %v, want ErrInvalid", err)
	}
	// z = 1, delta = 1e-5: the agent's per-session epsilon 4.377.
	g1, err := NewLocalGaussian(1, 1e-5, 2)
	if err != nil || math.Abs(g1.PerValueEpsilon-4.3772) > 1e-4 {
		t.Errorf("per-value epsilon at z = 1: %v (%v), want 4.3772", g1.PerValueEpsilon, err)
	}
	// No noised value: nothing leaks.
	if g0, err := NewLocalGaussian(1, 1e-5, 0); err != nil || g0.PerValueEpsilon != 0 || g0.PerStepEpsilon != 0 {
		t.Errorf("no values: %+v %v, want zero epsilons", g0, err)
	}
	for _, c := range []struct {
		name          string
		z, delta      float64
		valuesPerStep int
	}{
		{"negative values", 1, 1e-5, -1},
		{"zero z", 0, 1e-5, 1},
		{"delta 1", 1, 1, 1},
	} {
		if _, err := NewLocalGaussian(c.z, c.delta, c.valuesPerStep); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", c.name, err)
		}
	}
}
