package accountant

import (
	"fmt"
	"math"
	"strconv"
)

// GaussianDelta returns the exact delta(eps) of the Gaussian mechanism with
// noise multiplier z (L2 sensitivity 1, standard deviation z), from the
// analytic Gaussian mechanism (Balle & Wang 2018, Theorem 8):
//
//	delta(eps) = Φ(1/(2z) - eps·z) - e^eps · Φ(-1/(2z) - eps·z).
//
// Both terms are evaluated in log space, so neither overflows for large eps
// nor underflows for tiny z.
func GaussianDelta(z, eps float64) (float64, error) {
	if err := checkZ(z); err != nil {
		return 0, err
	}
	if !finite(eps) || eps < 0 {
		return 0, fmt.Errorf("%w: epsilon = %v, want a finite epsilon >= 0", ErrInvalid, eps)
	}
	return gaussianDelta(z, eps), nil
}

func gaussianDelta(z, eps float64) float64 {
	l1 := logNormCDF(1/(2*z) - eps*z)
	l2 := eps + logNormCDF(-1/(2*z)-eps*z)
	if l2 >= l1 {
		return 0
	}
	// e^l1 - e^l2 = e^l1 (1 - e^(l2-l1)).
	return math.Exp(l1) * -math.Expm1(l2-l1)
}

// GaussianEpsilon returns the smallest epsilon for which the Gaussian
// mechanism with noise multiplier z is (epsilon, delta)-DP, exactly (Balle &
// Wang 2018, Theorem 8, solved for epsilon by bisection on the monotone
// delta(eps); the upper end of the final bracket is returned, padded by a
// relative 1e-9).
func GaussianEpsilon(z, delta float64) (float64, error) {
	if err := checkZ(z); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if gaussianDelta(z, 0) <= delta {
		return 0, nil
	}
	lo, hi := 0.0, 1.0
	for gaussianDelta(z, hi) > delta {
		lo, hi = hi, 2*hi
		if hi > 1e12 {
			return 0, fmt.Errorf("%w: epsilon above 1e12 for z = %v, delta = %v", ErrUnreachable, z, delta)
		}
	}
	hi = bisect(lo, hi, func(e float64) bool { return gaussianDelta(z, e) <= delta })
	return hi * (1 + safetyPad), nil
}

// GaussianSigma returns the smallest noise multiplier z for which the Gaussian
// mechanism is (eps, delta)-DP (the inverse of GaussianEpsilon; Balle & Wang
// 2018, Algorithm 1 solves the same equation). The returned z is at or above
// the exact value.
func GaussianSigma(eps, delta float64) (float64, error) {
	if err := checkEpsilon(eps); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	// delta(eps; z) decreases in z: find a bracket, then bisect.
	lo, hi := 1.0, 1.0
	if gaussianDelta(hi, eps) <= delta {
		for gaussianDelta(lo, eps) <= delta {
			hi, lo = lo, lo/2
			if lo < 1e-12 {
				return hi * (1 + safetyPad), nil
			}
		}
	} else {
		for gaussianDelta(hi, eps) > delta {
			lo, hi = hi, 2*hi
			if hi > 1e12 {
				return 0, fmt.Errorf("%w: no z below 1e12 reaches epsilon %v at delta %v", ErrUnreachable, eps, delta)
			}
		}
	}
	hi = bisect(lo, hi, func(z float64) bool { return gaussianDelta(z, eps) <= delta })
	return hi * (1 + safetyPad), nil
}

// bisect returns the smallest x in (lo, hi] (to float64 resolution) with ok(x)
// true, given ok(lo) false, ok(hi) true and ok monotone.
func bisect(lo, hi float64, ok func(float64) bool) float64 {
	for i := 0; i < 200; i++ {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// ClassicEpsilon is the classic Gaussian mechanism bound (Dwork & Roth 2014,
// Theorem A.1): eps = sqrt(2 ln(1.25/delta)) / z. The theorem holds only for
// eps < 1; outside that range it returns ErrOutOfRange instead of a number.
func ClassicEpsilon(z, delta float64) (float64, error) {
	if err := checkZ(z); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	eps := math.Sqrt(2*math.Log(1.25/delta)) / z
	if eps >= 1 {
		return 0, fmt.Errorf("%w: classic bound gives epsilon %.4g >= 1 for z = %v, delta = %v (Dwork & Roth Thm A.1 needs epsilon < 1); use the analytic method", ErrOutOfRange, eps, z, delta)
	}
	return eps * (1 + safetyPad), nil
}

// ZhaoEpsilon is the closed form of Zhao et al. 2019 ("Reviewing and improving
// the Gaussian mechanism for differential privacy", Theorem 5), which the DPPG
// paper uses above epsilon 1 (App. B.1): a mechanism with
// z = (c + sqrt(c^2 + eps)) / (eps sqrt 2), c = sqrt(ln(2 / (sqrt(16 delta + 1) - 1))),
// is (eps, delta)-DP for every eps > 0; solved for eps:
//
//	eps = (1 + 2 sqrt(2) c z) / (2 z^2).
//
// It is valid for every z > 0 and 0 < delta < 1, and never tighter than
// GaussianEpsilon.
func ZhaoEpsilon(z, delta float64) (float64, error) {
	if err := checkZ(z); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	// sqrt(16δ+1) - 1 = 16δ / (sqrt(16δ+1) + 1), without cancellation.
	c := math.Sqrt(math.Log(2 * (math.Sqrt(16*delta+1) + 1) / (16 * delta)))
	eps := (1 + 2*math.Sqrt2*c*z) / (2 * z * z)
	return eps * (1 + safetyPad), nil
}

// FormatEpsilon is how dprl shows an epsilon anywhere (a command's output,
// a log line, the status page, a report, a plot's title): x rounded up to
// 4 significant digits (Ceil) and written in the shortest form, so that
// every place that shows the same epsilon shows the same text, and none
// shows less than the bound computed. Zero is "0"; a non-finite value is
// written as Go does ("+Inf", "NaN").
func FormatEpsilon(x float64) string {
	return strconv.FormatFloat(Ceil(x, EpsilonDigits), 'g', EpsilonDigits, 64)
}

// CeilEpsilon is x rounded up as FormatEpsilon shows it, as a number (for
// a structured log or progress field whose text is then FormatEpsilon's).
func CeilEpsilon(x float64) float64 { return Ceil(x, EpsilonDigits) }

// EpsilonDigits is the number of significant digits FormatEpsilon shows.
const EpsilonDigits = 4

// Ceil rounds x > 0 up to digits significant digits, for printing an
// epsilon or a delta: a printed guarantee must never be below the one
// computed (fmt's %.4g rounds to nearest, which can understate it). A
// relative 1e-12 below x is accepted as x (so that 1e-5 + 2e-5 prints as
// 3e-05, not 3.001e-05). Zero, negative, infinite and NaN values are
// returned unchanged.
func Ceil(x float64, digits int) float64 {
	if !(x > 0) || math.IsInf(x, 0) || digits < 1 {
		return x
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', digits, 64), 64)
	if v < x*(1-1e-12) {
		v, _ = strconv.ParseFloat(strconv.FormatFloat(v+math.Pow(10, math.Floor(math.Log10(v))-float64(digits-1)), 'g', digits, 64), 64)
	}
	return v
}
