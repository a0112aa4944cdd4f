package policy

import (
	"fmt"
	"math"
)

// clipOutcome says what clipL2 did to a vector. It is a diagnostic: which
// branch a contribution took is a function of the private data, so it must
// never be released (only counted in diagnostics the caller asked for).
type clipOutcome int

const (
	// clipInside: the vector's norm was at most the clip norm; unchanged.
	clipInside clipOutcome = iota
	// clipScaled: the vector was scaled down to norm at most the clip norm.
	clipScaled
	// clipNonFinite: a coordinate was NaN or ±Inf; the vector was zeroed.
	clipNonFinite
)

// clipL2 scales v in place to L2 norm at most c (c >= 0, +Inf meaning no
// bound): v <- v min(1, c/||v||), with two guarantees that the textbook
// formula lacks in floating point.
//
//   - A vector with a NaN or ±Inf coordinate becomes the zero vector (a
//     comparison n > c is false for n = NaN, so the formula would pass it
//     through and poison the sum it enters). The zero vector is within the
//     sensitivity bound of every clipped sum (DP-SGD, Abadi et al. 2016,
//     "Deep learning with differential privacy", Algorithm 1: the bound
//     needs ||clip(g)|| <= C for every input g).
//   - The result's exact (real-arithmetic) L2 norm is at most c. The norm
//     is computed overflow- and underflow-free (the vector is scaled by a
//     power of two, which is exact, so that its largest coordinate lies in
//     [1/2, 1)), in double-double arithmetic (error-free products by FMA and
//     error-free sums, Dekker 1971, "A floating-point technique for extending
//     the available precision"; Ogita, Rump and Oishi 2005, "Accurate sum and
//     dot product"), with a rigorous bound on the rounding left, and compared
//     with c^2 exactly; the vector is left unchanged only if the upper end
//     is at most c^2. After
//     scaling by c/||v|| it is certified the same way, and while rounding
//     leaves it above c it is scaled again by 1 - 2^-50 (at most 8 times,
//     then zeroed: never observed).
//
// Coordinates near math.MaxFloat64, subnormal coordinates and clip norms
// (including 0, which zeroes every vector) are all handled. It panics if c is
// NaN or negative. It allocates nothing.
func clipL2(v []float64, c float64) clipOutcome {
	if math.IsNaN(c) || c < 0 {
		panic(fmt.Sprintf("policy: clip norm %v, want >= 0", c))
	}
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			clear(v)
			return clipNonFinite
		}
	}
	if normAtMost(v, c) {
		return clipInside
	}
	// ||v|| > c >= 0, so v has a non-zero coordinate and c is finite.
	e, _ := maxExp(v)
	s1, s2 := pow2Scales(e)
	r := math.Sqrt(fastSqNorm(v, s1, s2)) // ||v|| 2^-e, in [1/2, sqrt(len(v))]
	t := c
	if len(v) > exactClipLen {
		// Aim below c by 4 rho so that the fast bound of normAtMost
		// certifies the result without the double-double pass.
		t = c * (1 - 4*fastRho(len(v)))
	}
	// |v_i| 2^-e / (||v|| 2^-e) <= 1 exactly; clamping the rounded ratio to
	// [-1, 1] only shrinks it, and keeps the result finite at c near
	// MaxFloat64.
	f := s1 / r // exact scaling then one rounding, while 2^-e / r is normal
	if s2 != 1 || e > 1000 {
		f = 0
	}
	for i, x := range v {
		var y float64
		if f != 0 {
			y = x * f
		} else {
			y = x * s1 * s2 / r
		}
		if y > 1 {
			y = 1
		} else if y < -1 {
			y = -1
		}
		v[i] = y * t
	}
	for range 8 {
		if normAtMost(v, c) {
			return clipScaled
		}
		for i := range v {
			v[i] *= 1 - 0x1p-50
		}
	}
	if !normAtMost(v, c) {
		clear(v)
	}
	return clipScaled
}

