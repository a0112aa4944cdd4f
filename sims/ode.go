package sims

import (
	"errors"
	"fmt"
	"math"
)

// ErrODE is returned when the ODE integrator cannot reach the end of the
// interval (step size underflow or too many steps).
var ErrODE = errors.New("sims: ode integration failed")

// ODEFunc writes dy/dt at (t, y) into dy. It must not retain y or dy.
type ODEFunc func(dy []float64, t float64, y []float64)

// DOPRI5 is an adaptive Dormand–Prince 5(4) Runge–Kutta integrator with
// local error control (Dormand & Prince 1980; Hairer, Nørsett & Wanner,
// "Solving ODEs I", §II.4-5, the DOPRI5 step-size controller without
// dense output). Its workspace is allocated once by NewDOPRI5; Integrate
// allocates nothing. It is not safe for concurrent use.
type DOPRI5 struct {
	// RTol and ATol are the relative and absolute error tolerances of each
	// step: the scaled error sqrt(mean((e_i / (ATol + RTol max(|y_i|,
	// |y_new_i|)))^2)) must be at most 1.
	RTol, ATol float64
	// MaxSteps bounds the accepted+rejected steps of one Integrate call.
	MaxSteps int
	// H is the last step size used; Integrate starts from it when it is
	// positive (and at most the interval), else from a heuristic guess.
	H float64
	// Steps counts the steps (accepted and rejected) of the last Integrate.
	Steps int

	k          [7][]float64
	ytmp, ynew []float64
}

// NewDOPRI5 returns an integrator for systems of dimension n.
func NewDOPRI5(n int, rtol, atol float64) *DOPRI5 {
	d := &DOPRI5{RTol: rtol, ATol: atol, MaxSteps: 1_000_000}
	for i := range d.k {
		d.k[i] = make([]float64, n)
	}
	d.ytmp = make([]float64, n)
	d.ynew = make([]float64, n)
	return d
}

// Dormand–Prince 5(4) coefficients (Hairer & Wanner, Table 5.2).
const (
	dpC2, dpC3, dpC4, dpC5 = 1.0 / 5, 3.0 / 10, 4.0 / 5, 8.0 / 9

	dpA21                        = 1.0 / 5
	dpA31, dpA32                 = 3.0 / 40, 9.0 / 40
	dpA41, dpA42, dpA43          = 44.0 / 45, -56.0 / 15, 32.0 / 9
	dpA51, dpA52, dpA53, dpA54   = 19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729
	dpA61, dpA62, dpA63, dpA64   = 9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176
	dpA65                        = -5103.0 / 18656
	dpA71, dpA73, dpA74, dpA75   = 35.0 / 384, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784
	dpA76                        = 11.0 / 84
	dpE1, dpE3, dpE4, dpE5, dpE6 = 71.0 / 57600, -71.0 / 16695, 71.0 / 1920, -17253.0 / 339200, 22.0 / 525
	dpE7                         = -1.0 / 40
)

// Integrate advances y (in place) from t0 to t1 > t0 under f.
func (d *DOPRI5) Integrate(f ODEFunc, t0, t1 float64, y []float64) error {
	n := len(d.ytmp)
	if len(y) != n {
		panic(fmt.Sprintf("sims: DOPRI5 of dimension %d given a state of length %d", n, len(y)))
	}
	d.Steps = 0
	if !(t1 > t0) {
		return nil
	}
	k := &d.k
	ytmp, ynew := d.ytmp, d.ynew
	t := t0
	f(k[0], t, y)
	h := d.H
	if !(h > 0) {
		// Hairer & Wanner's initial step heuristic (simplified).
		var d0, d1 float64
		for i := range n {
			sc := d.ATol + d.RTol*math.Abs(y[i])
			d0 += (y[i] / sc) * (y[i] / sc)
			d1 += (k[0][i] / sc) * (k[0][i] / sc)
		}
		d0, d1 = math.Sqrt(d0/float64(n)), math.Sqrt(d1/float64(n))
		if d0 < 1e-5 || d1 < 1e-5 {
			h = 1e-6
		} else {
			h = 0.01 * d0 / d1
		}
	}
	if h > t1-t0 {
		h = t1 - t0
	}
	const fac, facMin, facMax = 0.9, 0.2, 10.0
	for t < t1 {
		if d.Steps >= d.MaxSteps {
			return fmt.Errorf("%w: more than %d steps at t=%g", ErrODE, d.MaxSteps, t)
		}
		last := false
		if t+h >= t1 || t+1.01*h >= t1 {
			h = t1 - t
			last = true
		}
		if h <= math.Abs(t)*1e-15 {
			return fmt.Errorf("%w: step size underflow at t=%g", ErrODE, t)
		}
		d.Steps++
		for i := range n {
			ytmp[i] = y[i] + h*dpA21*k[0][i]
		}
		f(k[1], t+dpC2*h, ytmp)
		for i := range n {
			ytmp[i] = y[i] + h*(dpA31*k[0][i]+dpA32*k[1][i])
		}
		f(k[2], t+dpC3*h, ytmp)
		for i := range n {
			ytmp[i] = y[i] + h*(dpA41*k[0][i]+dpA42*k[1][i]+dpA43*k[2][i])
		}
		f(k[3], t+dpC4*h, ytmp)
		for i := range n {
			ytmp[i] = y[i] + h*(dpA51*k[0][i]+dpA52*k[1][i]+dpA53*k[2][i]+dpA54*k[3][i])
		}
		f(k[4], t+dpC5*h, ytmp)
		for i := range n {
			ytmp[i] = y[i] + h*(dpA61*k[0][i]+dpA62*k[1][i]+dpA63*k[2][i]+dpA64*k[3][i]+dpA65*k[4][i])
		}
		f(k[5], t+h, ytmp)
		for i := range n {
			ynew[i] = y[i] + h*(dpA71*k[0][i]+dpA73*k[2][i]+dpA74*k[3][i]+dpA75*k[4][i]+dpA76*k[5][i])
		}
		f(k[6], t+h, ynew)
		var errSum float64
		for i := range n {
			e := h * (dpE1*k[0][i] + dpE3*k[2][i] + dpE4*k[3][i] + dpE5*k[4][i] + dpE6*k[5][i] + dpE7*k[6][i])
			sc := d.ATol + d.RTol*math.Max(math.Abs(y[i]), math.Abs(ynew[i]))
			errSum += (e / sc) * (e / sc)
		}
		errNorm := math.Sqrt(errSum / float64(n))
		if math.IsNaN(errNorm) {
			errNorm = math.Inf(1)
		}
		scale := facMax
		if errNorm > 0 {
			scale = math.Min(facMax, math.Max(facMin, fac*math.Pow(errNorm, -0.2)))
		}
		if errNorm <= 1 {
			t += h
			if last {
				t = t1
			}
			copy(y, ynew)
			k[0], k[6] = k[6], k[0] // FSAL: the last stage is the next first.
			if !last {
				d.H = h * scale
			}
			h *= scale
			continue
		}
		h *= math.Min(1, scale)
	}
	return nil
}
