// Package space is the vocabulary shared by the simulators, the agent and the
// wire protocol: observation and action spaces and the actions taken in them.
// It holds no simulator logic and imports no other dprl package, so packages
// that only exchange actions (the stream wire protocol, the agent's update
// records) need not import the simulators in package sims.
package space

import (
	"errors"
	"fmt"
)

// Kind says whether a space is discrete or a box.
type Kind int

// The space kinds.
const (
	Discrete Kind = iota // actions 0..N-1
	Box                  // real vectors within [Low, High] per component
)

// String returns "discrete" or "box".
func (k Kind) String() string {
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
	Kind Kind
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

// ErrBadAction is returned by CheckAction for an action outside the space.
var ErrBadAction = errors.New("space: bad action")

// CheckAction validates an action from outside input against a space: a
// discrete action must carry no vector and an index in [0, N); a box action
// must have one finite component per dimension (the box bounds are not
// enforced here).
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