// normAtMost reports whether the exact L2 norm of v is certainly at most
// c >= 0. It is exact except within the rounding bound of sqNormScaled
// (zero when the double-double sum was exact, else below about len(v)
// 2^-100 relative), where it conservatively reports false. A non-finite
// coordinate reports false.
func normAtMost(v []float64, c float64) bool {
	if math.IsInf(c, 1) {
		for _, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return false
			}
		}
		return true
	}
	e, m := maxExp(v)
	if math.IsNaN(m) {
		return false
	}
	if m == 0 {
		return true // v = 0
	}
	// Compare S = sum_i (v_i 2^-e)^2, in [1/4, len(v)], with (c 2^-e)^2.
	s1, s2 := pow2Scales(e)
	cs := c * s1 * s2
	switch {
	case cs >= 0x1p60:
		return true // S <= len(v) < 2^120
	case cs < 0x1p-400:
		return false // S >= 1/4
	}
	// cs in [2^-400, 2^60): the scaling was exact and cs^2 = p + q exactly.
	p := cs * cs
	q := math.FMA(cs, cs, -p)
	// Fast bound: the plain float sum s of the len(v) non-negative terms
	// has |s - S| <= gamma_n S <= (rho/2) S (Higham 2002, "Accuracy and
	// stability of numerical algorithms", Eq. 4.4), plus at most 2^-1074
	// per underflowed square. Decide when the margin is clear.
	n := len(v)
	s, rho := fastSqNorm(v, s1, s2), fastRho(n)
	under := float64(n) * 0x1p-1070
	if s*(1+rho)+under < p*(1-0x1p-50) {
		return true
	}
	if s*(1-rho) > p*(1+0x1p-50)+under {
		return false
	}
	// Near the boundary: exact comparison up to a double-double rounding.
	_, hi, lo, r, slack := sqNormScaled(v)
	return signOfSum(hi, lo, r, slack, -p, -q) <= 0
}

// exactClipLen is the length up to which clipL2 scales to c itself (within
// a few ulps, certified by the double-double comparison); longer vectors are
// scaled to c (1 - 4 rho), which the fast bound certifies.
const exactClipLen = 64

// fastRho returns rho = (n + 8) 2^-52, twice the bound gamma_n = n u / (1 -
// n u) (u = 2^-53) on the relative rounding error of a float sum of n
// non-negative terms, with room for the rounding of the comparisons.
func fastRho(n int) float64 { return float64(n+8) * 0x1p-52 }

// maxExp returns e with max_i |v_i| in [2^(e-1), 2^e) and that maximum m
// (e = 0, m = 0 for the zero vector; m = NaN if a coordinate is NaN or
// ±Inf).
func maxExp(v []float64) (e int, m float64) {
	for _, x := range v {
		if x-x != 0 { // NaN or ±Inf
			return 0, math.NaN()
		}
		if a := math.Abs(x); a > m {
			m = a
		}
	}
	if m == 0 {
		return 0, 0
	}
	_, e = math.Frexp(m)
	return e, m
}

// fastSqNorm returns the float sum of (v_i s1 s2)^2, in four independent
// accumulators.
func fastSqNorm(v []float64, s1, s2 float64) float64 {
	var a0, a1, a2, a3 float64
	i := 0
	if s2 == 1 {
		for ; i+4 <= len(v); i += 4 {
			y0, y1, y2, y3 := v[i]*s1, v[i+1]*s1, v[i+2]*s1, v[i+3]*s1
			a0 += y0 * y0
			a1 += y1 * y1
			a2 += y2 * y2
			a3 += y3 * y3
		}
	}
	for ; i+4 <= len(v); i += 4 {
		y0, y1, y2, y3 := v[i]*s1*s2, v[i+1]*s1*s2, v[i+2]*s1*s2, v[i+3]*s1*s2
		a0 += y0 * y0
		a1 += y1 * y1
		a2 += y2 * y2
		a3 += y3 * y3
	}
	for ; i < len(v); i++ {
		y := v[i] * s1 * s2
		a0 += y * y
	}
	return (a0 + a1) + (a2 + a3)
}

