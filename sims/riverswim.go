package sims

import (
	"fmt"
	"math/rand/v2"
)

// RiverSwim constants (Osband, Russo & Van Roy 2013, TabulaRL's
// make_riverSwim; the DPPG paper, App. C.1).
const (
	RiverSwimStates  = 6  // number of states; the agent starts in state 0
	RiverSwimHorizon = 20 // episode length
)

// RiverSwim is the RiverSwim MDP: 6 states in a row, start in state 0,
// horizon 20. Action 0 (left, with the current) moves deterministically to
// max(0, s-1). Action 1 (right, against the current): from state 0 stay 0.4 /
// move right 0.6; from an interior state left 0.05 / stay 0.6 / right 0.35;
// from state 5 stay p / left 1-p. Rewards are paid on (s, a) before the
// transition: 0.005 for (0, left), 1 for (5, right). The DPPG paper varies p
// in {0.6, 0.9} ("the probability of obtaining the maximal reward when taking
// the optimal action at the rightmost state"); p = 0.6 is the standard model.
// The observation is the one-hot encoding of the state (dimension 6). The
// episode is truncated, never terminated, after 20 steps.
type RiverSwim struct {
	p     float64
	model Tabular
	rng   *rand.Rand
	s     int
	steps int
}

// NewRiverSwim returns RiverSwim with P(stay | state 5, right) = p, which
// must lie in [0, 1].
func NewRiverSwim(p float64) (*RiverSwim, error) {
	m, err := RiverSwimModel(p)
	if err != nil {
		return nil, err
	}
	return &RiverSwim{p: p, model: m}, nil
}

func mustRiverSwim(p float64) *RiverSwim {
	e, err := NewRiverSwim(p)
	if err != nil {
		panic(err)
	}
	return e
}

// RiverSwimModel returns fresh transition and reward tables of RiverSwim
// with P(stay | state 5, right) = p.
func RiverSwimModel(p float64) (Tabular, error) {
	if !(p >= 0 && p <= 1) {
		return Tabular{}, fmt.Errorf("sims: riverswim p = %v outside [0, 1]", p)
	}
	const n = RiverSwimStates
	m := Tabular{P: make([][][]float64, n), R: make([][]float64, n)}
	for s := range n {
		m.P[s] = [][]float64{make([]float64, n), make([]float64, n)}
		m.R[s] = make([]float64, 2)
		m.P[s][0][max(0, s-1)] = 1 // left
		switch s {
		case 0:
			m.P[s][1][0], m.P[s][1][1] = 0.4, 0.6
		case n - 1:
			m.P[s][1][s], m.P[s][1][s-1] = p, 1-p
		default:
			m.P[s][1][s-1], m.P[s][1][s], m.P[s][1][s+1] = 0.05, 0.6, 0.35
		}
	}
	m.R[0][0] = 0.005
	m.R[n-1][1] = 1
	return m, nil
}

// RiverSwimOptimalValue is V*_0(0): the optimal expected return of one
// 20-step episode from the start state, by backward induction. Cumulative
// regret over K episodes is K*RiverSwimOptimalValue(p) minus the sum of the
// episodes' returns (or of their policies' values, Tabular.PolicyValue).
func RiverSwimOptimalValue(p float64) (float64, error) {
	m, err := RiverSwimModel(p)
	if err != nil {
		return 0, err
	}
	v, _ := m.OptimalValues(RiverSwimHorizon)
	return v[0][0], nil
}

// P is P(stay | state 5, right).
func (e *RiverSwim) P() float64 { return e.p }

// Model returns a fresh copy of the transition and reward tables.
func (e *RiverSwim) Model() Tabular {
	m, _ := RiverSwimModel(e.p)
	return m
}

// ObservationSpace is the box [0, 1]^6 of one-hot states.
func (e *RiverSwim) ObservationSpace() Space { return unitBox(RiverSwimStates) }

// ActionSpace is Discrete(2): 0 left, 1 right.
func (e *RiverSwim) ActionSpace() Space { return Space{Kind: Discrete, N: 2} }

// MaxSteps is the horizon, 20.
func (e *RiverSwim) MaxSteps() int { return RiverSwimHorizon }

// Reset starts in state 0 and keeps rng for the transitions.
func (e *RiverSwim) Reset(rng *rand.Rand, obs []float64) {
	checkObs(obs, RiverSwimStates)
	e.rng, e.s, e.steps = rng, 0, 0
	oneHot(obs, e.s)
}

// State is the current state index.
func (e *RiverSwim) State() int { return e.s }

// SetState sets the state from a one-component vector holding its index
// (0..5) and writes the observation. It does not reset the step count.
func (e *RiverSwim) SetState(state, obs []float64) error {
	s, err := setIndexState(state, RiverSwimStates)
	if err != nil {
		return err
	}
	checkObs(obs, RiverSwimStates)
	e.s = s
	oneHot(obs, s)
	return nil
}

// Step pays R[s][a], then samples the next state from P[s][a]. Call Reset
// before the first Step.
func (e *RiverSwim) Step(a Action, obs []float64) (reward float64, terminated, truncated bool) {
	checkIndex(a, 2)
	checkObs(obs, RiverSwimStates)
	reward = e.model.R[e.s][a.Index]
	e.s = sample(e.model.P[e.s][a.Index], e.rng.Float64())
	e.steps++
	oneHot(obs, e.s)
	return reward, false, e.steps >= RiverSwimHorizon
}

// unitBox is the box [0, 1]^n.
func unitBox(n int) Space {
	low, high := make([]float64, n), make([]float64, n)
	for i := range high {
		high[i] = 1
	}
	return Space{Kind: Box, Low: low, High: high}
}
