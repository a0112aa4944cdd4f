package ope

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Names of the estimators and interval methods, as reported.
const (
	EstIPS      = "IPS"
	EstSNIPS    = "SNIPS"
	EstDR       = "DR"
	EstDRos     = "DRos"
	EstSwitchDR = "Switch-DR"
	EstEL       = "EL"

	MethodWald      = "wald"
	MethodBootstrap = "percentile-bootstrap"
	MethodBernstein = "empirical-bernstein"
	MethodHCOPE     = "hcope-lower-bound"
	MethodEL        = "empirical-likelihood"
)

// Options tunes the estimators and intervals. The zero value of every field
// but Rand selects its default.
type Options struct {
	// Level is the confidence level of every interval and of the lower
	// bound, in (0, 1). Default 0.95.
	Level float64
	// RewardMin and RewardMax are the public range of the reward (both 0:
	// [0, 1]). Every reward must lie in it; the empirical-Bernstein
	// interval and the lower bound need it, and the reward model's
	// predictions are clipped to it.
	RewardMin, RewardMax float64
	// WeightBound is a public bound c on the importance weights for the
	// empirical-Bernstein interval (for example max pi / min logging
	// probability). Weights above it are clipped (and counted). 0 skips
	// that interval.
	WeightBound float64
	// Bootstrap is the number B of percentile-bootstrap resamples. Default
	// 1000; negative skips the bootstrap.
	Bootstrap int
	// Folds is the number K of cross-fitting folds of the reward model
	// (and, on trajectories, of the fitted-Q action-value model; folds of
	// whole trajectories) (>= 2). Default 5.
	Folds int
	// Ridge is the ridge penalty of the per-action reward model and of the
	// trajectories' per-action fitted-Q regressions (>= 0). Default 1.
	Ridge float64
	// DRosLambda is DRos's shrinkage lambda (> 0); 0 tunes it on the data
	// (docs/ope.md).
	DRosLambda float64
	// SwitchTau is Switch-DR's weight threshold tau (> 0); 0 tunes it on
	// the data (docs/ope.md).
	SwitchTau float64
	// HCOPESplit is the fraction of the log used to choose the lower
	// bound's truncation c, in (0, 1). Default 0.05 (Thomas et al. 2015 use
	// 1/20).
	HCOPESplit float64
	// Rand drives the bootstrap resamples, the folds and the lower bound's
	// split. Required.
	Rand *rand.Rand
}

func (o Options) withDefaults() (Options, error) {
	if o.Level == 0 {
		o.Level = 0.95
	}
	if o.RewardMin == 0 && o.RewardMax == 0 {
		o.RewardMax = 1
	}
	if o.Bootstrap == 0 {
		o.Bootstrap = 1000
	}
	if o.Folds == 0 {
		o.Folds = 5
	}
	if o.Ridge == 0 {
		o.Ridge = 1
	}
	if o.HCOPESplit == 0 {
		o.HCOPESplit = 0.05
	}
	switch {
	case !(o.Level > 0 && o.Level < 1):
		return o, fmt.Errorf("%w: Level %v, want in (0, 1)", ErrInput, o.Level)
	case !finite(o.RewardMin) || !finite(o.RewardMax) || !(o.RewardMax > o.RewardMin):
		return o, fmt.Errorf("%w: reward range [%v, %v], want finite with min < max", ErrInput, o.RewardMin, o.RewardMax)
	case !(o.WeightBound >= 0) || math.IsInf(o.WeightBound, 0):
		return o, fmt.Errorf("%w: WeightBound %v, want finite and >= 0", ErrInput, o.WeightBound)
	case o.Folds < 2:
		return o, fmt.Errorf("%w: Folds %d, want >= 2", ErrInput, o.Folds)
	case !(o.Ridge >= 0) || math.IsInf(o.Ridge, 0):
		return o, fmt.Errorf("%w: Ridge %v, want finite and >= 0", ErrInput, o.Ridge)
	case !(o.DRosLambda >= 0) || math.IsInf(o.DRosLambda, 0):
		return o, fmt.Errorf("%w: DRosLambda %v, want finite and >= 0", ErrInput, o.DRosLambda)
	case !(o.SwitchTau >= 0) || math.IsInf(o.SwitchTau, 0):
		return o, fmt.Errorf("%w: SwitchTau %v, want finite and >= 0", ErrInput, o.SwitchTau)
	case !(o.HCOPESplit > 0 && o.HCOPESplit < 1):
		return o, fmt.Errorf("%w: HCOPESplit %v, want in (0, 1)", ErrInput, o.HCOPESplit)
	case o.Rand == nil:
		return o, fmt.Errorf("%w: Options.Rand is required (bootstrap, folds, split)", ErrInput)
	}
	return o, nil
}

