package policy

import (
	"errors"
	"fmt"
	"math"

	"dprl/internal/vecmath"
)

// AdamConfig holds Adam's settings (Kingma & Ba 2015).
type AdamConfig struct {
	// LR is the step size, > 0. Table 3: 7.26e-4 (control), 9.25e-4 (dosing).
	LR float64
	// Beta1 and Beta2 are the moment decay rates, in [0, 1). Default 0.9, 0.999.
	Beta1, Beta2 float64
	// Eps is added to sqrt(v) in the denominator, > 0. Default 1e-5 (CleanRL's
	// PPO, on which the paper's implementation is based; PyTorch's own default
	// is 1e-8).
	Eps float64
}

// DefaultAdamConfig returns LR 7.26e-4, Beta1 0.9, Beta2 0.999, Eps 1e-5.
func DefaultAdamConfig() AdamConfig {
	return AdamConfig{LR: 7.26e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-5}
}

// Validate reports every invalid field.
func (c AdamConfig) Validate() error {
	var errs []error
	if !(c.LR > 0) || math.IsInf(c.LR, 0) {
		errs = append(errs, fmt.Errorf("adam: lr %v, must be finite and > 0", c.LR))
	}
	if !(c.Beta1 >= 0 && c.Beta1 < 1) {
		errs = append(errs, fmt.Errorf("adam: beta1 %v, must be in [0, 1)", c.Beta1))
	}
	if !(c.Beta2 >= 0 && c.Beta2 < 1) {
		errs = append(errs, fmt.Errorf("adam: beta2 %v, must be in [0, 1)", c.Beta2))
	}
	if !(c.Eps > 0) {
		errs = append(errs, fmt.Errorf("adam: eps %v, must be > 0", c.Eps))
	}
	return errors.Join(errs...)
}

// Adam minimises over a flat parameter vector:
//
//	m <- b1 m + (1-b1) g,  v <- b2 v + (1-b2) g^2,
//	params <- params - lr * mhat / (sqrt(vhat) + eps)
//
// with mhat = m/(1-b1^t), vhat = v/(1-b2^t) while the moments are the
// zero-initialised ones, t counting the steps since the last Reset.
//
// Bias correction and SetMoments (the DPPG reset, App. C.2.3). The bias
// correction exists only to undo the zero initialisation of m and v. After
// SetMoments(m0) the moments start from a real estimate (the noised global
// update), whose weight after t steps is b^t and the data's 1-b^t: the weights
// already sum to one, so there is nothing to correct. SetMoments therefore
// switches the correction off (mhat = m, vhat = v) until the next Reset.
// Resetting t to 0 instead would divide the injected m by 1-b1 = 0.1 at the
// first step, a tenfold overweight of the noised update; keeping a running
// global t would make the result depend on how many steps earlier users took.
//
// Adam is not safe for concurrent use.
type Adam struct {
	Config AdamConfig
	m, v   []float64
	t      int  // steps since Reset (used for bias correction)
	warm   bool // moments set by SetMoments: no bias correction
}

// NewAdam returns an optimiser for n parameters with zero moments.
func NewAdam(n int, cfg AdamConfig) (*Adam, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("adam: %d parameters, must be >= 1", n)
	}
	return &Adam{Config: cfg, m: make([]float64, n), v: make([]float64, n)}, nil
}

// Reset zeroes the moments and the step counter (bias correction on).
func (a *Adam) Reset() {
	clear(a.m)
	clear(a.v)
	a.t = 0
	a.warm = false
}

// SetMoments sets m = m0 and v = m0^2 elementwise and switches bias
// correction off (see the type documentation). m0 is not retained.
func (a *Adam) SetMoments(m0 []float64) {
	if len(m0) != len(a.m) {
		panic(fmt.Sprintf("adam: moments length %d, want %d", len(m0), len(a.m)))
	}
	for i, g := range m0 {
		a.m[i] = g
		a.v[i] = g * g
	}
	a.t = 0
	a.warm = true
}

// SetSecondMoment sets m = 0 and v = g^2 elementwise and switches bias
// correction off. g is not retained.
func (a *Adam) SetSecondMoment(g []float64) {
	if len(g) != len(a.m) {
		panic(fmt.Sprintf("adam: moments length %d, want %d", len(g), len(a.m)))
	}
	clear(a.m)
	for i, x := range g {
		a.v[i] = x * x
	}
	a.t = 0
	a.warm = true
}

// CopyStateFrom makes a's moments and step state equal to b's, without
// allocating. Both must have the same length.
func (a *Adam) CopyStateFrom(b *Adam) {
	if len(a.m) != len(b.m) {
		panic("adam: state length mismatch")
	}
	copy(a.m, b.m)
	copy(a.v, b.v)
	a.t, a.warm = b.t, b.warm
}

// Step applies one Adam step to params in place, given the loss gradient grad.
// It allocates nothing.
func (a *Adam) Step(params, grad []float64) {
	if len(params) != len(a.m) || len(grad) != len(a.m) {
		panic(fmt.Sprintf("adam: params %d grad %d, want %d", len(params), len(grad), len(a.m)))
	}
	c := a.Config
	a.t++
	c1, c2 := 1.0, 1.0
	if !a.warm {
		c1 = 1 - math.Pow(c.Beta1, float64(a.t))
		c2 = 1 - math.Pow(c.Beta2, float64(a.t))
	}
	// params -= lr * (m/c1) / (sqrt(v/c2) + eps), sqrt(v/c2) taken as
	// sqrt(v)/sqrt(c2) (internal/vecmath: four lanes at a time with AVX2).
	vecmath.Adam(params, grad, a.m, a.v, vecmath.AdamParams{
		Beta1: c.Beta1, Beta2: c.Beta2, Step: c.LR / c1, InvSqrtC2: 1 / math.Sqrt(c2), Eps: c.Eps,
	})
}
