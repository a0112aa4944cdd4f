package ope

import (
	"fmt"
	"math"

	"dprl/noise"
)

// PrivateSensitivity is the L2 sensitivity of the private audit's
// statistic (ClippedMoments) to adding or removing one decision: each of
// its six coordinates lies in [0, 1], so one decision moves the vector by
// at most sqrt(6).
var PrivateSensitivity = math.Sqrt(6)

// maxNoiseShare is the largest ratio of the noise's standard deviation
// to the noisy sum of the clipped weights at which PrivateEL linearises.
const maxNoiseShare = 0.2

// MethodPrivateEL names the private empirical-likelihood interval.
const MethodPrivateEL = "dp-empirical-likelihood"

// EstPrivateEL names its estimate.
const EstPrivateEL = "DP-EL"

// ClippedMoments is the private audit's statistic: the Moments of the
// log with every weight clipped to the public bound c and scaled to
// [0, 1], u = min(w, c) / c, and every reward mapped to [0, 1], rho =
// (r - rmin) / (rmax - rmin):
//
//	(n, sum u, sum u^2, sum u rho, sum u^2 rho, sum u^2 rho^2).
//
// Every decision contributes a vector in [0, 1]^6, of L2 norm at most
// PrivateSensitivity. A non-finite contribution (impossible after
// prepare's checks) would count as 0.
func ClippedMoments(p *prepared, c, rmin, rmax float64) Moments {
	var m Moments
	span := rmax - rmin
	for i, w := range p.w {
		u := min(w, c) / c
		rho := (p.r[i] - rmin) / span
		if !finite(u) || !finite(rho) {
			u, rho = 0, 0
		}
		m.add(u, rho)
	}
	return m
}

// vec and fromVec convert Moments to and from the noised vector.
func (m Moments) vec() []float64 { return []float64{m.N, m.W, m.W2, m.WR, m.W2R, m.W2R2} }

func fromVec(v []float64) Moments {
	return Moments{N: v[0], W: v[1], W2: v[2], WR: v[3], W2R: v[4], W2R2: v[5]}
}

// NoisyMoments releases ClippedMoments through the Gaussian mechanism:
// every coordinate plus exact Gaussian noise of standard deviation sigma =
// z PrivateSensitivity (noise.Gaussian, rounded to its power-of-two grid).
// Its privacy is that of one Gaussian mechanism of noise multiplier z on a
// statistic of L2 sensitivity PrivateSensitivity under adding or removing
// one decision (Dwork & Roth 2014, "The Algorithmic Foundations of
// Differential Privacy", the Gaussian mechanism; accounted by the
// accountant of the run's ledger entry).
func NoisyMoments(m Moments, z float64, g *noise.Gaussian) Moments {
	v := m.vec()
	g.Add(v, z*PrivateSensitivity)
	return fromVec(v)
}

// unscale maps noisy clipped moments (weights u = w / c, rewards rho in
// [0, 1]) back to weights in [0, c]: W scales by c, W2 and the others with
// u^2 by c^2.
func (m Moments) unscale(c float64) Moments {
	return Moments{N: m.N, W: m.W * c, W2: m.W2 * c * c, WR: m.WR * c, W2R: m.W2R * c * c, W2R2: m.W2R2 * c * c}
}

