package sims

import (
	"math"
	"math/rand/v2"
)

// Acrobot is Gymnasium's Acrobot-v1 (gymnasium/envs/classic_control/
// acrobot.py, from RLPy; Sutton 1996 and Sutton & Barto's book) with the
// default "book" dynamics and no torque noise. The internal state is
// [theta1, theta2, dtheta1, dtheta2]; the observation is [cos theta1,
// sin theta1, cos theta2, sin theta2, dtheta1, dtheta2]. Actions 0, 1, 2 apply
// torque -1, 0, +1 on the joint between the links. Reward -1 per step, 0 on
// the terminal step; terminated when -cos(theta1) - cos(theta1+theta2) > 1;
// truncated at 500 steps.
type Acrobot struct {
	m1, m2, l1, l2, lc1, lc2, i1, i2, g, dt float64
	maxVel1, maxVel2                        float64

	s     [4]float64
	steps int
	// k1..k4 and tmp are the RK4 workspace (augmented 5-vectors).
	k1, k2, k3, k4, tmp [5]float64
}

// NewAcrobot returns an Acrobot-v1 environment; call Reset before Step.
func NewAcrobot() *Acrobot {
	e, err := NewAcrobotWith(DefaultAcrobotParams())
	if err != nil {
		panic(err) // the defaults always validate
	}
	return e
}

// ObservationSpace is the 6-dimensional box [-1,1]^4 x [-4pi,4pi] x [-9pi,9pi].
func (e *Acrobot) ObservationSpace() Space {
	return Space{Kind: Box,
		Low:  []float64{-1, -1, -1, -1, -e.maxVel1, -e.maxVel2},
		High: []float64{1, 1, 1, 1, e.maxVel1, e.maxVel2}}
}

// ActionSpace is Discrete(3): torques -1, 0, +1.
func (e *Acrobot) ActionSpace() Space { return Space{Kind: Discrete, N: 3} }

// MaxSteps is 500 (Acrobot-v1).
func (e *Acrobot) MaxSteps() int { return 500 }

// Reset draws each state component uniformly from [-0.1, 0.1) and, as
// Gymnasium does (astype(np.float32)), rounds it to float32 precision.
func (e *Acrobot) Reset(rng *rand.Rand, obs []float64) {
	checkObs(obs, 6)
	for i := range e.s {
		e.s[i] = float64(float32(uniform(rng, -0.1, 0.1)))
	}
	e.steps = 0
	e.observe(obs)
}

// SetState sets [theta1, theta2, dtheta1, dtheta2] (used as given, not
// wrapped or clipped) and writes the observation. It does not reset the step
// count.
func (e *Acrobot) SetState(state, obs []float64) error {
	if err := checkState(state, "theta1", "theta2", "dtheta1", "dtheta2"); err != nil {
		return err
	}
	checkObs(obs, 6)
	copy(e.s[:], state)
	e.observe(obs)
	return nil
}

func (e *Acrobot) observe(obs []float64) {
	obs[0], obs[1] = math.Cos(e.s[0]), math.Sin(e.s[0])
	obs[2], obs[3] = math.Cos(e.s[1]), math.Sin(e.s[1])
	obs[4], obs[5] = e.s[2], e.s[3]
}

