package accountant

import "math"

// logNormCDF returns log Φ(x), the log of the standard normal CDF, accurate to
// a few ulps in absolute terms over the whole real line (no underflow for very
// negative x).
func logNormCDF(x float64) float64 {
	switch {
	case x > 5:
		// Φ(x) = 1 - Φ(-x) with Φ(-x) < 3e-7: log1p keeps full precision.
		return math.Log1p(-0.5 * math.Erfc(x/math.Sqrt2))
	case x > -30:
		// erfc keeps full relative precision down to ~1e-300 (argument ~26).
		return math.Log(0.5 * math.Erfc(-x/math.Sqrt2))
	default:
		// Asymptotic expansion of the Mills ratio (Abramowitz & Stegun
		// 26.2.12): Φ(x) = φ(x)/|x| · (1 - 1/x² + 3/x⁴ - 15/x⁶ + ...).
		// For |x| >= 30 the terms kept bound the error below 1e-20.
		x2 := x * x
		inv := 1 / x2
		s := 1.0
		term := 1.0
		for k := 1; k <= 8; k++ {
			term *= -float64(2*k-1) * inv
			s += term
		}
		return -0.5*x2 - math.Log(-x) - 0.5*math.Log(2*math.Pi) + math.Log(s)
	}
}

// logErfc returns log erfc(x) without underflow for large x.
func logErfc(x float64) float64 {
	// erfc(x) = 2 Φ(-x √2).
	return math.Ln2 + logNormCDF(-x*math.Sqrt2)
}

// logAdd returns log(e^a + e^b).
func logAdd(a, b float64) float64 {
	if math.IsInf(a, -1) {
		return b
	}
	if math.IsInf(b, -1) {
		return a
	}
	if a < b {
		a, b = b, a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// logSub returns log(e^a - e^b) for a >= b, and NaN when a < b.
func logSub(a, b float64) float64 {
	if math.IsInf(b, -1) {
		return a
	}
	if a < b {
		return math.NaN()
	}
	if a == b {
		return math.Inf(-1)
	}
	return a + math.Log(-math.Expm1(b-a))
}

// logExpm1 returns log(e^x - 1) for x > 0.
func logExpm1(x float64) float64 {
	if x > 1 {
		return x + math.Log1p(-math.Exp(-x))
	}
	return math.Log(math.Expm1(x))
}
