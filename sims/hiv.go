package sims

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// HIV model parameters (Adams et al. 2004, "Dynamic multidrug therapies for
// HIV: optimal and STI control approaches", Table 1; Ernst et al. 2006,
// "Clinical data based optimal STI strategies for HIV: a reinforcement
// learning approach"; the RLPy HIVTreatment implementation).
const (
	hivLambda1 = 1e4   // target cell type 1 production (cells/ml/day)
	hivLambda2 = 31.98 // target cell type 2 production (cells/ml/day)
	hivD1      = 0.01  // type 1 death rate (1/day)
	hivD2      = 0.01  // type 2 death rate (1/day)
	hivF       = 0.34  // treatment efficacy reduction in type 2 cells
	hivK1      = 8e-7  // type 1 infection rate (ml/virions/day)
	hivK2      = 1e-4  // type 2 infection rate (ml/virions/day)
	hivDelta   = 0.7   // infected cell death rate (1/day)
	hivM1      = 1e-5  // type 1 immune-induced clearance (ml/cells/day)
	hivM2      = 1e-5  // type 2 immune-induced clearance (ml/cells/day)
	hivNT      = 100.0 // virions produced per infected cell
	hivC       = 13.0  // virus natural death rate (1/day)
	hivRho1    = 1.0   // virions infecting a type 1 cell
	hivRho2    = 1.0   // virions infecting a type 2 cell
	hivLambdaE = 1.0   // immune effector production (cells/ml/day)
	hivBE      = 0.3   // maximum effector birth rate (1/day)
	hivKb      = 100.0 // saturation constant for effector birth (cells/ml)
	hivDE      = 0.25  // maximum effector death rate (1/day)
	hivKd      = 500.0 // saturation constant for effector death (cells/ml)
	hivDeltaE  = 0.1   // natural effector death rate (1/day)

	// HIVDecisions is the number of treatment decisions of an episode.
	HIVDecisions = 200
	// HIVDaysPerDecision is the ODE time of one decision.
	HIVDaysPerDecision = 5.0
	// Tolerances verified in TestHIVAccuracy against rtol 1e-12.
	hivRTol = 1e-8
	hivATol = 1e-8
)

// hivInitial is the unhealthy steady state (T1, T2, T1*, T2*, V, E) of
// Ernst et al. 2006 and RLPy.
var hivInitial = [6]float64{163573, 5, 11945, 46, 63919, 24}

// hivEps are the drug efficacies (eps1 RTI, eps2 PI) of the 4 actions.
var hivEps = [4][2]float64{{0, 0}, {0.7, 0}, {0, 0.3}, {0.7, 0.3}}

// hivRHS writes the Adams et al. 2004 (eq. 1) derivatives, time in days,
// state y = (T1, T2, T1*, T2*, V, E), efficacies e1 (RTI), e2 (PI):
//
//	dT1  = λ1 - d1 T1 - (1-ε1) k1 V T1
//	dT2  = λ2 - d2 T2 - (1-fε1) k2 V T2
//	dT1* = (1-ε1) k1 V T1 - δ T1* - m1 E T1*
//	dT2* = (1-fε1) k2 V T2 - δ T2* - m2 E T2*
//	dV   = (1-ε2) NT δ (T1*+T2*) - c V - ((1-ε1) ρ1 k1 T1 + (1-fε1) ρ2 k2 T2) V
//	dE   = λE + bE (T1*+T2*)/(T1*+T2*+Kb) E - dE (T1*+T2*)/(T1*+T2*+Kd) E - δE E
func hivRHS(dy, y []float64, e1, e2 float64) {
	T1, T2, T1s, T2s, V, E := y[0], y[1], y[2], y[3], y[4], y[5]
	inf1 := (1 - e1) * hivK1 * V * T1
	inf2 := (1 - hivF*e1) * hivK2 * V * T2
	Ts := T1s + T2s
	dy[0] = hivLambda1 - hivD1*T1 - inf1
	dy[1] = hivLambda2 - hivD2*T2 - inf2
	dy[2] = inf1 - hivDelta*T1s - hivM1*E*T1s
	dy[3] = inf2 - hivDelta*T2s - hivM2*E*T2s
	dy[4] = (1-e2)*hivNT*hivDelta*Ts - hivC*V - ((1-e1)*hivRho1*hivK1*T1+(1-hivF*e1)*hivRho2*hivK2*T2)*V
	dy[5] = hivLambdaE + hivBE*Ts/(Ts+hivKb)*E - hivDE*Ts/(Ts+hivKd)*E - hivDeltaE*E
}

