// Package sims holds the simulated environments and simulated user
// populations of dprl: exact replicas of Gymnasium's classic control tasks,
// the papers' domains (RiverSwim, chain, HIV, Dosing) and a recommendation user
// simulator. It imports no other dprl package.
//
// Every environment draws its randomness from the *rand.Rand given to Reset;
// there is no package-level mutable state. Step allocates nothing.
package sims

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// SpaceKind says whether a space is discrete or a box.
type SpaceKind int

// The space kinds.
const (
	Discrete SpaceKind = iota // actions 0..N-1
	Box                       // real vectors within [Low, High] per component
)

// String returns "discrete" or "box".
func (k SpaceKind) String() string {
	switch k {
	case Discrete:
		return "discrete"
	case Box:
		return "box"
	}
	return fmt.Sprintf("SpaceKind(%d)", int(k))
}

// Space describes an observation or action space.
type Space struct {
	Kind SpaceKind
	// N is the number of actions of a discrete space.
	N int
	// Low and High bound each component of a box; their length is its
	// dimension. Unbounded components are ±Inf.
	Low, High []float64
}

// Dim is the vector length of the space: N is not a dimension, so a discrete
// space has dimension 1 (the action index).
func (s Space) Dim() int {
	if s.Kind == Discrete {
		return 1
	}
	return len(s.Low)
}

// Action is one action: Index for a discrete action space, Vec for a box.
type Action struct {
	Index int
	Vec   []float64
}

// Env is one environment instance. It is not safe for concurrent use; run one
// instance per goroutine.
type Env interface {
	// ObservationSpace is the box of observations (length = Dim()).
	ObservationSpace() Space
	// ActionSpace is the space of actions.
	ActionSpace() Space
	// MaxSteps is the episode step limit: Step reports truncated on the step
	// where the elapsed count reaches it.
	MaxSteps() int
	// Reset starts an episode drawing from rng, which the environment keeps
	// for its stochastic transitions until the next Reset, and writes the
	// first observation into obs (len(obs) == ObservationSpace().Dim()).
	Reset(rng *rand.Rand, obs []float64)
	// Step applies the action, writes the next observation into obs and
	// returns the reward and whether the episode terminated or was truncated.
	// It panics on an action outside the action space (validate outside
	// input first with CheckAction) or a wrong-length obs.
	Step(a Action, obs []float64) (reward float64, terminated, truncated bool)
}

// StateSetter is implemented by environments whose internal state can be set
// directly (after Reset), for scripted rollouts and exactness tests.
type StateSetter interface {
	// SetState sets the internal state, writes the matching observation into
	// obs, and returns an error naming what is wrong with state.
	SetState(state, obs []float64) error
}

// ErrBadAction is returned by CheckAction for an action outside the space.
var ErrBadAction = errors.New("sims: bad action")

// CheckAction validates an action from outside input against a space.
func CheckAction(s Space, a Action) error {
	switch s.Kind {
	case Discrete:
		if a.Vec != nil {
			return fmt.Errorf("%w: want a discrete action index in [0, %d), got a vector", ErrBadAction, s.N)
		}
		if a.Index < 0 || a.Index >= s.N {
			return fmt.Errorf("%w: index %d outside [0, %d)", ErrBadAction, a.Index, s.N)
		}
	case Box:
		if len(a.Vec) != len(s.Low) {
			return fmt.Errorf("%w: want a vector of length %d, got length %d", ErrBadAction, len(s.Low), len(a.Vec))
		}
		for i, v := range a.Vec {
			if v != v || v > 1.7976931348623157e308 || v < -1.7976931348623157e308 {
				return fmt.Errorf("%w: component %d is %v", ErrBadAction, i, v)
			}
		}
	}
	return nil
}
