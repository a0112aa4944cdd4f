package sims

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"text/tabwriter"
)

// Step is one transition of an episode run by Run: the observation, the
// action taken and the log of the behaviour's probability (density) of it,
// the reward, the next observation, and whether the environment terminated
// or truncated the episode on this step. Obs of a step is the NextObs of the
// step before (the same slice).
type Step struct {
	Obs        []float64
	Action     Action
	LogP       float64
	Reward     float64
	NextObs    []float64
	Terminated bool
	Truncated  bool
}

// MarshalJSON writes the step as {"obs", "action", "reward", "next_obs",
// "terminated", "truncated"}, the action an integer (discrete) or an array
// (box, Vec set). LogP is not written.
func (s Step) MarshalJSON() ([]byte, error) {
	var act any = s.Action.Index
	if s.Action.Vec != nil {
		act = s.Action.Vec
	}
	return json.Marshal(struct {
		Obs        []float64 `json:"obs"`
		Action     any       `json:"action"`
		Reward     float64   `json:"reward"`
		NextObs    []float64 `json:"next_obs"`
		Terminated bool      `json:"terminated"`
		Truncated  bool      `json:"truncated"`
	}{s.Obs, act, s.Reward, s.NextObs, s.Terminated, s.Truncated})
}

// Steps is an episode, or the part of it that was run.
type Steps []Step

// WriteText writes the steps as a table, one row per step.
func (s Steps) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tOBS\tACTION\tREWARD\tNEXT OBS\tTERMINATED\tTRUNCATED")
	for i, st := range s {
		var act any = st.Action.Index
		if st.Action.Vec != nil {
			act = st.Action.Vec
		}
		fmt.Fprintf(tw, "%d\t%v\t%v\t%v\t%v\t%v\t%v\n", i, st.Obs, act, st.Reward, st.NextObs, st.Terminated, st.Truncated)
	}
	return tw.Flush()
}

// Behavior chooses the action at step t of an episode from the current
// observation obs (which it must neither keep nor modify), and returns it
// with the log of the probability (density) with which it chose it. A
// stochastic behaviour draws from a *rand.Rand it was built with.
type Behavior func(t int, obs []float64) (act Action, logp float64, err error)

// Uniform returns the behaviour that draws every action uniformly from
// space, which must have finite bounds if it is a box: index IntN(N) with
// log-probability -log N, or each component Low + (High-Low) U with
// log-density -sum log(High-Low).
func Uniform(rng *rand.Rand, space Space) Behavior {
	if space.Kind == Discrete {
		logp := -math.Log(float64(space.N))
		return func(int, []float64) (Action, float64, error) { return Action{Index: rng.IntN(space.N)}, logp, nil }
	}
	var logp float64
	for i := range space.Low {
		logp -= math.Log(space.High[i] - space.Low[i])
	}
	return func(int, []float64) (Action, float64, error) {
		v := make([]float64, len(space.Low))
		for i := range v {
			v[i] = space.Low[i] + (space.High[i]-space.Low[i])*rng.Float64()
		}
		return Action{Vec: v}, logp, nil
	}
}

// NonFiniteError reports a step whose reward or next observation was NaN or
// infinite: the environment's state left the range its dynamics are
// defined on (an extreme initial state, say), and nothing after it is data.
type NonFiniteError struct {
	// Step is the index of the step within the run.
	Step int
	// Reward and NextObs are what the environment returned.
	Reward  float64
	NextObs []float64
}

// Error names the step: "step 3: the environment left the finite range".
func (e *NonFiniteError) Error() string {
	return fmt.Sprintf("step %d: the environment left the finite range", e.Step)
}

