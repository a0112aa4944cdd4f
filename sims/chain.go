package sims

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// ChainConfig configures the chain walk of the GPOPE (DP off-policy
// evaluation) experiments.
//
// States 0..States-1 lie in a row; the last one is an absorbing end. From a
// non-terminal state s the agent stays in s or advances to s+1. Two actions
// make off-policy evaluation meaningful (a behaviour and a target policy need
// different dynamics): action 1 ("advance") stays with probability
// StayAdvance, action 0 ("wait") with the larger StayWait. Reaching the end
// pays 1 and terminates the episode; every other step pays 0. Episodes start
// uniformly over the non-terminal states and are truncated after MaxSteps.
type ChainConfig struct {
	// States is the number of states N including the absorbing end; at
	// least 2. Default 20.
	States int
	// StayAdvance is P(stay | action 1), in [0, 1]. Default 0.2.
	StayAdvance float64
	// StayWait is P(stay | action 0), in [StayAdvance, 1]. Default 0.8.
	StayWait float64
	// MaxSteps is the step limit, at least 1. Default 200: more than twice
	// the expected 95 steps from state 0 to the end under action 0 at the
	// default StayWait.
	MaxSteps int
}

// DefaultChainConfig returns the defaults: 20 states, StayAdvance 0.2,
// StayWait 0.8, MaxSteps 200.
func DefaultChainConfig() ChainConfig {
	return ChainConfig{States: 20, StayAdvance: 0.2, StayWait: 0.8, MaxSteps: 200}
}

// Validate reports every invalid field.
func (c ChainConfig) Validate() error {
	var errs []error
	if c.States < 2 {
		errs = append(errs, fmt.Errorf("sims: chain States = %d, want >= 2", c.States))
	}
	if !(c.StayAdvance >= 0 && c.StayAdvance <= 1) {
		errs = append(errs, fmt.Errorf("sims: chain StayAdvance = %v outside [0, 1]", c.StayAdvance))
	}
	if !(c.StayWait >= 0 && c.StayWait <= 1) {
		errs = append(errs, fmt.Errorf("sims: chain StayWait = %v outside [0, 1]", c.StayWait))
	} else if c.StayWait < c.StayAdvance {
		errs = append(errs, fmt.Errorf("sims: chain StayWait = %v below StayAdvance = %v: waiting must not advance faster", c.StayWait, c.StayAdvance))
	}
	if c.MaxSteps < 1 {
		errs = append(errs, fmt.Errorf("sims: chain MaxSteps = %d, want >= 1", c.MaxSteps))
	}
	return errors.Join(errs...)
}

// Model returns the chain's tables; the end state N-1 loops on itself with
// reward 0. R[s][a] is the expected reward, P(advance | a) for s = N-2.
func (c ChainConfig) Model() (Tabular, error) {
	if err := c.Validate(); err != nil {
		return Tabular{}, err
	}
	n := c.States
	stay := [2]float64{c.StayWait, c.StayAdvance}
	m := Tabular{P: make([][][]float64, n), R: make([][]float64, n)}
	for s := range n {
		m.P[s] = [][]float64{make([]float64, n), make([]float64, n)}
		m.R[s] = make([]float64, 2)
		for a := range 2 {
			if s == n-1 {
				m.P[s][a][s] = 1
				continue
			}
			m.P[s][a][s], m.P[s][a][s+1] = stay[a], 1-stay[a]
			if s+1 == n-1 {
				m.R[s][a] = 1 - stay[a]
			}
		}
	}
	return m, nil
}

