// Package sims holds the simulated environments and simulated user
// populations of dprl: exact replicas of Gymnasium's classic control tasks,
// the papers' domains (RiverSwim, chain, HIV, Dosing) and a recommendation user
// simulator. It imports no other dprl package but space, the shared vocabulary
// of spaces and actions.
//
// Run, Episode and Script step an environment under a behaviour (a function
// choosing each action and reporting its probability) and return the steps,
// checking that rewards and observations stay finite; package rollout turns
// such episodes into session-log records.
//
// Every environment draws its randomness from the *rand.Rand given to Reset;
// there is no package-level mutable state. Step allocates nothing.
package sims

import (
	"math/rand/v2"

	"dprl/space"
)

// The space vocabulary lives in package space so that packages which only
// exchange actions (the stream wire protocol, the agent) need not import the
// simulators. The names below are aliases of it, kept for compatibility: they
// are the same types and constants, not copies.

// SpaceKind says whether a space is discrete or a box; an alias of space.Kind.
type SpaceKind = space.Kind

// The space kinds (the constants of package space).
const (
	Discrete = space.Discrete // actions 0..N-1
	Box      = space.Box      // real vectors within [Low, High] per component
)

// Space describes an observation or action space; an alias of space.Space.
type Space = space.Space

// Action is one action (Index for a discrete action space, Vec for a box); an
// alias of space.Action.
type Action = space.Action

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

// ErrBadAction is returned by CheckAction for an action outside the space; it
// is space.ErrBadAction (errors.Is matches either name).
var ErrBadAction = space.ErrBadAction

// CheckAction validates an action from outside input against a space; it is
// space.CheckAction.
func CheckAction(s Space, a Action) error { return space.CheckAction(s, a) }
