package sims

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// DMCCartPole is the cart-pole of the DeepMind Control Suite (Tassa et
// al., "DeepMind Control Suite", 2018: suite/cartpole.py and cartpole.xml)
// with a continuous force, in its Balance and Swing-up tasks, as the PriMORL
// paper uses them. It is not MuJoCo-exact: the pole (a capsule of length 1,
// radius 0.045, mass 0.1 in MuJoCo) is a uniform rod of length 1 and mass
// 0.1 on a cart of mass 1, the equations are the textbook Lagrangian ones
// integrated by RK4 at MuJoCo's timestep 0.01, with the model's joint
// damping (5e-4 on the slider, 2e-6 on the hinge), and the slider's soft
// limit at +-1.8 is a hard, inelastic stop.
//
// The action u in [-1, 1] drives the slider's motor of gear 10 (a force of
// 10 u). The observation is [x, cos theta, sin theta, x_dot, theta_dot]
// with theta = 0 upright. The reward is the suite's smooth one, in [0, 1]:
//
//	upright * centered * small_control * small_velocity,
//	upright = (cos theta + 1)/2, centered = (1 + 0.1^((x/2)^2))/2,
//	small_control = (4 + 1 - u^2)/5, small_velocity = (1 + 0.1^((theta_dot/5)^2))/2
//
// (rewards.tolerance with its default value 0.1 at the margin, gaussian, and
// quadratic for the control). Episodes last 1,000 steps (10 s) and never
// terminate. Balance starts with x ~ U(-0.1, 0.1), theta ~ U(-0.034,
// 0.034); Swing-up with x ~ 0.01 N(0, 1), theta ~ pi + 0.01 N(0, 1); both
// with velocities 0.01 N(0, 1).
type DMCCartPole struct {
	swingUp            bool
	x, th, xDot, thDot float64
	steps              int
}

// The model's constants (cartpole.xml).
const (
	dmcCartMass   = 1.0
	dmcPoleMass   = 0.1
	dmcPoleLength = 1.0
	dmcGravity    = 9.81
	dmcGear       = 10.0
	dmcDt         = 0.01
	dmcSlideDamp  = 5e-4
	dmcHingeDamp  = 2e-6
	dmcRailLimit  = 1.8
	dmcSteps      = 1000
)

// NewDMCCartPole returns the Balance task, or Swing-up with swingUp.
func NewDMCCartPole(swingUp bool) *DMCCartPole { return &DMCCartPole{swingUp: swingUp} }

// ObservationSpace is [x, cos, sin, x_dot, theta_dot]: x in [-1.8, 1.8],
// the cosine and sine in [-1, 1], the velocities unbounded.
func (e *DMCCartPole) ObservationSpace() Space {
	inf := math.Inf(1)
	return Space{Kind: Box, Low: []float64{-dmcRailLimit, -1, -1, -inf, -inf}, High: []float64{dmcRailLimit, 1, 1, inf, inf}}
}

// ActionSpace is the motor's control in [-1, 1].
func (e *DMCCartPole) ActionSpace() Space {
	return Space{Kind: Box, Low: []float64{-1}, High: []float64{1}}
}

// MaxSteps is 1,000 (10 s at 0.01 s a step).
func (e *DMCCartPole) MaxSteps() int { return dmcSteps }

// Reset draws the task's start state from rng.
func (e *DMCCartPole) Reset(rng *rand.Rand, obs []float64) {
	checkObs(obs, 5)
	if e.swingUp {
		e.x = 0.01 * rng.NormFloat64()
		e.th = math.Pi + 0.01*rng.NormFloat64()
	} else {
		e.x = uniform(rng, -0.1, 0.1)
		e.th = uniform(rng, -0.034, 0.034)
	}
	e.xDot, e.thDot = 0.01*rng.NormFloat64(), 0.01*rng.NormFloat64()
	e.steps = 0
	e.observe(obs)
}

