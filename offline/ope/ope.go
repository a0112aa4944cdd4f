// Package ope estimates, from a log of one-step decisions (a contextual
// bandit), what a target policy would earn, with intervals that name their
// method. Evaluate, the estimators and TrajectoryEstimates are computed
// from the raw log and covered by no privacy guarantee (Report.NonPrivate
// says so). The private audit is PrivateAudit (ClippedMoments released by
// NoisyMoments, read by PrivateEL), and Mechanism runs it, or the
// non-private report, as "dprl offline ope", charged to the log's dataset
// (docs/privacy.md, section 14).
//
// Estimators (method notes and derivations in docs/ope.md):
//   - IPS, inverse propensity scoring;
//   - SNIPS, self-normalised IPS;
//   - DR, doubly robust with a per-action ridge reward model cross-fitted
//     over K folds (Dudik, Langford & Li 2011, "Doubly Robust Policy
//     Evaluation and Learning");
//   - DRos, doubly robust with optimistic shrinkage of the weights (Su,
//     Dimakopoulou, Krishnamurthy & Dudik 2020, "Doubly robust off-policy
//     evaluation with shrinkage");
//   - Switch-DR, doubly robust with the importance correction switched off
//     above a weight threshold (Wang, Agarwal & Dudik 2017, "Optimal and
//     Adaptive Off-policy Evaluation in Contextual Bandits").
//
// On logged trajectories (TrajectoryEstimates, Trajectories): EL-episode,
// PDIS and PDWIS, and, when every step gives the target's distribution,
// the doubly robust DR-episode (Jiang & Li 2016, "Doubly Robust Off-policy
// Value Evaluation for Reinforcement Learning") and WDR-episode (Thomas &
// Brunskill 2016, "Data-Efficient Off-Policy Policy Evaluation for
// Reinforcement Learning") with a fitted-Q model cross-fitted over K folds
// of trajectories.
//
// The recommended interval is EL's: the empirical-likelihood interval of
// Karampatziakis, Mineiro & Ramdas 2020, "Empirical Likelihood for
// Contextual Bandits" (Cressie-Read power -2 form, closed form; it matches
// Vowpal Wabbit's estimators library), which uses E[w] = 1 and the
// weights' range and holds its level at small n where the others
// undercover. Other intervals: Wald (CLT, for reference), percentile bootstrap (the Open
// Bandit Pipeline's method), and an empirical-Bernstein interval for IPS
// with weights clipped to a public bound (Maurer & Pontil 2009, "Empirical
// Bernstein Bounds and Sample Variance Penalization", Theorem 4). The
// headline is the one-sided high-confidence lower bound of Thomas,
// Theocharous & Ghavamzadeh 2015, "High Confidence Off-Policy Evaluation"
// (Theorem 1), for the "ship it?" decision.
//
// The package knows no file format: a Decision is what any log (dprl
// session logs through FromSessions, VW's DSJSON through its reader)
// reduces to.
package ope

import (
	"errors"
	"fmt"
	"math"
)

// Decision is one logged decision: the context X, the action taken, the
// reward observed, the logging (behaviour) probability Prob of that action,
// and the target policy's probability Target of the same action at X.
type Decision struct {
	X      []float64
	Action int
	Reward float64
	// Prob is the logging policy's probability of Action at X, in (0, 1].
	Prob float64
	// Target is pi(Action | X), the target policy's probability of the
	// logged action, in [0, 1]. When Log.Policy is set it is computed from
	// Policy and this field must be 0 (unset) or agree with it.
	Target float64
}

// Policy writes the target policy's action distribution at x into dst
// (len Actions). It must not keep x or dst.
type Policy func(dst, x []float64)

// Log is the input of every estimator: decisions, the number of actions,
// and optionally the target policy's full distribution (needed by the
// doubly robust estimators, which average the reward model over all
// actions).
type Log struct {
	Decisions []Decision
	// Actions is the number of discrete actions (>= 1); every Action is in
	// [0, Actions).
	Actions int
	// Policy, when set, gives pi(. | x); DR and DRos need it.
	Policy Policy
}

// Errors of the package.
var (
	// ErrInput marks a log or option the estimators refuse.
	ErrInput = errors.New("ope: bad input")
	// ErrNoPolicy marks a doubly robust estimate asked of a log without
	// Log.Policy.
	ErrNoPolicy = errors.New("ope: doubly robust estimators need the target policy's distribution (Log.Policy)")
)

// distTol is how far from 1 a target distribution may sum.
const distTol = 1e-6

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// prepared is a validated log: weights, rewards, and (with a policy) the
// target distribution at every context.
type prepared struct {
	n, actions, dim int
	w, r            []float64
	pi              [][]float64 // nil without a policy
	x               [][]float64
	a               []int
	q               [][]float64 // the cross-fitted reward model, once computed
}

// prepare validates the log and computes the importance weights
// w_i = pi(a_i | x_i) / p_i.
func prepare(l *Log) (*prepared, error) {
	n := len(l.Decisions)
	if n == 0 {
		return nil, fmt.Errorf("%w: empty log", ErrInput)
	}
	if l.Actions < 1 {
		return nil, fmt.Errorf("%w: Actions %d, want >= 1", ErrInput, l.Actions)
	}
	p := &prepared{n: n, actions: l.Actions, dim: len(l.Decisions[0].X),
		w: make([]float64, n), r: make([]float64, n), x: make([][]float64, n), a: make([]int, n)}
	if l.Policy != nil {
		p.pi = make([][]float64, n)
	}
	for i := range l.Decisions {
		d := &l.Decisions[i]
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: decision %d: %s", ErrInput, i, fmt.Sprintf(format, args...))
		}
		switch {
		case len(d.X) != p.dim:
			return nil, bad("context length %d, want %d (that of decision 0)", len(d.X), p.dim)
		case d.Action < 0 || d.Action >= l.Actions:
			return nil, bad("action %d outside [0, %d)", d.Action, l.Actions)
		case !finite(d.Reward):
			return nil, bad("reward %v, want finite", d.Reward)
		case !(d.Prob > 0 && d.Prob <= 1):
			return nil, bad("logging probability %v, want in (0, 1]", d.Prob)
		case !(d.Target >= 0 && d.Target <= 1):
			return nil, bad("target probability %v, want in [0, 1]", d.Target)
		}
		for j, v := range d.X {
			if !finite(v) {
				return nil, bad("context[%d] = %v, want finite", j, v)
			}
		}
		t := d.Target
		if l.Policy != nil {
			pi := make([]float64, l.Actions)
			l.Policy(pi, d.X)
			sum := 0.0
			for a, q := range pi {
				if !(q >= 0 && q <= 1) {
					return nil, bad("target policy gives pi(%d | x) = %v, want in [0, 1]", a, q)
				}
				sum += q
			}
			if math.Abs(sum-1) > distTol {
				return nil, bad("target policy's probabilities sum to %v, want 1", sum)
			}
			if d.Target != 0 && math.Abs(d.Target-pi[d.Action]) > distTol {
				return nil, bad("Target %v disagrees with the target policy's %v", d.Target, pi[d.Action])
			}
			t = pi[d.Action]
			p.pi[i] = pi
		}
		p.w[i], p.r[i], p.x[i], p.a[i] = t/d.Prob, d.Reward, d.X, d.Action
	}
	return p, nil
}
