package ope

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Moments are the sufficient statistics of the empirical-likelihood
// estimate and interval: the number of decisions and the sums of w, w^2,
// w r, w^2 r and w^2 r^2 over them (w the importance weight, r the
// reward). The private audit releases exactly these, noised (dpope.go).
type Moments struct {
	N, W, W2, WR, W2R, W2R2 float64
}

// add accumulates one decision.
func (m *Moments) add(w, r float64) {
	m.N++
	m.W += w
	m.W2 += w * w
	m.WR += w * r
	m.W2R += w * w * r
	m.W2R2 += w * w * r * r
}

// elFit is the Euclidean-likelihood fit with one extra decision (wf, rf)
// added to the sample (m = N + 1 points): the means of w and of y = w r,
// their (population) covariance, and the statistic of the constraint
// E[w] = 1 alone.
type elFit struct {
	m, a, ybar, sww, swy, syy float64
	statW                     float64 // m (1 - a)^2 / s_ww; +Inf when s_ww <= 0
}

// fit adds the extra decision (wf, rf) to s and returns the fit.
func (s Moments) fit(wf, rf float64) elFit {
	m := s.N + 1
	a := (s.W + wf) / m
	b := (s.W2 + wf*wf) / m
	ybar := (s.WR + wf*rf) / m
	wy := (s.W2R + wf*wf*rf) / m
	yy := (s.W2R2 + wf*wf*rf*rf) / m
	f := elFit{m: m, a: a, ybar: ybar, sww: b - a*a, swy: wy - a*ybar, syy: yy - ybar*ybar}
	f.statW = math.Inf(1)
	if f.sww > 0 {
		f.statW = m * (1 - a) * (1 - a) / f.sww
	}
	return f
}

// centre is the value that minimises the statistic: the regression
// (control-variate) estimate ybar + (s_wy / s_ww)(1 - a).
func (f elFit) centre() float64 { return f.ybar + f.swy/f.sww*(1-f.a) }

// half is the half-width of the values whose statistic is at most t:
// sqrt((s_yy - s_wy^2 / s_ww) (t - statW) / m); ok false when even the
// centre's statistic exceeds t.
func (f elFit) half(t float64) (float64, bool) {
	if !(f.sww > 0) || t < f.statW {
		return 0, false
	}
	resid := max(0, f.syy-f.swy*f.swy/f.sww)
	return math.Sqrt(resid * (t - f.statW) / f.m), true
}

// elCalibration is the threshold of the likelihood-ratio statistic at
// confidence level for n decisions: the level-quantile of Fisher's F(1, n)
// (Karampatziakis, Mineiro & Ramdas 2020, "Empirical Likelihood for
// Contextual Bandits", Section 3: the F quantile as the finite-sample
// calibration of the chi-square(1) limit; it is larger than chi-square's
// for every finite n and tends to it).
func elCalibration(level, n float64) float64 {
	return distuv.F{D1: 1, D2: max(1, n)}.Quantile(level)
}

// elInterval is the empirical-likelihood interval of Karampatziakis,
// Mineiro & Ramdas 2020 ("Empirical Likelihood for Contextual Bandits") in
// its Cressie-Read power -2 (Euclidean) form, which has a closed form; the
// derivation is in docs/ope.md ("Empirical likelihood"). In short: over
// the N decisions and one extra decision at the boundary of the weights'
// public range (wf in {wmin, wmax}: the mass a finite sample may not have
// seen, which the constraint E[w] = 1 may need), with reward rf at the
// adverse end of the reward range (rmin for the lower end, rmax for the
// upper), the Euclidean likelihood-ratio statistic of (E[w], E[w r]) =
// (1, v) is
//
//	S(v) = m d' C^-1 d,  d = (1 - a, v - ybar),  C the covariance of (w, w r),
//
// and v is kept when S(v) <= S_w(w*) + F_{1,n}(level), S_w the statistic
// of E[w] = 1 alone and w* the extra weight on the side the observed mean
// weight falls short of (wmax when it is below 1, else wmin). Each (wf, rf) keeps centre +- half; the
// interval is the hull of the kept values, clamped to the reward range
// (the reward range itself when none is kept: the log contradicts
// E[w] = 1 at this level). The point estimate is the centre at w*, with
// the extra decision's reward the mean reward.
func elInterval(s Moments, meanR, wmin, wmax, rmin, rmax, level float64) (Estimate, error) {
	b, err := elBounds(s, meanR, wmin, wmax, rmin, rmax, level)
	if err != nil {
		return Estimate{}, err
	}
	clamp := func(v float64) float64 { return min(rmax, max(rmin, v)) }
	iv := Interval{Method: MethodEL, Level: level, Lo: rmin, Hi: rmax}
	if b.loOK {
		iv.Lo = clamp(b.lo)
	}
	if b.hiOK {
		iv.Hi = clamp(b.hi)
	}
	v := b.v
	if math.IsNaN(v) {
		v = (iv.Lo + iv.Hi) / 2
	} else {
		v = clamp(v)
	}
	return Estimate{Estimator: EstEL, Value: v, Intervals: []Interval{iv}}, nil
}