// HIVReward is Ernst et al.'s reward on a post-step state y:
// -0.1 V - 2e4 ε1² - 2e3 ε2² + 1e3 E (unscaled).
func HIVReward(y []float64, e1, e2 float64) float64 {
	return -0.1*y[4] - 2e4*e1*e1 - 2e3*e2*e2 + 1e3*y[5]
}

// HIV is the HIV structured-treatment-interruption task (Ernst et al. 2006)
// on the Adams et al. 2004 model. Actions 0..3 are the drug combinations
// (ε1, ε2) = (0,0), (0.7,0), (0,0.3), (0.7,0.3); each decision integrates 5
// days of the stiff ODE with the adaptive DOPRI5 integrator (rtol = atol =
// 1e-8); the observation is log10 of the state (T1, T2, T1*, T2*, V, E); the
// reward is HIVReward of the post-step state; the episode is truncated after
// 200 decisions and never terminates. Reset is deterministic: every episode
// starts from the unhealthy steady state.
type HIV struct {
	y      [6]float64
	e1, e2 float64
	steps  int
	ode    *DOPRI5
	rhs    ODEFunc
	oLow   []float64
	oHigh  []float64
}

// NewHIV returns the HIV treatment task.
func NewHIV() *HIV {
	e := &HIV{ode: NewDOPRI5(6, hivRTol, hivATol)}
	e.rhs = func(dy []float64, _ float64, y []float64) { hivRHS(dy, y, e.e1, e.e2) }
	e.oLow, e.oHigh = make([]float64, 6), make([]float64, 6)
	for i := range e.oLow {
		e.oLow[i], e.oHigh[i] = math.Inf(-1), math.Inf(1)
	}
	e.y = hivInitial
	return e
}

// ObservationSpace is an unbounded box of dimension 6 (log10 of the state).
func (e *HIV) ObservationSpace() Space { return Space{Kind: Box, Low: e.oLow, High: e.oHigh} }

// ActionSpace is discrete with 4 actions.
func (e *HIV) ActionSpace() Space { return Space{Kind: Discrete, N: 4} }

// MaxSteps is 200.
func (e *HIV) MaxSteps() int { return HIVDecisions }

// Reset starts from the unhealthy steady state; rng is not used.
func (e *HIV) Reset(_ *rand.Rand, obs []float64) {
	e.y = hivInitial
	e.steps = 0
	e.ode.H = 0
	e.observe(obs)
}

func (e *HIV) observe(obs []float64) {
	if len(obs) != 6 {
		panic(fmt.Sprintf("sims: HIV observation needs length 6, got %d", len(obs)))
	}
	for i, v := range e.y {
		obs[i] = math.Log10(v)
	}
}

// Step applies action a.Index for 5 days.
func (e *HIV) Step(a Action, obs []float64) (float64, bool, bool) {
	if a.Index < 0 || a.Index >= 4 || a.Vec != nil {
		panic(fmt.Sprintf("sims: HIV action %d outside [0, 4)", a.Index))
	}
	e.e1, e.e2 = hivEps[a.Index][0], hivEps[a.Index][1]
	if err := e.ode.Integrate(e.rhs, 0, HIVDaysPerDecision, e.y[:]); err != nil {
		panic(err) // unreachable: the model is well posed from positive states
	}
	e.steps++
	e.observe(obs)
	return HIVReward(e.y[:], e.e1, e.e2), false, e.steps >= HIVDecisions
}

// SetState sets the raw (not log10) state; every component must be
// positive and finite.
func (e *HIV) SetState(state, obs []float64) error {
	if len(state) != 6 {
		return fmt.Errorf("sims: HIV state needs 6 values, got %d", len(state))
	}
	for i, v := range state {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("sims: HIV state[%d] = %v, want positive and finite", i, v)
		}
	}
	copy(e.y[:], state)
	e.observe(obs)
	return nil
}