// dsdt is acrobot.py's _dsdt with book dynamics: the time derivative of the
// augmented state y = [theta1, theta2, dtheta1, dtheta2, torque], written into
// dst. The expressions follow Gymnasium's operation order.
func (e *Acrobot) dsdt(dst, y *[5]float64) {
	m1, m2, l1, lc1, lc2, i1, i2, g := e.m1, e.m2, e.l1, e.lc1, e.lc2, e.i1, e.i2, e.g
	a := y[4]
	theta1, theta2, dtheta1, dtheta2 := y[0], y[1], y[2], y[3]
	pi := math.Pi
	cos2, sin2 := math.Cos(theta2), math.Sin(theta2)
	d1 := m1*(lc1*lc1) + m2*(l1*l1+lc2*lc2+2*l1*lc2*cos2) + i1 + i2
	d2 := m2*(lc2*lc2+l1*lc2*cos2) + i2
	phi2 := m2 * lc2 * g * math.Cos(theta1+theta2-pi/2.0)
	phi1 := -m2*l1*lc2*(dtheta2*dtheta2)*sin2 -
		2*m2*l1*lc2*dtheta2*dtheta1*sin2 +
		(m1*lc1+m2*l1)*g*math.Cos(theta1-pi/2) +
		phi2
	ddtheta2 := (a + d2/d1*phi1 - m2*l1*lc2*(dtheta1*dtheta1)*sin2 - phi2) /
		(m2*(lc2*lc2) + i2 - (d2*d2)/d1)
	ddtheta1 := -(d2*ddtheta2 + phi1) / d1
	*dst = [5]float64{dtheta1, dtheta2, ddtheta1, ddtheta2, 0.0}
}

// Step integrates one classical RK4 step of size dt on the augmented state
// with the torque appended (acrobot.py's rk4 helper over t = [0, dt]), then
// wraps both angles into [-pi, pi] and clips the speeds to ±4pi and ±9pi.
func (e *Acrobot) Step(a Action, obs []float64) (reward float64, terminated, truncated bool) {
	checkIndex(a, 3)
	checkObs(obs, 6)
	torque := float64(a.Index - 1) // AVAIL_TORQUE = [-1.0, 0.0, +1]

	y0 := [5]float64{e.s[0], e.s[1], e.s[2], e.s[3], torque}
	dt := e.dt // t[1] - t[0] with t = [0, dt]
	dt2 := dt / 2.0
	e.dsdt(&e.k1, &y0)
	for i := range e.tmp {
		e.tmp[i] = y0[i] + dt2*e.k1[i]
	}
	e.dsdt(&e.k2, &e.tmp)
	for i := range e.tmp {
		e.tmp[i] = y0[i] + dt2*e.k2[i]
	}
	e.dsdt(&e.k3, &e.tmp)
	for i := range e.tmp {
		e.tmp[i] = y0[i] + dt*e.k3[i]
	}
	e.dsdt(&e.k4, &e.tmp)
	h := dt / 6.0
	for i := range e.s {
		e.s[i] = y0[i] + h*(e.k1[i]+2*e.k2[i]+2*e.k3[i]+e.k4[i])
	}

	pi := math.Pi
	e.s[0] = wrap(e.s[0], -pi, pi)
	e.s[1] = wrap(e.s[1], -pi, pi)
	e.s[2] = bound(e.s[2], -e.maxVel1, e.maxVel1)
	e.s[3] = bound(e.s[3], -e.maxVel2, e.maxVel2)

	terminated = -math.Cos(e.s[0])-math.Cos(e.s[1]+e.s[0]) > 1.0
	reward = -1.0
	if terminated {
		reward = 0.0
	}
	e.steps++
	e.observe(obs)
	return reward, terminated, e.steps >= e.MaxSteps()
}

// wrap is acrobot.py's wrap: it adds or subtracts M-m until m <= x <= M.
// Unlike Gymnasium, which would loop forever, it returns NaN for an infinite
// x, and it first reduces an x more than 1000 periods out by a modulo (such
// states arise only from SetState with extreme values).
func wrap(x, m, M float64) float64 {
	diff := M - m
	if math.IsInf(x, 0) {
		return math.NaN()
	}
	if x > M+1000*diff || x < m-1000*diff {
		x = m + pyMod(x-m, diff)
	}
	for x > M {
		x = x - diff
	}
	for x < m {
		x = x + diff
	}
	return x
}

// bound is acrobot.py's bound: min(max(x, m), M).
func bound(x, m, M float64) float64 {
	return math.Min(math.Max(x, m), M)
}
