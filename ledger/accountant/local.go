package accountant

import (
	"fmt"
	"math"
)

// LocalGaussian is the local differential privacy of a client that clips
// each value to a public range of width w and adds N(0, (Z w)^2)
// (stream.WithLocalDP), for a session of a given shape. n values compose to
// the Gaussian mechanism of multiplier Z / sqrt(n) (Dong, Roth and Su 2022,
// "Gaussian differential privacy", Corollary 3.3), priced by the analytic
// Gaussian mechanism (Balle and Wang 2018, "Improving the Gaussian mechanism
// for differential privacy", Theorem 8). The argument, and what it does not
// cover (the session's length, ending, ids and timing): docs/privacy.md,
// section 12.
type LocalGaussian struct {
	Z, Delta float64
	// PerValueEpsilon protects one observation component or one reward (0
	// when no value is noised).
	PerValueEpsilon float64
	// PerStepEpsilon protects one act request (the observation and the
	// previous action's reward) or one step of a session.
	PerStepEpsilon float64
	// ValuesPerStep is the number of noised values per step (observation
	// components and reward of non-zero width).
	ValuesPerStep int
}

// NewLocalGaussian returns the guarantee at delta of valuesPerStep values
// per step, each noised with multiplier z.
func NewLocalGaussian(z, delta float64, valuesPerStep int) (LocalGaussian, error) {
	if valuesPerStep < 0 {
		return LocalGaussian{}, fmt.Errorf("%w: local Gaussian: %d values per step, want >= 0", ErrInvalid, valuesPerStep)
	}
	g := LocalGaussian{Z: z, Delta: delta, ValuesPerStep: valuesPerStep}
	var err error
	if valuesPerStep > 0 {
		if g.PerValueEpsilon, err = localEpsilon(z, 1, delta); err != nil {
			return LocalGaussian{}, err
		}
	}
	if g.PerStepEpsilon, err = localEpsilon(z, valuesPerStep, delta); err != nil {
		return LocalGaussian{}, err
	}
	return g, nil
}

// SessionEpsilon returns the epsilon at Delta protecting a whole session of
// steps actions (steps observations and steps rewards, the last one sent
// with End): the composition of steps times the per-step values.
func (g LocalGaussian) SessionEpsilon(steps int) (float64, error) {
	if steps < 1 {
		return 0, fmt.Errorf("%w: local Gaussian: session of %d steps, want >= 1", ErrInvalid, steps)
	}
	return localEpsilon(g.Z, steps*g.ValuesPerStep, g.Delta)
}

// localEpsilon is the analytic-Gaussian epsilon of n values each noised
// with multiplier z (0 values: 0), composed as in LocalGaussian.
func localEpsilon(z float64, n int, delta float64) (float64, error) {
	if n == 0 {
		return 0, nil
	}
	eps, err := GaussianEpsilon(z/math.Sqrt(float64(n)), delta)
	if err != nil {
		return 0, fmt.Errorf("local Gaussian epsilon: %w", err)
	}
	return eps, nil
}