// sqNormScaled returns e and a bound on the squared norm of v 2^-e, where
// 2^e is the power of two with max_i |v_i| in [2^(e-1), 2^e) (e = 0 for the
// zero vector): the exact sum_i (v_i 2^-e)^2 lies within slack of hi + lo +
// r. hi is NaN if a coordinate is NaN or ±Inf.
//
// Each term with |y| = |v_i 2^-e| >= 2^-480 is the exact product p + q (p =
// y*y, q = FMA(y, y, -p): no underflow at that size) added to the
// double-double (hi, lo) with error-free sums (TwoSum); the low-order errors
// those sums leave are accumulated in r, whose own rounding is bounded in
// slack (zero when every sum was exact). Smaller terms (each below 2^-960)
// are not summed but bounded in slack.
func sqNormScaled(v []float64) (e int, hi, lo, r, slack float64) {
	e, m := maxExp(v)
	if math.IsNaN(m) {
		return 0, math.NaN(), 0, 0, 0
	}
	if m == 0 {
		return 0, 0, 0, 0, 0
	}
	s1, s2 := pow2Scales(e)
	tiny, rAbs := 0, 0.0
	for _, x := range v {
		y := x * s1 * s2 // exact whenever |y| >= 2^-1022
		if math.Abs(y) < 0x1p-480 {
			if x != 0 {
				tiny++
			}
			continue
		}
		p := y * y
		q := math.FMA(y, y, -p)
		s, t := twoSum(hi, p)  // hi + p = s + t
		a, ea := twoSum(lo, q) // lo + q = a + ea
		b, eb := twoSum(t, a)  // t + a = b + eb
		hi, lo = fastTwoSum(s, b)
		r += ea + eb
		rAbs += math.Abs(ea) + math.Abs(eb)
	}
	// r sums 2 len(v) terms each at most rAbs: its rounding is below
	// 2 len(v) 2^-53 rAbs; the bound below doubles that.
	slack = float64(2*len(v)+8)*0x1p-52*rAbs + float64(tiny)*0x1p-960
	return e, hi, lo, r, slack
}

// signOfSum returns the sign (-1, 0 or 1) of the exact sum of xs (finite,
// far from overflow), by Shewchuk's expansion sum: each x is added with
// error-free TwoSums to a non-overlapping expansion of increasing magnitude,
// whose largest component has the sign of the whole (Shewchuk 1997,
// "Adaptive precision floating-point arithmetic and fast robust geometric
// predicates", Grow-Expansion with zero elimination).
func signOfSum(xs ...float64) int {
	var h [8]float64
	n := 0
	for _, x := range xs {
		q, k := x, 0
		for i := 0; i < n; i++ {
			s, err := twoSum(q, h[i])
			if err != 0 {
				h[k] = err
				k++
			}
			q = s
		}
		if q != 0 {
			h[k] = q
			k++
		}
		n = k
	}
	switch {
	case n == 0:
		return 0
	case h[n-1] > 0:
		return 1
	default:
		return -1
	}
}

// pow2Scales returns s1, s2 with s1 s2 = 2^-e, each a representable power of
// two, such that x*s1*s2 is exact whenever the result is normal: one factor
// when 2^-e is representable, two when it would overflow (e < -1021, a
// subnormal maximum, scaled up in two exact steps).
func pow2Scales(e int) (s1, s2 float64) {
	if e >= -1021 {
		return math.Ldexp(1, -e), 1
	}
	return 0x1p600, math.Ldexp(1, -e-600)
}

// twoSum returns s = fl(a+b) and t with a + b = s + t exactly (Knuth).
func twoSum(a, b float64) (s, t float64) {
	s = a + b
	bb := s - a
	t = (a - (s - bb)) + (b - bb)
	return s, t
}

// fastTwoSum is twoSum for |a| >= |b| (Dekker).
func fastTwoSum(a, b float64) (s, t float64) {
	s = a + b
	t = b - (s - a)
	return s, t
}
