package accountant

import (
	"errors"
	"fmt"
	"math"
)

// Errors returned by the accountant. Test with errors.Is.
var (
	// ErrInvalid marks a parameter outside its domain; the message names it.
	ErrInvalid = errors.New("accountant: invalid parameter")
	// ErrUnsupported marks an event an accountant cannot bound (for example
	// a subsampled event given to the analytic accountant).
	ErrUnsupported = errors.New("accountant: unsupported event")
	// ErrOutOfRange marks parameters outside a closed form's validity range
	// (the classic Gaussian bound above epsilon 1).
	ErrOutOfRange = errors.New("accountant: outside the formula's validity range")
	// ErrUnreachable marks a calibration target no noise level reaches
	// within the search range.
	ErrUnreachable = errors.New("accountant: target unreachable")
)

// safetyPad is the relative margin added to every reported epsilon and noise
// multiplier so that rounding in the evaluation cannot undercount.
const safetyPad = 1e-9

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func checkZ(z float64) error {
	if !finite(z) || z <= 0 {
		return fmt.Errorf("%w: noise multiplier z = %v, want a finite z > 0", ErrInvalid, z)
	}
	return nil
}

func checkQ(q float64) error {
	if !finite(q) || q <= 0 || q > 1 {
		return fmt.Errorf("%w: sampling rate q = %v, want 0 < q <= 1", ErrInvalid, q)
	}
	return nil
}

func checkDelta(delta float64) error {
	if !finite(delta) || delta <= 0 || delta >= 1 {
		return fmt.Errorf("%w: delta = %v, want 0 < delta < 1", ErrInvalid, delta)
	}
	return nil
}

func checkEpsilon(eps float64) error {
	if !finite(eps) || eps <= 0 {
		return fmt.Errorf("%w: epsilon = %v, want a finite epsilon > 0", ErrInvalid, eps)
	}
	return nil
}

func checkSteps(steps int) error {
	if steps < 1 {
		return fmt.Errorf("%w: steps = %d, want steps >= 1", ErrInvalid, steps)
	}
	return nil
}
