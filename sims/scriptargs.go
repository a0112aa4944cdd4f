package sims

import (
	"errors"
	"fmt"
	"strings"

	"dprl/internal/fielderr"
	"dprl/space"
)

// ArgFields are the fields the errors of ScriptArgs and NewNamed may name
// (internal/fielderr: a command renders them as its flags).
var ArgFields = fielderr.Fields{"Env", "InitState", "Actions", "Policy", "Steps"}

// NewNamed builds the environment named by a required setting (dprl's
// --env): a missing or unknown name is an error naming the field Env and
// listing the valid names.
func NewNamed(name string) (Env, error) {
	if name == "" {
		return nil, ArgFields.Errorf("{Env} is required (one of: %s)", strings.Join(Names(), ", "))
	}
	env, err := New(name)
	if err != nil {
		return nil, ArgFields.Errorf("{Env}: %w", err)
	}
	return env, nil
}

// ScriptArgs are a scripted episode's settings as an operator gives them:
// the settings of dprl sims rollout, whose flags are named as the fields
// (env, init-state, actions, policy, steps). Config checks them; its
// errors name the fields at fault (*fielderr.Error, ArgFields).
type ScriptArgs struct {
	// Env names the environment (required).
	Env string `flag:"env" usage:"environment name (see dprl sims list)"`
	// InitState is the internal state after the reset, as a JSON array of
	// numbers (ParseState), if given.
	InitState string `flag:"init-state" usage:"internal state after reset, as a JSON array of numbers"`
	// Actions are the actions, comma-separated (space.ParseActions), or
	// Policy "random" takes random ones: exactly one is given.
	Actions string `flag:"actions" usage:"comma-separated actions, one per step (box components joined by ':')"`
	Policy  string `flag:"policy" usage:"action policy instead of --actions: random"`
	// Steps, if given, stops the run after that many steps (>= 1).
	Steps int `flag:"steps" usage:"stop after this many steps (default: no limit beyond the episode and action list)"`
	// Seed, if given, is the run's seed (Config leaves the seed to the
	// caller, who draws one when it is not given).
	Seed uint64 `flag:"seed" usage:"random seed (default: drawn from the OS and printed)"`
}

// Config returns the environment and the script of the settings given
// (set reports whether a field was given), without a seed.
func (a ScriptArgs) Config(set func(field string) bool) (Env, ScriptConfig, error) {
	var sc ScriptConfig
	env, err := NewNamed(a.Env)
	if err != nil {
		return nil, sc, err
	}
	switch {
	case set("Actions") && a.Policy != "":
		return nil, sc, ArgFields.Errorf("give either {Actions} or {Policy}, not both")
	case !set("Actions") && a.Policy == "":
		return nil, sc, ArgFields.Errorf("give {Actions} or {Policy} random")
	case a.Policy != "" && a.Policy != "random":
		return nil, sc, ArgFields.Errorf("{Policy} %q: want random", a.Policy)
	}
	if set("Actions") {
		if sc.Actions, err = space.ParseActions("{Actions}", a.Actions, env.ActionSpace()); err != nil {
			return nil, sc, ArgFields.Wrap(err)
		}
	}
	if set("Steps") && a.Steps < 1 {
		return nil, sc, ArgFields.Errorf("{Steps} %d: want at least 1", a.Steps)
	}
	if set("InitState") {
		if sc.InitState, err = ParseState("{InitState}", a.InitState); err != nil {
			return nil, sc, ArgFields.Wrap(err)
		}
	}
	sc.Steps = a.Steps
	return env, sc, nil
}

// Script runs the scripted episode of env and sc (Script), its errors
// naming the settings: a state the environment cannot take names
// InitState; a run that left the finite range is a *NonFiniteError,
// wrapped with a hint at InitState.
func (a ScriptArgs) Script(env Env, sc ScriptConfig) (Steps, error) {
	steps, err := Script(env, sc)
	var nf *NonFiniteError
	switch {
	case errors.Is(err, ErrNoStateSetter):
		return nil, ArgFields.Errorf("{InitState}: environment %s cannot set its state", a.Env)
	case errors.As(err, &nf):
		return nil, ArgFields.Wrap(nonFiniteHint{nf})
	case err != nil: // the state does not fit the environment
		return nil, ArgFields.Errorf("{InitState}: %w", err)
	}
	return steps, nil
}

// nonFiniteHint is a *NonFiniteError with a hint at the setting InitState.
type nonFiniteHint struct{ *NonFiniteError }

func (e nonFiniteHint) Error() string {
	return fmt.Sprintf("step %d: the state left the finite range (next_obs %v, reward %v); try a smaller {InitState}", e.Step, e.NextObs, e.Reward)
}

func (e nonFiniteHint) Unwrap() error { return e.NonFiniteError }
