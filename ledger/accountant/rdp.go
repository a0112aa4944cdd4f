package accountant

import (
	"fmt"
	"math"
	"slices"
)

// DefaultOrders returns the Rényi orders the RDP accountant minimises over:
// fractional orders from just above 1 (dense near 1, every 0.1 up to 11), every
// integer from 11 to 64, then large orders up to 1024 (the
// subsampled Gaussian's curve can jump between neighbouring integer orders at
// low noise, so integer-only grids are not enough). It is a superset of the
// grids of TensorFlow Privacy, Opacus and dp_accounting. A fresh slice is
// returned on every call.
func DefaultOrders() []float64 {
	orders := []float64{1.01, 1.02, 1.03, 1.05, 1.075, 1.15, 1.25, 1.35, 1.45}
	for i := 11; i <= 110; i++ { // 1.1, 1.2, ..., 11.0
		orders = append(orders, float64(i)/10)
	}
	for a := 12; a <= 64; a++ {
		orders = append(orders, float64(a))
	}
	orders = append(orders, 72, 80, 96, 112, 128, 160, 192, 256, 320, 384, 512, 768, 1024)
	slices.Sort(orders)
	return orders
}

// GaussianRDP returns the Rényi DP of the Gaussian mechanism with noise
// multiplier z at order alpha: alpha / (2 z^2) (Mironov 2017, Proposition 7).
func GaussianRDP(z, alpha float64) (float64, error) {
	if err := checkZ(z); err != nil {
		return 0, err
	}
	if err := checkOrder(alpha); err != nil {
		return 0, err
	}
	return alpha / (2 * z * z), nil
}

// SubsampledGaussianRDP returns the Rényi DP at order alpha of one step of the
// Poisson-subsampled Gaussian mechanism with sampling rate q and noise
// multiplier z (Mironov, Talwar & Zhang 2019, "Rényi Differential Privacy of
// the Sampled Gaussian Mechanism"). log(A_alpha) / (alpha - 1).
// For q = 1 it is exactly alpha / (2 z^2).
func SubsampledGaussianRDP(q, z, alpha float64) (float64, error) {
	if err := checkQ(q); err != nil {
		return 0, err
	}
	if err := checkZ(z); err != nil {
		return 0, err
	}
	if err := checkOrder(alpha); err != nil {
		return 0, err
	}
	return sgmRDP(q, z, alpha), nil
}

func checkOrder(alpha float64) error {
	if !finite(alpha) || alpha <= 1 {
		return fmt.Errorf("%w: Rényi order alpha = %v, want a finite alpha > 1", ErrInvalid, alpha)
	}
	return nil
}

// sgmRDP is SubsampledGaussianRDP on validated parameters.
func sgmRDP(q, z, alpha float64) float64 {
	if q == 1 {
		return alpha / (2 * z * z)
	}
	var logA float64
	if alpha == math.Trunc(alpha) && alpha <= 1<<20 {
		logA = logAInt(q, z, int(alpha))
	} else {
		var ok bool
		logA, ok = logAFrac(q, z, alpha)
		if !ok {
			logA = logAInterpolated(q, z, alpha)
		}
	}
	// Rounding pad: a few ulps of log A in the unsafe direction.
	logA += 4e-16 * math.Max(1, math.Abs(logA))
	return math.Max(logA, 0) / (alpha - 1)
}

// logAInt returns log A_alpha for integer alpha >= 2 (Mironov, Talwar & Zhang
// 2019, Section 3.3, integer case):
//
//	A_alpha = sum_{k=0}^{alpha} C(alpha,k) (1-q)^(alpha-k) q^k exp((k^2-k)/(2 z^2)).
//
// Because the binomial weights sum to one and the k = 0, 1 terms have
// exp(0) = 1, A_alpha - 1 = sum_{k>=2} C(alpha,k) (1-q)^(alpha-k) q^k
// expm1((k^2-k)/(2 z^2)): a sum of positive terms, evaluated in log space
// without the cancellation that loses all precision when A_alpha is close to 1
// (tiny q, large z).
func logAInt(q, z float64, alpha int) float64 {
	a := float64(alpha)
	logq, log1mq := math.Log(q), math.Log1p(-q)
	inv2z2 := 1 / (2 * z * z)
	// lc = log C(alpha, k), by the recurrence C(a,k+1) = C(a,k) (a-k)/(k+1).
	lc := math.Log(a) // k = 1
	logAm1 := math.Inf(-1)
	for k := 2; k <= alpha; k++ {
		lc += math.Log(a-float64(k-1)) - math.Log(float64(k))
		kf := float64(k)
		t := lc + (a-kf)*log1mq + kf*logq + logExpm1((kf*kf-kf)*inv2z2)
		logAm1 = logAdd(logAm1, t)
	}
	// log A = log(1 + e^logAm1) (softplus).
	if logAm1 > 0 {
		return logAm1 + math.Log1p(math.Exp(-logAm1))
	}
	return math.Log1p(math.Exp(logAm1))
}