// PrivateEL is the private empirical-likelihood estimate and interval
// computed from noisy clipped moments alone (post-processing: it reads
// nothing else of the log). nm are NoisyMoments of ClippedMoments(c, rmin,
// rmax) released with noise standard deviation sd per coordinate
// (noise.Std of the sigma used: the standard deviation actually drawn).
//
// The interval is the empirical-likelihood interval (elInterval) of the
// noisy moments, each end widened for the noise by the delta method: with
// g the gradient of the end with respect to the six moments (central
// differences at step sd), the end moves by sqrt(F_{1,n}(level)) sd |g|
// beyond the sampling half-width, combined in quadrature,
//
//	half' = sqrt(half^2 + F_{1,n}(level) sd^2 |g|^2),
//
// so the interval's variance budget holds the sampling variance and the
// noise's. The estimate is the EL estimate of the noisy moments. When the
// noisy moments cannot be fitted (a count below 2, a non-positive weight
// variance) the interval is the reward range. Rewards are reported in
// [rmin, rmax]; c must bound every weight, or the interval covers the value
// of the clipped weights (min(w, c)).
func PrivateEL(nm Moments, sd, c, rmin, rmax, level float64) (Estimate, error) {
	if !(c > 1) || !finite(c) {
		return Estimate{}, fmt.Errorf("%w: the private audit needs a public weight bound above 1, have %v", ErrInput, c)
	}
	span := rmax - rmin
	vac := Estimate{Estimator: EstPrivateEL, Value: (rmin + rmax) / 2,
		Intervals: []Interval{{Method: MethodPrivateEL, Level: level, Lo: rmin, Hi: rmax, Note: "the noisy statistics leave no information at this level: the reward range"}}}
	if !(nm.N >= 2) {
		return vac, nil
	}
	ends := func(v []float64) (lo, hi, est float64, ok bool) {
		m := fromVec(v).unscale(c)
		if m.N < 2 {
			return 0, 0, 0, false
		}
		// The weights' variance, whose noisy estimate can be <= 0 (an
		// on-policy log's is 0): floored at the noise's standard deviation
		// of mean(w^2), c^2 sd / N, so that the fit exists; the widening
		// below carries the noise.
		if floor := c * c * sd / m.N; m.W2/m.N-(m.W/m.N)*(m.W/m.N) < floor {
			m.W2 = m.N * (floor + (m.W/m.N)*(m.W/m.N))
		}
		mr := 0.5 // the extra decision's reward: mean reward, estimated
		if m.N > 0 && m.W > 0 {
			mr = min(1, max(0, m.WR/m.W))
		}
		// Unclamped: the ends are widened for the noise, then clamped
		// (a gradient through the clamp is zero where the noise has pushed
		// an end past the range, and the widening with it). An end the
		// statistic keeps no value for is the range's.
		e, err := elBounds(m, mr, 0, c, 0, 1, level)
		if err != nil || math.IsNaN(e.v) {
			return 0, 0, 0, false
		}
		lo, hi = 0, 1
		if e.loOK {
			lo = e.lo
		}
		if e.hiOK {
			hi = e.hi
		}
		return lo, hi, e.v, true
	}
	// The widening is a linearisation: it holds while the noise is small
	// against the sums it perturbs. Where the noise of the weights' sum
	// exceeds a fifth of it (few decisions for the epsilon and the weight
	// bound), the ratio-like estimate is dominated by the noise and the
	// interval is the reward range.
	if !(sd <= maxNoiseShare*nm.W) {
		vac.Intervals[0].Note = "the noise exceeds a fifth of the weights' noisy sum (too few decisions for this epsilon and weight bound): the reward range"
		return vac, nil
	}
	base := nm.vec()
	lo, hi, est, ok := ends(base)
	if !ok {
		return vac, nil
	}
	// Gradients of the two ends by central differences.
	var glo2, ghi2 float64
	x := make([]float64, len(base))
	for j := range base {
		copy(x, base)
		x[j] = base[j] + sd
		lp, hp, _, ok1 := ends(x)
		x[j] = base[j] - sd
		lm, hm, _, ok2 := ends(x)
		if !ok1 || !ok2 {
			return vac, nil
		}
		glo := (lp - lm) / (2 * sd)
		ghi := (hp - hm) / (2 * sd)
		glo2 += glo * glo
		ghi2 += ghi * ghi
	}
	q := elCalibration(level, nm.N)
	wlo := math.Sqrt(q * sd * sd * glo2)
	whi := math.Sqrt(q * sd * sd * ghi2)
	// The sampling half-widths, measured from the estimate, combined in
	// quadrature with the noise's.
	hlo, hhi := max(0, est-lo), max(0, hi-est)
	lo = est - math.Sqrt(hlo*hlo+wlo*wlo)
	hi = est + math.Sqrt(hhi*hhi+whi*whi)
	clamp := func(v float64) float64 { return rmin + span*min(1, max(0, v)) }
	return Estimate{Estimator: EstPrivateEL, Value: clamp(est),
		Intervals: []Interval{{Method: MethodPrivateEL, Level: level, Lo: clamp(lo), Hi: clamp(hi)}}}, nil
}

// PrivateAudit is the private audit of a log: its ClippedMoments with the
// public weight bound opt.WeightBound and reward range, released by
// NoisyMoments at noise multiplier z (drawn from g), and PrivateEL of
// them. The caller accounts for the Gaussian mechanism.
func PrivateAudit(l *Log, opt Options, z float64, g *noise.Gaussian) (Estimate, error) {
	p, o, err := start(l, opt)
	if err != nil {
		return Estimate{}, err
	}
	if !(o.WeightBound > 1) {
		return Estimate{}, fmt.Errorf("%w: the private audit needs a public weight bound above 1, have %v", ErrInput, o.WeightBound)
	}
	nm := NoisyMoments(ClippedMoments(p, o.WeightBound, o.RewardMin, o.RewardMax), z, g)
	return PrivateEL(nm, noise.Std(z*PrivateSensitivity), o.WeightBound, o.RewardMin, o.RewardMax, o.Level)
}

// PrivateAuditRecords is PrivateAudit of records given as their weights
// w and outcomes r (whole episodes: the products of their steps' ratios and
// their returns), r in the public range [opt.RewardMin, opt.RewardMax].
func PrivateAuditRecords(w, r []float64, opt Options, z float64, g *noise.Gaussian) (Estimate, error) {
	o, err := opt.withDefaults()
	if err != nil {
		return Estimate{}, err
	}
	switch {
	case len(w) == 0 || len(w) != len(r):
		return Estimate{}, fmt.Errorf("%w: %d weights and %d outcomes, want as many and at least one", ErrInput, len(w), len(r))
	case !(o.WeightBound > 1):
		return Estimate{}, fmt.Errorf("%w: the private audit needs a public weight bound above 1, have %v", ErrInput, o.WeightBound)
	}
	for i := range w {
		if !(w[i] >= 0) || math.IsInf(w[i], 0) || !(r[i] >= o.RewardMin && r[i] <= o.RewardMax) {
			return Estimate{}, fmt.Errorf("%w: record %d: weight %v, outcome %v (want a finite weight >= 0 and an outcome in [%v, %v])", ErrInput, i, w[i], r[i], o.RewardMin, o.RewardMax)
		}
	}
	p := &prepared{n: len(w), w: w, r: r}
	nm := NoisyMoments(ClippedMoments(p, o.WeightBound, o.RewardMin, o.RewardMax), z, g)
	return PrivateEL(nm, noise.Std(z*PrivateSensitivity), o.WeightBound, o.RewardMin, o.RewardMax, o.Level)
}