// Run steps env, whose current observation is obs, with beh until the
// environment terminates or truncates the episode or limit (>= 1) steps
// have run, and returns the steps. obs becomes the first step's Obs; every
// step's NextObs is a fresh slice. A behaviour error is returned wrapped
// with the step index ("step 3: behaviour: ..."); a non-finite reward or
// next observation is a *NonFiniteError; in both cases the steps before it
// are returned with the error.
func Run(env Env, obs []float64, beh Behavior, limit int) (Steps, error) {
	if limit < 1 {
		return nil, fmt.Errorf("sims: step limit %d, want >= 1", limit)
	}
	steps := Steps{}
	for t := 0; t < limit; t++ {
		act, logp, err := beh(t, obs)
		if err != nil {
			return steps, fmt.Errorf("step %d: behaviour: %w", t, err)
		}
		next := append([]float64(nil), obs...)
		r, term, trunc := env.Step(act, next)
		if !finite(r) || !allFinite(next) {
			return steps, &NonFiniteError{Step: t, Reward: r, NextObs: next}
		}
		steps = append(steps, Step{Obs: obs, Action: act, LogP: logp, Reward: r, NextObs: next, Terminated: term, Truncated: trunc})
		if term || trunc {
			break
		}
		obs = next
	}
	return steps, nil
}

// Episode resets env with rng and runs one episode of at most limit steps
// with beh (see Run). The environment keeps rng for its own draws; beh
// draws from its own generator, which may be the same one.
func Episode(env Env, rng *rand.Rand, beh Behavior, limit int) (Steps, error) {
	obs := make([]float64, env.ObservationSpace().Dim())
	env.Reset(rng, obs)
	return Run(env, obs, beh, limit)
}

// ScriptConfig configures Script.
type ScriptConfig struct {
	// Seed: the environment draws from PCG(Seed, 1), the random behaviour
	// from PCG(Seed, 2) (math/rand/v2).
	Seed uint64
	// InitState, if not nil, is the environment's internal state set after
	// the reset (see StateSetter).
	InitState []float64
	// Actions, if not nil, are the actions of the steps in order, and the
	// run ends with the list; nil takes uniformly random actions (Uniform).
	Actions []Action
	// Steps, if > 0, stops the run after that many steps.
	Steps int
}

// ErrNoStateSetter is returned by Script for an initial state given to an
// environment that cannot set its state.
var ErrNoStateSetter = errors.New("sims: the environment cannot set its state")

// Script runs one scripted episode (dprl sims rollout): a reset, the initial
// state if one is given, then the given or random actions until the
// environment terminates or truncates, the action list ends, or cfg.Steps
// steps have run. Errors: ErrNoStateSetter, the error of SetState (which
// names what is wrong with the state), an invalid action list or step
// count, or a *NonFiniteError from the run.
func Script(env Env, cfg ScriptConfig) (Steps, error) {
	space := env.ActionSpace()
	if cfg.Actions != nil && len(cfg.Actions) == 0 {
		return nil, errors.New("sims: empty action list")
	}
	for i, a := range cfg.Actions {
		if err := CheckAction(space, a); err != nil {
			return nil, fmt.Errorf("sims: action %d: %w", i, err)
		}
	}
	if cfg.Steps < 0 {
		return nil, fmt.Errorf("sims: step count %d, want >= 0", cfg.Steps)
	}
	obs := make([]float64, env.ObservationSpace().Dim())
	env.Reset(rand.New(rand.NewPCG(cfg.Seed, 1)), obs)
	if cfg.InitState != nil {
		ss, ok := env.(StateSetter)
		if !ok {
			return nil, ErrNoStateSetter
		}
		if err := ss.SetState(cfg.InitState, obs); err != nil {
			return nil, err
		}
	}
	limit, beh := env.MaxSteps(), Uniform(rand.New(rand.NewPCG(cfg.Seed, 2)), space)
	if cfg.Actions != nil {
		limit = len(cfg.Actions)
		beh = func(t int, _ []float64) (Action, float64, error) { return cfg.Actions[t], 0, nil }
	}
	if cfg.Steps > 0 {
		limit = min(limit, cfg.Steps)
	}
	return Run(env, obs, beh, limit)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func allFinite(v []float64) bool {
	for _, x := range v {
		if !finite(x) {
			return false
		}
	}
	return true
}
