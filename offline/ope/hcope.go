package ope

import (
	"fmt"
	"math"
	"slices"
)

// Bound is the high-confidence lower bound on the target policy's value:
// with probability at least Level over the log, the value is >= Value.
type Bound struct {
	Method string  `json:"method"`
	Level  float64 `json:"level"`
	Value  float64 `json:"value"`
	// Clip is the truncation c of the normalised importance-weighted
	// rewards, chosen on the first Pre decisions of a random split; the
	// bound is computed on the other Post.
	Clip float64 `json:"clip"`
	Pre  int     `json:"pre"`
	Post int     `json:"post"`
}

// thomasBound is the lower bound of Thomas, Theocharous & Ghavamzadeh 2015
// ("High Confidence Off-Policy Evaluation"), Theorem 1, with one threshold
// c for every variable (c_i = c): for independent X_i >= 0 with E X_i <= mu
// and Y_i = min(X_i, c), with probability at least 1 - delta
//
//	mu >= mean(Y) - 7 c ln(2/delta) / (3 (n - 1))
//	        - (1/n) sqrt( 2 ln(2/delta) / (n - 1) * (n sum Y_i^2 - (sum Y_i)^2) ).
//
// (With c_i = c the theorem's weights 1/c_i cancel to this form; the last
// term is sqrt(2 ln(2/delta) s^2 / n), s^2 the sample variance of Y: the
// lower side of Maurer & Pontil's Theorem 4 on [0, c].) m replaces n when
// the bound is predicted for a split of another size (Thomas et al.,
// choosing c on a held-out D_pre).
func thomasBound(y []float64, c, delta float64, m int) float64 {
	mean, v := meanVar(y)
	l := math.Log(2 / delta)
	fm := float64(m)
	return mean - 7*c*l/(3*(fm-1)) - math.Sqrt(2*l*v/fm)
}

// LowerBound is the headline of an audit: the one-sided high-confidence
// lower bound on the target policy's value (Thomas, Theocharous &
// Ghavamzadeh 2015, "High Confidence Off-Policy Evaluation", Theorem 1),
// on the importance-weighted rewards normalised to be non-negative,
//
//	X_i = w_i (r_i - rmin) / (rmax - rmin) >= 0,  E X_i = (V - rmin) / (rmax - rmin)
//
// (<= when the logging policy misses some of the target's support: the
// bound stays valid). The truncation c is chosen on a random split of
// Options.HCOPESplit of the log (as Thomas et al. choose c on a held-out
// D_pre) to maximise the bound predicted for the rest, and the bound is
// computed on the rest only,
// so c does not depend on the decisions it is applied to. Returned in reward
// units: V >= rmin + (rmax - rmin) * max(0, bound).
func LowerBound(l *Log, opt Options) (Bound, error) {
	p, o, err := start(l, opt)
	if err != nil {
		return Bound{}, err
	}
	return lowerBound(p, o)
}

func lowerBound(p *prepared, o Options) (Bound, error) {
	pre := int(math.Ceil(o.HCOPESplit * float64(p.n)))
	post := p.n - pre
	if pre < 1 || post < 2 {
		return Bound{}, fmt.Errorf("%w: %d decisions are too few for the lower bound (the split keeps %d to choose c and needs >= 2 for the bound)", ErrInput, p.n, pre)
	}
	span := o.RewardMax - o.RewardMin
	x := make([]float64, p.n)
	for k, i := range o.Rand.Perm(p.n) {
		x[k] = p.w[i] * (p.r[i] - o.RewardMin) / span
	}
	delta := 1 - o.Level
	xpre, xpost := x[:pre], x[pre:]
	// Candidate thresholds: the values seen in D_pre (the bound is
	// piecewise smooth between them) and their maximum.
	cands := slices.Clone(xpre)
	slices.Sort(cands)
	cands = slices.Compact(cands)
	bestC, best := 0.0, math.Inf(-1)
	y := make([]float64, pre)
	for _, c := range cands {
		if c <= 0 {
			continue
		}
		for i, v := range xpre {
			y[i] = min(v, c)
		}
		if b := thomasBound(y, c, delta, post); b > best {
			best, bestC = b, c
		}
	}
	b := Bound{Method: MethodHCOPE, Level: o.Level, Value: o.RewardMin, Clip: bestC, Pre: pre, Post: post}
	if bestC == 0 { // every normalised reward in D_pre is 0: nothing to bound with
		return b, nil
	}
	yp := make([]float64, post)
	for i, v := range xpost {
		yp[i] = min(v, bestC)
	}
	b.Value = o.RewardMin + span*max(0, thomasBound(yp, bestC, delta, post))
	return b, nil
}