// logAFrac returns log A_alpha for fractional alpha (Mironov, Talwar & Zhang
// 2019, Section 3.3, fractional case), as the two series
//
//	A = sum_i C(alpha,i) q^i (1-q)^(alpha-i) e^((i^2-i)/(2z^2)) erfc((i - z0)/(sqrt2 z))/2
//	  + sum_i C(alpha,i) q^(alpha-i) (1-q)^i e^((j^2-j)/(2z^2)) erfc((z0 - j)/(sqrt2 z))/2,
//
// j = alpha - i, z0 = z^2 ln(1/q - 1) + 1/2. The binomial coefficients change
// sign for i > alpha, so positive and negative terms are summed separately in
// log space (Mironov, Talwar & Zhang 2019, "Renyi Differential Privacy of
// the Sampled Gaussian Mechanism").
//
// Truncation is bounded, not guessed. For i > alpha + 1 the magnitudes
// |C(alpha,i)| decrease. Using erfc(x) <= exp(-x^2) for x >= 0, every term of
// either series with erfc argument >= 0 is at most
// P_i = |C(alpha,i)| (1-q)^alpha exp(-z0^2/(2 z^2)) / 2, and there the terms
// alternate in sign and decrease, so such a tail is bounded by its first term.
// Before that regime the exponent of each series is a convex quadratic in i,
// so every remaining term is at most the larger of the current term (with
// erfc bounded by 2) and P_i. The remaining sum is therefore at most
// 2(n + 2) max(...), n the number of pre-asymptotic terms left; the series is
// cut when that bound is negligible (below 1e-6 of A - 1, or 4e-18 of A) and
// the bound itself is added to the result, so truncation can only overstate
// A. ok is false when the series does not settle within its term budget; the
// caller then falls back to the convexity bound.
func logAFrac(q, z, alpha float64) (logA float64, ok bool) {
	logq, log1mq := math.Log(q), math.Log1p(-q)
	z0 := z*z*math.Log(1/q-1) + 0.5
	inv2z2 := 1 / (2 * z * z)
	sq2z := math.Sqrt2 * z
	plateau0 := alpha*log1mq - z0*z0*inv2z2 - math.Ln2
	pos, neg := math.Inf(-1), math.Inf(-1)
	lc, sign := 0.0, 1.0 // log|C(alpha,0)|, sign
	const maxTerms = 50000
	for i := 0; i < maxTerms; i++ {
		fi := float64(i)
		if i > 0 {
			f := alpha - (fi - 1)
			if f < 0 {
				sign = -sign
			}
			lc += math.Log(math.Abs(f)) - math.Log(fi)
		}
		j := alpha - fi
		e0 := lc + fi*logq + j*log1mq + (fi*fi-fi)*inv2z2
		e1 := lc + j*logq + fi*log1mq + (j*j-j)*inv2z2
		s0 := e0 - math.Ln2 + logErfc((fi-z0)/sq2z)
		s1 := e1 - math.Ln2 + logErfc((z0-j)/sq2z)
		t := logAdd(s0, s1)
		if sign > 0 {
			pos = logAdd(pos, t)
		} else {
			neg = logAdd(neg, t)
		}
		if fi <= alpha+1 {
			continue
		}
		plateau := lc + plateau0 + math.Ln2 // also bounds e0, e1 at the regime boundary
		n := math.Max(0, math.Max(z0, alpha-z0)-fi)
		worst := plateau
		if fi < z0 { // series 0 not yet in its asymptotic regime
			worst = math.Max(worst, e0)
		}
		if fi < alpha-z0 { // series 1 not yet in its asymptotic regime
			worst = math.Max(worst, e1)
		}
		bound := math.Log(2*n+4) + worst
		if bound >= pos-13.8 {
			continue // cannot meet either test below: A - 1 <= A <= e^pos
		}
		cur := logSub(pos, neg)
		if math.IsNaN(cur) {
			continue
		}
		am1 := math.Expm1(cur)
		if bound < pos-40 || (am1 > 0 && bound < math.Log(am1)-13.8) {
			res := logSub(logAdd(pos, bound), neg)
			if math.IsNaN(res) || math.IsInf(res, 0) {
				return 0, false
			}
			return res, true
		}
	}
	return 0, false
}

