package sims

import (
	"math"
	"math/rand/v2"
)

// MountainCar is Gymnasium's MountainCar-v0 (gymnasium/envs/classic_control/
// mountain_car.py, after Moore 1990) with float64 observations [position,
// velocity]. Actions 0, 1, 2 accelerate left, not at all, right. Reward -1 on
// every step including the terminal one; terminated when position >= 0.5 and
// velocity >= 0; truncated at 200 steps.
type MountainCar struct {
	minPosition, maxPosition, maxSpeed, goalPosition, goalVelocity float64
	force, gravity                                                 float64

	position, velocity float64
	steps              int
}

// NewMountainCar returns a MountainCar-v0 environment; call Reset before
// Step.
func NewMountainCar() *MountainCar {
	return &MountainCar{minPosition: -1.2, maxPosition: 0.6, maxSpeed: 0.07, goalPosition: 0.5,
		force: 0.001, gravity: 0.0025}
}

// ObservationSpace is the box [-1.2, 0.6] x [-0.07, 0.07].
func (e *MountainCar) ObservationSpace() Space {
	return Space{Kind: Box, Low: []float64{e.minPosition, -e.maxSpeed}, High: []float64{e.maxPosition, e.maxSpeed}}
}

// ActionSpace is Discrete(3): accelerate left, none, right.
func (e *MountainCar) ActionSpace() Space { return Space{Kind: Discrete, N: 3} }

// MaxSteps is 200 (MountainCar-v0).
func (e *MountainCar) MaxSteps() int { return 200 }

// Reset draws the position uniformly from [-0.6, -0.4) with velocity 0.
func (e *MountainCar) Reset(rng *rand.Rand, obs []float64) {
	checkObs(obs, 2)
	e.position = uniform(rng, -0.6, -0.4)
	e.velocity = 0
	e.steps = 0
	e.observe(obs)
}

// SetState sets [position, velocity] (used as given, not clipped) and writes
// the observation. It does not reset the step count.
func (e *MountainCar) SetState(state, obs []float64) error {
	if err := checkState(state, "position", "velocity"); err != nil {
		return err
	}
	checkObs(obs, 2)
	e.position, e.velocity = state[0], state[1]
	e.observe(obs)
	return nil
}

func (e *MountainCar) observe(obs []float64) { obs[0], obs[1] = e.position, e.velocity }

// Step applies mountain_car.py's update: v += (a-1)*force - cos(3p)*gravity,
// clipped to ±0.07; p += v, clipped to [-1.2, 0.6]; an inelastic left wall
// (v = 0 when p == -1.2 and v < 0).
func (e *MountainCar) Step(a Action, obs []float64) (reward float64, terminated, truncated bool) {
	checkIndex(a, 3)
	checkObs(obs, 2)
	position, velocity := e.position, e.velocity
	velocity += float64(a.Index-1)*e.force + math.Cos(3*position)*(-e.gravity)
	velocity = bound(velocity, -e.maxSpeed, e.maxSpeed)
	position += velocity
	position = bound(position, e.minPosition, e.maxPosition)
	if position == e.minPosition && velocity < 0 {
		velocity = 0
	}
	terminated = position >= e.goalPosition && velocity >= e.goalVelocity
	e.position, e.velocity = position, velocity
	e.steps++
	e.observe(obs)
	return -1.0, terminated, e.steps >= e.MaxSteps()
}
