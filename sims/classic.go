package sims

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// ErrBadState is returned by SetState for a state of the wrong length, with
// non-finite components, or outside the environment's state set.
var ErrBadState = errors.New("sims: bad state")

// checkState validates a state vector from outside input: its length and
// that every component is finite.
func checkState(state []float64, names ...string) error {
	if len(state) != len(names) {
		return fmt.Errorf("%w: want %d components %v, got %d", ErrBadState, len(names), names, len(state))
	}
	for i, v := range state {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: component %d (%s) is %v", ErrBadState, i, names[i], v)
		}
	}
	return nil
}

// checkObs panics on an observation buffer of the wrong length: a programmer
// error.
func checkObs(obs []float64, dim int) {
	if len(obs) != dim {
		panic(fmt.Sprintf("sims: observation buffer has length %d, want %d", len(obs), dim))
	}
}

// checkIndex panics on a discrete action outside [0, n): a programmer error
// (outside input is validated with CheckAction).
func checkIndex(a Action, n int) {
	if a.Vec != nil || a.Index < 0 || a.Index >= n {
		panic(fmt.Sprintf("sims: discrete action %+v outside [0, %d)", a, n))
	}
}

// uniform draws from [low, high) as numpy's Generator.uniform does:
// low + (high-low)*U with U uniform in [0, 1).
func uniform(rng *rand.Rand, low, high float64) float64 {
	return low + (high-low)*rng.Float64()
}

// pyMod is Python's (and numpy's) floating-point modulo: the result has the
// sign of m, as in CPython's float_rem and numpy's npy_divmod.
func pyMod(x, m float64) float64 {
	r := math.Mod(x, m)
	if r != 0 {
		if (m < 0) != (r < 0) {
			r += m
		}
	} else {
		r = math.Copysign(0, m)
	}
	return r
}

// infBox returns the bounds of an unbounded box of dimension n.
func infBox(n int) (low, high []float64) {
	low, high = make([]float64, n), make([]float64, n)
	for i := range low {
		low[i], high[i] = math.Inf(-1), math.Inf(1)
	}
	return low, high
}