// Interval is a two-sided confidence interval and the method that made it.
type Interval struct {
	Method string  `json:"method"`
	Level  float64 `json:"level"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	// Note qualifies what the interval covers, when it is not simply the
	// target policy's value.
	Note string `json:"note,omitempty"`
}

// Width is Hi - Lo.
func (iv Interval) Width() float64 { return iv.Hi - iv.Lo }

// Estimate is one estimator's value and its intervals.
type Estimate struct {
	Estimator string     `json:"estimator"`
	Value     float64    `json:"value"`
	Intervals []Interval `json:"intervals"`
}

// Interval returns the estimate's interval of the given method.
func (e Estimate) Interval(method string) (Interval, bool) {
	for _, iv := range e.Intervals {
		if iv.Method == method {
			return iv, true
		}
	}
	return Interval{}, false
}

// terms is an estimator in per-decision form: the estimate is
// sum(num) / sum(den), with den = nil meaning den_i = 1 (a plain mean).
type terms struct {
	num, den []float64
}

func (t terms) value() float64 {
	s, d := 0.0, float64(len(t.num))
	for _, v := range t.num {
		s += v
	}
	if t.den != nil {
		d = 0
		for _, v := range t.den {
			d += v
		}
	}
	return s / d
}

// influence returns the estimator's influence terms: the terms themselves
// for a mean, and w_i (r_i - V) / mean(w) for a ratio (delta method).
func (t terms) influence() []float64 {
	if t.den == nil {
		return t.num
	}
	v, mw := t.value(), 0.0
	for _, d := range t.den {
		mw += d
	}
	mw /= float64(len(t.den))
	out := make([]float64, len(t.num))
	for i := range out {
		out[i] = (t.num[i] - v*t.den[i]) / mw
	}
	return out
}

// meanVar returns the mean and the unbiased sample variance (n - 1
// denominator; 0 for n = 1).
func meanVar(x []float64) (float64, float64) {
	n := float64(len(x))
	m := 0.0
	for _, v := range x {
		m += v
	}
	m /= n
	if len(x) < 2 {
		return m, 0
	}
	s := 0.0
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return m, s / (n - 1)
}

// zQuantile is the standard normal quantile of 1 - alpha/2.
func zQuantile(level float64) float64 {
	return distuv.UnitNormal.Quantile(1 - (1-level)/2)
}

// wald is the CLT interval V +- z_{1-alpha/2} sd(psi) / sqrt(n), psi the
// influence terms (docs/ope.md, "Wald").
func wald(t terms, level float64) Interval {
	v := t.value()
	_, s2 := meanVar(t.influence())
	h := zQuantile(level) * math.Sqrt(s2/float64(len(t.num)))
	return Interval{Method: MethodWald, Level: level, Lo: v - h, Hi: v + h}
}

// bootstrap is the percentile bootstrap: B resamples of the decisions with
// replacement, the estimator recomputed on each (on fixed per-decision
// terms: the cross-fitted reward model is not refitted), and the alpha/2 and
// 1 - alpha/2 empirical quantiles of the B values (Efron & Tibshirani 1993,
// "An Introduction to the Bootstrap", Section 13.3; the Open Bandit
// Pipeline's estimate_confidence_interval_by_bootstrap).
func bootstrap(t terms, level float64, B int, rng *rand.Rand) Interval {
	n := len(t.num)
	vals := make([]float64, B)
	for b := range vals {
		s, d := 0.0, 0.0
		for range n {
			i := rng.IntN(n)
			s += t.num[i]
			if t.den != nil {
				d += t.den[i]
			} else {
				d++
			}
		}
		vals[b] = s / d
		if d == 0 {
			vals[b] = 0 // SNIPS on a resample of zero weights: no information
		}
	}
	slices.Sort(vals)
	alpha := 1 - level
	return Interval{Method: MethodBootstrap, Level: level, Lo: quantile(vals, alpha/2), Hi: quantile(vals, 1-alpha/2)}
}

// quantile is the linear-interpolation empirical quantile (type 7) of
// sorted x.
func quantile(x []float64, q float64) float64 {
	h := q * float64(len(x)-1)
	lo := int(math.Floor(h))
	if lo >= len(x)-1 {
		return x[len(x)-1]
	}
	return x[lo] + (h-float64(lo))*(x[lo+1]-x[lo])
}

// bernsteinHalf is the deviation of Maurer & Pontil 2009 ("Empirical
// Bernstein Bounds and Sample Variance Penalization"), Theorem 4, for
// variables in an interval of length R, one-sided at confidence 1 - delta:
//
//	E Z - mean(Z) <= sqrt(2 V_n ln(2/delta) / n) + 7 R ln(2/delta) / (3 (n - 1)),
//
// V_n the sample variance (n - 1 denominator). The theorem is stated for
// [0, 1]; for [a, a + R] apply it to (Z - a) / R and multiply by R: V_n
// scales by R^2, so only the second term gains the factor R.
func bernsteinHalf(v float64, n int, R, delta float64) float64 {
	l := math.Log(2 / delta)
	fn := float64(n)
	return math.Sqrt(2*v*l/fn) + 7*R*l/(3*(fn-1))
}

// bernstein is the two-sided empirical-Bernstein interval of clipped IPS:
// Y_i = min(w_i, c) r_i in [min(0, c rmin), max(0, c rmax)], each side at
// delta = alpha/2 (union bound), intersected with the reward range (the
// value lies in it).
func bernstein(p *prepared, o Options) Interval {
	c := o.WeightBound
	y := make([]float64, p.n)
	clipped := 0
	for i := range y {
		w := p.w[i]
		if w > c {
			w, clipped = c, clipped+1
		}
		y[i] = w * p.r[i]
	}
	m, v := meanVar(y)
	R := max(0, c*o.RewardMax) - min(0, c*o.RewardMin)
	h := bernsteinHalf(v, p.n, R, (1-o.Level)/2)
	iv := Interval{Method: MethodBernstein, Level: o.Level,
		Lo: min(o.RewardMax, max(o.RewardMin, m-h)), Hi: max(o.RewardMin, min(o.RewardMax, m+h))}
	if p.n < 2 {
		iv.Lo, iv.Hi = o.RewardMin, o.RewardMax
	}
	if clipped > 0 {
		iv.Note = fmt.Sprintf("%d weights above the bound %v were clipped: the interval covers E[min(w, c) r], which is <= the value when rewards are >= 0", clipped, c)
	}
	return iv
}

// intervals computes the Wald and bootstrap intervals of t.
func intervals(t terms, o Options) []Interval {
	out := []Interval{wald(t, o.Level)}
	if o.Bootstrap > 0 {
		out = append(out, bootstrap(t, o.Level, o.Bootstrap, o.Rand))
	}
	return out
}

// start validates the log and the options.
func start(l *Log, opt Options) (*prepared, Options, error) {
	o, err := opt.withDefaults()
	if err != nil {
		return nil, o, err
	}
	p, err := prepare(l)
	if err != nil {
		return nil, o, err
	}
	for i, r := range p.r {
		if r < o.RewardMin || r > o.RewardMax {
			return nil, o, fmt.Errorf("%w: decision %d: reward %v outside the declared range [%v, %v]", ErrInput, i, r, o.RewardMin, o.RewardMax)
		}
	}
	return p, o, nil
}

// ipsTerms are w_i r_i: V_IPS = (1/n) sum_i w_i r_i (Dudik, Langford & Li
// 2011, Section 2, the IPS estimator).
func ipsTerms(p *prepared) terms {
	num := make([]float64, p.n)
	for i := range num {
		num[i] = p.w[i] * p.r[i]
	}
	return terms{num: num}
}

// IPS is inverse propensity scoring, V = (1/n) sum_i w_i r_i with
// w_i = pi(a_i | x_i) / p_i, with its Wald and bootstrap intervals and,
// when Options.WeightBound is set, the empirical-Bernstein interval.
func IPS(l *Log, opt Options) (Estimate, error) {
	p, o, err := start(l, opt)
	if err != nil {
		return Estimate{}, err
	}
	return ips(p, o), nil
}

func ips(p *prepared, o Options) Estimate {
	t := ipsTerms(p)
	e := Estimate{Estimator: EstIPS, Value: t.value(), Intervals: intervals(t, o)}
	if o.WeightBound > 0 {
		e.Intervals = append(e.Intervals, bernstein(p, o))
	}
	return e
}

// SNIPS is self-normalised IPS, V = sum_i w_i r_i / sum_i w_i (Swaminathan
// & Joachims 2015, "The Self-Normalized Estimator for Counterfactual
// Learning"), with its Wald (delta-method) and bootstrap intervals.
func SNIPS(l *Log, opt Options) (Estimate, error) {
	p, o, err := start(l, opt)
	if err != nil {
		return Estimate{}, err
	}
	return snips(p, o), nil
}

func snips(p *prepared, o Options) Estimate {
	t := ipsTerms(p)
	t.den = p.w
	v := t.value()
	if math.IsNaN(v) { // every weight 0: the target never takes a logged action
		v = 0
	}
	return Estimate{Estimator: EstSNIPS, Value: v, Intervals: intervals(t, o)}
}
