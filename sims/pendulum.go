package sims

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Pendulum is Gymnasium's Pendulum-v1 (gymnasium/envs/classic_control/
// pendulum.py): the inverted pendulum swing-up with g = 10, m = 1, l = 1,
// dt = 0.05. The internal state is [theta, theta_dot] (theta never wrapped);
// the observation is [cos theta, sin theta, theta_dot]. The action is a
// 1-dimensional box: the torque, clipped to [-2, 2] before use. Reward
// -(angle_normalize(theta)^2 + 0.1 theta_dot^2 + 0.001 u^2) on the pre-step
// state and clipped torque; never terminates; truncated at 200 steps.
type Pendulum struct {
	maxSpeed, maxTorque, dt, g, m, l float64

	theta, thetaDot float64
	steps           int
}

// NewPendulum returns a Pendulum-v1 environment (g = 10); call Reset before
// Step.
func NewPendulum() *Pendulum {
	return &Pendulum{maxSpeed: 8, maxTorque: 2.0, dt: 0.05, g: 10.0, m: 1.0, l: 1.0}
}

// ObservationSpace is the box [-1,1] x [-1,1] x [-8,8].
func (e *Pendulum) ObservationSpace() Space {
	return Space{Kind: Box, Low: []float64{-1, -1, -e.maxSpeed}, High: []float64{1, 1, e.maxSpeed}}
}

// ActionSpace is the box [-2, 2] of dimension 1 (torque).
func (e *Pendulum) ActionSpace() Space {
	return Space{Kind: Box, Low: []float64{-e.maxTorque}, High: []float64{e.maxTorque}}
}

// MaxSteps is 200 (Pendulum-v1).
func (e *Pendulum) MaxSteps() int { return 200 }

// Reset draws theta uniformly from [-pi, pi) and theta_dot from [-1, 1).
func (e *Pendulum) Reset(rng *rand.Rand, obs []float64) {
	checkObs(obs, 3)
	e.theta = uniform(rng, -math.Pi, math.Pi)
	e.thetaDot = uniform(rng, -1.0, 1.0)
	e.steps = 0
	e.observe(obs)
}

// SetState sets [theta, theta_dot] (used as given, not wrapped or clipped)
// and writes the observation. It does not reset the step count.
func (e *Pendulum) SetState(state, obs []float64) error {
	if err := checkState(state, "theta", "theta_dot"); err != nil {
		return err
	}
	checkObs(obs, 3)
	e.theta, e.thetaDot = state[0], state[1]
	e.observe(obs)
	return nil
}

func (e *Pendulum) observe(obs []float64) {
	obs[0], obs[1], obs[2] = math.Cos(e.theta), math.Sin(e.theta), e.thetaDot
}

// Step clips the torque, charges the cost on the pre-step state, then takes
// one semi-implicit Euler step: the speed first (clipped to ±8), then the
// angle with the new speed (pendulum.py step). It panics on an action vector
// that is not of length 1 or not finite.
func (e *Pendulum) Step(a Action, obs []float64) (reward float64, terminated, truncated bool) {
	if len(a.Vec) != 1 || math.IsNaN(a.Vec[0]) || math.IsInf(a.Vec[0], 0) {
		panic(fmt.Sprintf("sims: pendulum action %v: want one finite torque", a.Vec))
	}
	checkObs(obs, 3)
	th, thDot := e.theta, e.thetaDot
	g, m, l, dt := e.g, e.m, e.l, e.dt

	u := bound(a.Vec[0], -e.maxTorque, e.maxTorque)
	costs := -PendulumReward(th, thDot, u)

	newThDot := thDot + (3*g/(2*l)*math.Sin(th)+3.0/(m*(l*l))*u)*dt
	newThDot = bound(newThDot, -e.maxSpeed, e.maxSpeed)
	newTh := th + newThDot*dt

	e.theta, e.thetaDot = newTh, newThDot
	e.steps++
	e.observe(obs)
	return -costs, false, e.steps >= e.MaxSteps()
}

// PendulumReward is the reward of a step from angle th (0 upright) and
// speed thDot under the (already clipped) torque u (pendulum.py):
// -(normalize(th)^2 + 0.1 thDot^2 + 0.001 u^2).
func PendulumReward(th, thDot, u float64) float64 {
	an := angleNormalize(th)
	return -(an*an + 0.1*(thDot*thDot) + 0.001*(u*u))
}

// angleNormalize is pendulum.py's angle_normalize: ((x + pi) mod 2pi) - pi
// with Python's floor-modulo semantics, in [-pi, pi).
func angleNormalize(x float64) float64 {
	pi := math.Pi
	return pyMod(x+pi, 2*pi) - pi
}