// SetState sets [x, theta, x_dot, theta_dot] and writes the observation.
func (e *DMCCartPole) SetState(state, obs []float64) error {
	if len(state) != 4 {
		return fmt.Errorf("sims: dmc cart-pole state has %d values, want 4 (x, theta, x_dot, theta_dot)", len(state))
	}
	for i, v := range state {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("sims: dmc cart-pole state[%d] = %v, want finite", i, v)
		}
	}
	if math.Abs(state[0]) > dmcRailLimit {
		return fmt.Errorf("sims: dmc cart-pole x = %v outside the rail [-1.8, 1.8]", state[0])
	}
	e.x, e.th, e.xDot, e.thDot = state[0], state[1], state[2], state[3]
	e.observe(obs)
	return nil
}

func (e *DMCCartPole) observe(obs []float64) {
	checkObs(obs, 5)
	obs[0], obs[1], obs[2], obs[3], obs[4] = e.x, math.Cos(e.th), math.Sin(e.th), e.xDot, e.thDot
}

// accel returns the cart's and the pole's accelerations under force f.
func dmcAccel(th, xDot, thDot, f float64) (xAcc, thAcc float64) {
	const lc = dmcPoleLength / 2
	const ip = dmcPoleMass * dmcPoleLength * dmcPoleLength / 3 // a rod about its end
	s, c := math.Sin(th), math.Cos(th)
	a11, a12, a22 := dmcCartMass+dmcPoleMass, dmcPoleMass*lc*c, ip
	b1 := f - dmcSlideDamp*xDot + dmcPoleMass*lc*s*thDot*thDot
	b2 := dmcPoleMass*dmcGravity*lc*s - dmcHingeDamp*thDot
	det := a11*a22 - a12*a12
	return (b1*a22 - a12*b2) / det, (a11*b2 - a12*b1) / det
}

// Step applies the control for one 0.01 s step (RK4) and returns the
// smooth reward of the new state.
func (e *DMCCartPole) Step(a Action, obs []float64) (reward float64, terminated, truncated bool) {
	if len(a.Vec) != 1 || math.IsNaN(a.Vec[0]) || math.IsInf(a.Vec[0], 0) {
		panic(fmt.Sprintf("sims: dmc cart-pole action %v: want one finite control", a.Vec))
	}
	u := bound(a.Vec[0], -1, 1)
	f := dmcGear * u
	deriv := func(x, th, xd, thd float64) (float64, float64, float64, float64) {
		xa, tha := dmcAccel(th, xd, thd, f)
		return xd, thd, xa, tha
	}
	x, th, xd, thd := e.x, e.th, e.xDot, e.thDot
	k1x, k1t, k1xd, k1td := deriv(x, th, xd, thd)
	h := dmcDt / 2
	k2x, k2t, k2xd, k2td := deriv(x+h*k1x, th+h*k1t, xd+h*k1xd, thd+h*k1td)
	k3x, k3t, k3xd, k3td := deriv(x+h*k2x, th+h*k2t, xd+h*k2xd, thd+h*k2td)
	k4x, k4t, k4xd, k4td := deriv(x+dmcDt*k3x, th+dmcDt*k3t, xd+dmcDt*k3xd, thd+dmcDt*k3td)
	w := dmcDt / 6
	x += w * (k1x + 2*k2x + 2*k3x + k4x)
	th += w * (k1t + 2*k2t + 2*k3t + k4t)
	xd += w * (k1xd + 2*k2xd + 2*k3xd + k4xd)
	thd += w * (k1td + 2*k2td + 2*k3td + k4td)
	// The rail's end: a hard, inelastic stop.
	if x > dmcRailLimit {
		x, xd = dmcRailLimit, min(xd, 0)
	} else if x < -dmcRailLimit {
		x, xd = -dmcRailLimit, max(xd, 0)
	}
	e.x, e.th, e.xDot, e.thDot = x, th, xd, thd
	e.steps++
	e.observe(obs)
	return DMCCartPoleReward(x, th, thd, u), false, e.steps >= dmcSteps
}

// DMCCartPoleReward is the suite's smooth reward at cart position x, pole
// angle th (0 upright), angular velocity thd and control u in [-1, 1].
func DMCCartPoleReward(x, th, thd, u float64) float64 {
	upright := (math.Cos(th) + 1) / 2
	centered := (1 + math.Pow(0.1, (x/2)*(x/2))) / 2
	smallControl := (4 + max(0, 1-u*u)) / 5
	smallVelocity := (1 + math.Pow(0.1, (thd/5)*(thd/5))) / 2
	return upright * centered * smallControl * smallVelocity
}