// ValueFunction returns the exact discounted value of the stochastic policy
// pi (pi[s][a], one row per state; the end state's row is ignored and may be
// empty): V = (I - gamma P_pi)^-1 r_pi on the non-terminal states, V[N-1] = 0,
// solved with gonum's LU. It ignores the step limit (truncation is not
// termination). gamma must be in [0, 1]; with gamma = 1 the policy must reach
// the end from every state, else the system is singular and an error is
// returned.
func (c ChainConfig) ValueFunction(pi [][]float64, gamma float64) ([]float64, error) {
	m, err := c.Model()
	if err != nil {
		return nil, err
	}
	if !(gamma >= 0 && gamma <= 1) {
		return nil, fmt.Errorf("sims: chain gamma = %v outside [0, 1]", gamma)
	}
	n := c.States
	skip := make([]bool, n)
	skip[n-1] = true
	if err := m.checkPolicy(pi, skip); err != nil {
		return nil, err
	}
	k := n - 1 // non-terminal states
	a := mat.NewDense(k, k, nil)
	r := mat.NewVecDense(k, nil)
	for s := range k {
		a.Set(s, s, 1)
		var rs float64
		for act, pa := range pi[s] {
			rs += pa * m.R[s][act]
			for s2 := range k {
				if p := m.P[s][act][s2]; p != 0 {
					a.Set(s, s2, a.At(s, s2)-gamma*pa*p)
				}
			}
		}
		r.SetVec(s, rs)
	}
	var v mat.VecDense
	if err := v.SolveVec(a, r); err != nil {
		return nil, fmt.Errorf("sims: chain value function: %w", err)
	}
	out := make([]float64, n)
	for s := range k {
		out[s] = v.AtVec(s)
	}
	return out, nil
}

// Chain is one instance of the chain walk; see ChainConfig.
type Chain struct {
	cfg   ChainConfig
	stay  [2]float64
	rng   *rand.Rand
	s     int
	steps int
}

// NewChain returns a chain with the given configuration, or the validation
// error.
func NewChain(cfg ChainConfig) (*Chain, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Chain{cfg: cfg, stay: [2]float64{cfg.StayWait, cfg.StayAdvance}}, nil
}

func mustChain(cfg ChainConfig) *Chain {
	e, err := NewChain(cfg)
	if err != nil {
		panic(err)
	}
	return e
}

// Config returns the configuration.
func (e *Chain) Config() ChainConfig { return e.cfg }

// ObservationSpace is the box [0, 1]^N of one-hot states.
func (e *Chain) ObservationSpace() Space { return unitBox(e.cfg.States) }

// ActionSpace is Discrete(2): 0 wait, 1 advance.
func (e *Chain) ActionSpace() Space { return Space{Kind: Discrete, N: 2} }

// MaxSteps is the configured step limit.
func (e *Chain) MaxSteps() int { return e.cfg.MaxSteps }

// State is the current state index.
func (e *Chain) State() int { return e.s }

// Reset starts in a state drawn uniformly from the non-terminal states and
// keeps rng for the transitions.
func (e *Chain) Reset(rng *rand.Rand, obs []float64) {
	checkObs(obs, e.cfg.States)
	e.rng = rng
	e.s = uniformInt(rng, e.cfg.States-1)
	e.steps = 0
	oneHot(obs, e.s)
}

// SetState sets the state from a one-component vector holding a
// non-terminal state index (0..N-2) and writes the observation. It does not
// reset the step count.
func (e *Chain) SetState(state, obs []float64) error {
	s, err := setIndexState(state, e.cfg.States-1)
	if err != nil {
		return err
	}
	checkObs(obs, e.cfg.States)
	e.s = s
	oneHot(obs, s)
	return nil
}

// Step stays with the action's stay probability, else advances; reaching the
// end pays 1 and terminates. Call Reset before the first Step.
func (e *Chain) Step(a Action, obs []float64) (reward float64, terminated, truncated bool) {
	checkIndex(a, 2)
	checkObs(obs, e.cfg.States)
	end := e.cfg.States - 1
	if e.s < end && e.rng.Float64() >= e.stay[a.Index] {
		e.s++
		if e.s == end {
			reward = 1
		}
	}
	terminated = e.s == end // also on steps taken after termination, which pay 0
	e.steps++
	oneHot(obs, e.s)
	return reward, terminated, e.steps >= e.cfg.MaxSteps
}
