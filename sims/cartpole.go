package sims

import (
	"math"
	"math/rand/v2"
)

// CartPole is Gymnasium's CartPole-v1 (gymnasium/envs/classic_control/
// cartpole.py, after Barto, Sutton and Anderson 1983), with float64
// observations [x, x_dot, theta, theta_dot]. Action 0 pushes the cart left,
// 1 right. Reward +1 on every step including the terminating one (0 on steps
// taken after termination, as Gymnasium); terminated when |x| > 2.4 or
// |theta| > 12 degrees; truncated at 500 steps.
type CartPole struct {
	gravity, massCart, massPole, totalMass, length, poleMassLength float64
	forceMag, tau, thetaThreshold, xThreshold                      float64

	x, xDot, theta, thetaDot float64
	steps                    int
	terminated               bool
}

// NewCartPole returns a CartPole-v1 environment; call Reset before Step.
func NewCartPole() *CartPole {
	e, err := NewCartPoleWith(DefaultCartPoleParams())
	if err != nil {
		panic(err) // the defaults always validate
	}
	return e
}

// ObservationSpace is the unbounded 4-dimensional box [x, x_dot, theta,
// theta_dot]. (Gymnasium declares ±4.8 and ±24 degrees for x and theta,
// which episodes never leave before terminating.)
func (e *CartPole) ObservationSpace() Space {
	low, high := infBox(4)
	low[0], high[0] = -2*e.xThreshold, 2*e.xThreshold
	low[2], high[2] = -2*e.thetaThreshold, 2*e.thetaThreshold
	return Space{Kind: Box, Low: low, High: high}
}

// ActionSpace is Discrete(2): 0 push left, 1 push right.
func (e *CartPole) ActionSpace() Space { return Space{Kind: Discrete, N: 2} }

// MaxSteps is 500 (CartPole-v1).
func (e *CartPole) MaxSteps() int { return 500 }

// Reset draws each state component uniformly from [-0.05, 0.05).
func (e *CartPole) Reset(rng *rand.Rand, obs []float64) {
	checkObs(obs, 4)
	e.x = uniform(rng, -0.05, 0.05)
	e.xDot = uniform(rng, -0.05, 0.05)
	e.theta = uniform(rng, -0.05, 0.05)
	e.thetaDot = uniform(rng, -0.05, 0.05)
	e.steps, e.terminated = 0, false
	e.observe(obs)
}

// SetState sets [x, x_dot, theta, theta_dot] and writes the observation.
// It does not reset the step count.
func (e *CartPole) SetState(state, obs []float64) error {
	if err := checkState(state, "x", "x_dot", "theta", "theta_dot"); err != nil {
		return err
	}
	checkObs(obs, 4)
	e.x, e.xDot, e.theta, e.thetaDot = state[0], state[1], state[2], state[3]
	e.terminated = false
	e.observe(obs)
	return nil
}

func (e *CartPole) observe(obs []float64) {
	obs[0], obs[1], obs[2], obs[3] = e.x, e.xDot, e.theta, e.thetaDot
}

// Step applies one explicit Euler step of size tau with every update taken
// from the pre-step state (Gymnasium's default "euler" integrator).
func (e *CartPole) Step(a Action, obs []float64) (reward float64, terminated, truncated bool) {
	checkIndex(a, 2)
	checkObs(obs, 4)
	force := -e.forceMag
	if a.Index == 1 {
		force = e.forceMag
	}
	cosTheta := math.Cos(e.theta)
	sinTheta := math.Sin(e.theta)
	// cartpole.py step; see also Florian (2007), "Correct equations for the
	// dynamics of the cart-pole system".
	temp := (force + e.poleMassLength*(e.thetaDot*e.thetaDot)*sinTheta) / e.totalMass
	thetaAcc := (e.gravity*sinTheta - cosTheta*temp) /
		(e.length * (4.0/3.0 - e.massPole*(cosTheta*cosTheta)/e.totalMass))
	xAcc := temp - e.poleMassLength*thetaAcc*cosTheta/e.totalMass

	e.x = e.x + e.tau*e.xDot
	e.xDot = e.xDot + e.tau*xAcc
	e.theta = e.theta + e.tau*e.thetaDot
	e.thetaDot = e.thetaDot + e.tau*thetaAcc

	terminated = e.x < -e.xThreshold || e.x > e.xThreshold ||
		e.theta < -e.thetaThreshold || e.theta > e.thetaThreshold
	reward = 1.0
	if terminated && e.terminated {
		reward = 0 // a step after termination, as Gymnasium's steps_beyond_terminated
	}
	e.terminated = e.terminated || terminated
	e.steps++
	e.observe(obs)
	return reward, terminated, e.steps >= e.MaxSteps()
}