// elEnds are the unclamped ends and centre of elInterval: lo (hi) is kept
// only when loOK (hiOK); v is NaN when the point estimate's fit does not
// exist.
type elEnds struct {
	lo, hi, v  float64
	loOK, hiOK bool
}

// elBounds computes elInterval's ends and estimate before they are clamped
// to the reward range (the private audit widens them for its noise first:
// a gradient taken through the clamp would be zero where the noise has
// pushed an end past the range, and the widening with it).
func elBounds(s Moments, meanR, wmin, wmax, rmin, rmax, level float64) (elEnds, error) {
	if !(wmax > 1) || !(wmin < 1) || wmin < 0 {
		return elEnds{}, fmt.Errorf("%w: empirical likelihood needs weight bounds wmin < 1 < wmax, have [%v, %v]", ErrInput, wmin, wmax)
	}
	// The extra decision's weight for the point estimate and the
	// threshold: at the side of the weights' range the observed mean
	// weight falls short of (wmax when sum w < N: the large weights a
	// finite sample has too few of), as the estimators library of Vowpal
	// Wabbit places it. Its statistic is at least the smaller of the two,
	// so this threshold is the more conservative choice.
	bestW := wmin
	if s.W < s.N {
		bestW = wmax
	}
	best := s.fit(bestW, meanR).statW
	t := best + elCalibration(level, s.N)
	e := elEnds{lo: math.Inf(1), hi: math.Inf(-1), v: math.NaN()}
	for _, wf := range []float64{wmin, wmax} {
		if f := s.fit(wf, rmin); f.sww > 0 {
			if h, ok := f.half(t); ok {
				e.lo = min(e.lo, f.centre()-h)
			}
		}
		if f := s.fit(wf, rmax); f.sww > 0 {
			if h, ok := f.half(t); ok {
				e.hi = max(e.hi, f.centre()+h)
			}
		}
	}
	e.loOK, e.hiOK = !math.IsInf(e.lo, 0), !math.IsInf(e.hi, 0)
	if f := s.fit(bestW, meanR); f.sww > 0 {
		e.v = f.centre()
	}
	return e, nil
}

// EL is the empirical-likelihood estimate with its interval (elInterval):
// the interval the audit recommends for its coverage at small n. The
// weights' upper bound is Options.WeightBound, raised to the largest
// weight in the log if one exceeds it (then noted: a data-derived bound);
// the lower bound is 0.
func EL(l *Log, opt Options) (Estimate, error) {
	p, o, err := start(l, opt)
	if err != nil {
		return Estimate{}, err
	}
	return el(p, o)
}

func el(p *prepared, o Options) (Estimate, error) {
	var s Moments
	wmax, meanR := o.WeightBound, 0.0
	for i, w := range p.w {
		s.add(w, p.r[i])
		wmax = max(wmax, w)
		meanR += p.r[i]
	}
	meanR /= s.N
	note := ""
	if wmax > o.WeightBound {
		note = fmt.Sprintf("the weights' upper bound is the log's largest weight %.4g (no public bound of at least that was given)", wmax)
	}
	if !(wmax > 1) { // every weight <= 1 and no bound: on-policy; any bound > 1 is valid
		wmax = 2
	}
	e, err := elInterval(s, meanR, 0, wmax, o.RewardMin, o.RewardMax, o.Level)
	if err == nil && note != "" {
		e.Intervals[0].Note = note
	}
	return e, err
}
