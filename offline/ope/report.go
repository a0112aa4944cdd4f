package ope

import (
	"errors"
	"fmt"
	"math"

	"dprl/sessionlog"
)

// Report is a whole audit of one log: the lower bound first (the "ship
// it?" number), then every estimate with its intervals, and weight
// diagnostics. All of it is computed from the raw log: NonPrivate is
// always true and every printer must say so.
type Report struct {
	NonPrivate bool       `json:"non_private"`
	N          int        `json:"n"`
	LowerBound Bound      `json:"lower_bound"`
	Estimates  []Estimate `json:"estimates"`
	// ESS is the effective sample size (sum w)^2 / sum w^2 (Kong 1992, "A
	// note on importance sampling using standardized weights").
	ESS float64 `json:"ess"`
	// MeanWeight should be near 1 when the logging probabilities are right
	// and the target's support is covered; MaxWeight is the largest weight.
	MeanWeight float64 `json:"mean_weight"`
	MaxWeight  float64 `json:"max_weight"`
}

// Evaluate runs every estimator on the log: EL (the recommended
// interval, first), IPS, SNIPS, and, when the log
// carries the target's distribution (Log.Policy), DR, DRos and Switch-DR; and the
// lower bound.
func Evaluate(l *Log, opt Options) (*Report, error) {
	p, o, err := start(l, opt)
	if err != nil {
		return nil, err
	}
	rep := &Report{NonPrivate: true, N: p.n}
	if rep.LowerBound, err = lowerBound(p, o); err != nil {
		return nil, err
	}
	e, err := el(p, o)
	if err != nil {
		return nil, err
	}
	rep.Estimates = append(rep.Estimates, e, ips(p, o), snips(p, o))
	if p.pi != nil {
		for _, f := range []func(*prepared, Options) (Estimate, error){dr, dros, switchDR} {
			e, err := f(p, o)
			if err != nil {
				return nil, err
			}
			rep.Estimates = append(rep.Estimates, e)
		}
	}
	var s, s2 float64
	for _, w := range p.w {
		s += w
		s2 += w * w
		rep.MaxWeight = max(rep.MaxWeight, w)
	}
	rep.MeanWeight = s / float64(p.n)
	if s2 > 0 {
		rep.ESS = s * s / s2
	}
	return rep, nil
}

// ErrSession marks a session that is not a one-step decision with a
// logging probability.
var ErrSession = errors.New("ope: session is not a logged one-step decision")

// FromSessions maps dprl session logs of one-step sessions (a contextual
// bandit: the agent's bandit, or any log whose sessions have one step) onto
// a Log: the step's observation is the context, its discrete action the
// action, its reward the reward, and its logged probability (prob or logp)
// the logging probability. policy gives the target's distribution over
// actions actions. A session with another number of steps, no probability,
// or a continuous action is refused with its index.
func FromSessions(ss []sessionlog.Session, actions int, policy Policy) (*Log, error) {
	l := &Log{Actions: actions, Policy: policy, Decisions: make([]Decision, 0, len(ss))}
	for i := range ss {
		s := &ss[i]
		if len(s.Steps) != 1 {
			return nil, fmt.Errorf("%w: session %d (%q) has %d steps, want 1", ErrSession, i, s.Session, len(s.Steps))
		}
		st := &s.Steps[0]
		if !st.HasProb() {
			return nil, fmt.Errorf("%w: session %d (%q) has no logging probability", ErrSession, i, s.Session)
		}
		if st.Action.Vec != nil {
			return nil, fmt.Errorf("%w: session %d (%q) has a continuous action", ErrSession, i, s.Session)
		}
		l.Decisions = append(l.Decisions, Decision{X: st.Obs, Action: st.Action.Index, Reward: st.Reward, Prob: expProb(st.LogP)})
	}
	return l, nil
}

// expProb turns a logged log-probability back into a probability.
func expProb(logp float64) float64 { return math.Exp(logp) }