// logAInterpolated bounds log A_alpha for fractional alpha from above by
// linear interpolation between the neighbouring integer orders: log A_alpha
// is the cumulant generating function of the privacy loss, hence convex in
// alpha, with log A_1 = 0.
func logAInterpolated(q, z, alpha float64) float64 {
	lo := math.Floor(alpha)
	hi := lo + 1
	var la float64
	if lo >= 2 {
		la = logAInt(q, z, int(lo))
	}
	lb := logAInt(q, z, int(hi))
	w := alpha - lo
	return (1-w)*la + w*lb
}

// RDPToDP converts a Rényi curve (rdp[i] at orders[i]) to the smallest epsilon
// at delta over the orders, with the conversion of Balle et al. 2020
// (Theorem 21) and Canonne, Kamath & Steinke 2020:
//
//	eps = rdp(a) + ln((a-1)/a) - (ln delta + ln a) / (a - 1).
//
// When rdp(a) <= -ln(1 - delta^2) the total variation bound via the KL
// divergence gives eps = 0 (as dp_accounting does). It returns the epsilon
// and the optimal order.
func RDPToDP(orders, rdp []float64, delta float64) (eps, order float64, err error) {
	if err := checkDelta(delta); err != nil {
		return 0, 0, err
	}
	if len(orders) == 0 || len(orders) != len(rdp) {
		return 0, 0, fmt.Errorf("%w: %d orders for %d RDP values", ErrInvalid, len(orders), len(rdp))
	}
	eps, order = math.Inf(1), math.NaN()
	logDelta := math.Log(delta)
	for i, a := range orders {
		if err := checkOrder(a); err != nil {
			return 0, 0, err
		}
		r := rdp[i]
		if math.IsNaN(r) || r < 0 {
			return 0, 0, fmt.Errorf("%w: RDP value %v at order %v", ErrInvalid, r, a)
		}
		var e float64
		if delta*delta+math.Expm1(-r) >= 0 {
			e = 0
		} else {
			e = r + math.Log1p(-1/a) - (logDelta+math.Log(a))/(a-1)
		}
		if e < eps {
			eps, order = e, a
		}
	}
	if eps < 0 {
		eps = 0
	}
	return eps * (1 + safetyPad), order, nil
}

// ClassicRDPToDP is the moments-accountant conversion of Abadi et al. 2016 and
// Mironov 2017 (Proposition 3): eps = rdp(a) + ln(1/delta) / (a - 1). It is
// looser than RDPToDP and is kept to reproduce published figures that were
// computed with it (Abadi et al. 2016; TensorFlow Privacy's tutorials).
func ClassicRDPToDP(orders, rdp []float64, delta float64) (eps, order float64, err error) {
	if err := checkDelta(delta); err != nil {
		return 0, 0, err
	}
	if len(orders) == 0 || len(orders) != len(rdp) {
		return 0, 0, fmt.Errorf("%w: %d orders for %d RDP values", ErrInvalid, len(orders), len(rdp))
	}
	eps, order = math.Inf(1), math.NaN()
	for i, a := range orders {
		if err := checkOrder(a); err != nil {
			return 0, 0, err
		}
		if e := rdp[i] - math.Log(delta)/(a-1); e < eps {
			eps, order = e, a
		}
	}
	return math.Max(eps, 0) * (1 + safetyPad), order, nil
}
