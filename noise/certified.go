package noise

import (
	"fmt"
	"math/big"
)

// This file holds certified arbitrary-precision arithmetic for the tables of
// the table sampler (table.go): every value is an interval [lo, hi] of
// big.Float endpoints that contains the exact real value. Each operation
// rounds its lower endpoint toward -inf and its upper endpoint toward +inf
// (big.Float rounds every Add, Sub, Mul and Quo in its receiver's rounding
// mode), and every truncated series adds a proven bound on its remainder to
// the upper endpoint, so the containment holds by construction; precision
// only decides the width.

// ival is a closed interval [lo, hi] that contains an exact real value. Its
// endpoints are never modified after construction (operations return new
// ones), so intervals may share them.
type ival struct{ lo, hi *big.Float }

func down(prec uint) *big.Float { return new(big.Float).SetPrec(prec).SetMode(big.ToNegativeInf) }
func up(prec uint) *big.Float   { return new(big.Float).SetPrec(prec).SetMode(big.ToPositiveInf) }

// point returns the degenerate interval [x, x]; x is used as is (exactly).
func point(x *big.Float) ival { return ival{x, x} }

// pointInt returns [n, n].
func pointInt(n int64) ival {
	x := new(big.Float).SetInt64(n) // precision 64: exact
	return ival{x, x}
}

// dyadic returns the exact value m 2^e.
func dyadic(m int64, e int) *big.Float {
	x := new(big.Float).SetInt64(m)
	return x.SetMantExp(x, e)
}

func (a ival) add(b ival, prec uint) ival {
	return ival{down(prec).Add(a.lo, b.lo), up(prec).Add(a.hi, b.hi)}
}

func (a ival) sub(b ival, prec uint) ival {
	return ival{down(prec).Sub(a.lo, b.hi), up(prec).Sub(a.hi, b.lo)}
}

// mul multiplies intervals of nonnegative numbers.
func (a ival) mul(b ival, prec uint) ival {
	if a.lo.Sign() < 0 || b.lo.Sign() < 0 {
		panic("noise: certified mul of a possibly negative interval")
	}
	return ival{down(prec).Mul(a.lo, b.lo), up(prec).Mul(a.hi, b.hi)}
}

// quo divides an interval of nonnegative numbers by one of positive numbers.
func (a ival) quo(b ival, prec uint) ival {
	if a.lo.Sign() < 0 || b.lo.Sign() <= 0 {
		panic("noise: certified quo outside its domain")
	}
	return ival{down(prec).Quo(a.lo, b.hi), up(prec).Quo(a.hi, b.lo)}
}

// sqrt returns the square root of an interval of nonnegative numbers. The
// endpoints are checked by exact squaring (the product of two prec-bit
// mantissas is exact at 2 prec bits), so the result does not depend on the
// accuracy of big.Float.Sqrt.
func (a ival) sqrt(prec uint) ival {
	if a.lo.Sign() < 0 {
		panic("noise: certified sqrt of a possibly negative interval")
	}
	sq := func(s *big.Float) *big.Float { return new(big.Float).SetPrec(2*prec+2).Mul(s, s) }
	lo := down(prec)
	if a.lo.Sign() > 0 {
		lo.Sqrt(a.lo)
		for sq(lo).Cmp(a.lo) > 0 { // step down one unit in the last place
			lo = down(prec).Sub(lo, ulp(lo, prec))
		}
	}
	hi := up(prec).Sqrt(a.hi)
	for sq(hi).Cmp(a.hi) < 0 {
		hi = up(prec).Add(hi, ulp(hi, prec))
	}
	return ival{lo, hi}
}

// ulp returns 2^(exp - prec) for x = mant 2^exp, mant in [1/2, 1): one unit
// in the last place of a prec-bit x (x > 0).
func ulp(x *big.Float, prec uint) *big.Float {
	return dyadic(1, x.MantExp(nil)-int(prec))
}

// widen returns [a.lo, a.hi + r] for r >= 0 (a remainder bound).
func (a ival) widen(r *big.Float, prec uint) ival {
	return ival{a.lo, up(prec).Add(a.hi, r)}
}

// clamp01 intersects a with [0, 1] (for values known to be probabilities).
func (a ival) clamp01() ival {
	lo, hi := a.lo, a.hi
	if lo.Sign() < 0 {
		lo = new(big.Float)
	}
	if one := big.NewFloat(1); hi.Cmp(one) > 0 {
		hi = one
	}
	return ival{lo, hi}
}

// width returns hi - lo, rounded up.
func (a ival) width(prec uint) *big.Float { return up(prec).Sub(a.hi, a.lo) }

// certPi returns an interval containing pi, of width about 2^-prec, by
// Machin's formula pi = 16 arctan(1/5) - 4 arctan(1/239).
func certPi(prec uint) ival {
	p := prec + 16
	a := atanInv(5, p)
	b := atanInv(239, p)
	return a.mul(pointInt(16), p).sub(b.mul(pointInt(4), p), p)
}

// atanInv returns an interval containing arctan(1/m), m >= 2, from its
// alternating series sum_n (-1)^n / ((2n+1) m^(2n+1)), whose terms decrease
// in absolute value, so the remainder after any term is at most the next
// term in absolute value (the alternating series test).
func atanInv(m int64, prec uint) ival {
	pow := big.NewInt(m) // m^(2n+1)
	m2 := big.NewInt(m * m)
	term := func(n int64) ival { // 1 / ((2n+1) m^(2n+1))
		d := new(big.Int).Mul(pow, big.NewInt(2*n+1))
		df := new(big.Float).SetPrec(uint(d.BitLen()) + 1).SetInt(d) // exact
		return pointInt(1).quo(point(df), prec)
	}
	eps := dyadic(1, -int(prec)-8)
	sum := pointInt(0)
	for n := int64(0); ; n++ {
		t := term(n)
		if n%2 == 0 {
			sum = sum.add(t, prec)
		} else {
			sum = sum.sub(t, prec)
		}
		pow.Mul(pow, m2)
		next := term(n + 1)
		if next.hi.Cmp(eps) <= 0 {
			return ival{down(prec).Sub(sum.lo, next.hi), up(prec).Add(sum.hi, next.hi)}
		}
	}
}

// certExpNeg returns an interval containing exp(-c) for an exact c >= 0.
// It halves c to c' = c 2^-r <= 1/2, sums the Taylor series of exp(c') up
// to the term c'^N/N! and bounds the remainder sum_{n>N} c'^n/n! by
// 2 c'^(N+1)/(N+1)! (the ratio of consecutive remaining terms is at most
// c'/(N+2) <= 1/2), squares r times and inverts.
func certExpNeg(c *big.Float, prec uint) ival {
	if c.Sign() < 0 {
		panic(fmt.Sprintf("noise: certExpNeg of a negative number %v", c))
	}
	r := 0
	if c.Sign() > 0 {
		if e := c.MantExp(nil); e > -1 { // c >= 1/2 possible
			r = e + 1 // c < 2^e, c 2^-r < 2^-1
		}
	}
	p := prec + uint(r) + 16
	cr := new(big.Float).SetMantExp(c, -r) // exact
	x := point(cr)
	eps := dyadic(1, -int(p)-4)
	sum, t := pointInt(1), pointInt(1)
	for n := int64(1); ; n++ {
		t = t.mul(x, p).quo(pointInt(n), p) // c'^n / n!
		sum = sum.add(t, p)
		next := t.mul(x, p).quo(pointInt(n+1), p)
		if next.hi.Cmp(eps) <= 0 {
			sum = sum.widen(up(p).Mul(next.hi, big.NewFloat(2)), p)
			break
		}
	}
	for range r {
		sum = sum.mul(sum, p)
	}
	return pointInt(1).quo(sum, p)
}

// oddFactSeries returns an interval containing S(w) = sum_{n>=0} w^n /
// (2n+1)!! = 1 + w/3 + w^2/(3 5) + ... for an exact w >= 0. After the
// term u_N the remainder is sum_{n>N} u_n with u_{n+1}/u_n = w/(2n+3) <=
// w/(2N+5) for n > N; once that ratio is at most 1/2 the remainder is at
// most 2 u_{N+1}.
func oddFactSeries(w *big.Float, prec uint) ival {
	x := point(w)
	eps := dyadic(1, -int(prec)-4)
	sum, u := pointInt(1), pointInt(1)
	w2 := new(big.Float).Mul(w, big.NewFloat(2)) // exact (precision of w)
	for n := int64(1); ; n++ {
		u = u.mul(x, prec).quo(pointInt(2*n+1), prec)
		sum = sum.add(u, prec)
		next := u.mul(x, prec).quo(pointInt(2*n+3), prec) // u_{N+1}, N = n
		// ratio bound w/(2n+5) <= 1/2 and the next term small relative
		// to the sum (which is >= 1)
		if w2.Cmp(new(big.Float).SetInt64(2*n+5)) <= 0 && next.hi.Cmp(eps) <= 0 {
			return sum.widen(up(prec).Mul(next.hi, big.NewFloat(2)), prec)
		}
	}
}

// certSqrt2OverPi returns an interval containing sqrt(2/pi).
func certSqrt2OverPi(prec uint) ival {
	p := prec + 8
	return pointInt(2).quo(certPi(p), p).sqrt(p)
}

// certProbBelow returns an interval containing P(|N| < z) = erf(z/sqrt 2)
// for a standard normal N and an exact z >= 0, of absolute width about
// 2^-prec:
//
//	P(|N| < z) = sqrt(2/pi) z exp(-z^2/2) sum_{n>=0} z^(2n) / (2n+1)!!
//
// (the series erf(x) = (2/sqrt pi) exp(-x^2) sum_n 2^n x^(2n+1) / (2n+1)!!,
// Abramowitz & Stegun, "Handbook of Mathematical Functions", 7.1.6, at
// x = z/sqrt 2). Every term is positive: no cancellation. c is an interval
// containing sqrt(2/pi) (certSqrt2OverPi), passed in to be computed once for
// many z.
func certProbBelow(z *big.Float, c ival, prec uint) ival {
	if z.Sign() < 0 {
		panic("noise: certProbBelow of a negative z")
	}
	if z.Sign() == 0 {
		return pointInt(0)
	}
	// exp(-z^2/2) is as small as 2^-47 for z = 8 and the series as large as
	// 2^47: work with enough bits that the relative precision gives
	// absolute width 2^-prec.
	p := prec + 24
	z2 := new(big.Float).SetPrec(2*z.MinPrec()+2).Mul(z, z) // exact
	half := new(big.Float).SetMantExp(z2, -1)               // exact
	v := c.mul(point(z), p).mul(certExpNeg(half, p), p).mul(oddFactSeries(z2, p), p)
	return v.clamp01()
}

// certErf returns an interval containing erf(x) for an exact x >= 0:
// (2/sqrt pi) x exp(-x^2) sum_n (2 x^2)^n / (2n+1)!! (Abramowitz & Stegun,
// 7.1.6). It is used by the tests against published values.
func certErf(x *big.Float, prec uint) ival {
	if x.Sign() == 0 {
		return pointInt(0)
	}
	p := prec + 24
	x2 := new(big.Float).SetPrec(2*x.MinPrec()+2).Mul(x, x) // exact
	w := new(big.Float).SetMantExp(x2, 1)                   // 2 x^2, exact
	c := pointInt(4).quo(certPi(p), p).sqrt(p)              // 2/sqrt(pi)
	v := c.mul(point(x), p).mul(certExpNeg(x2, p), p).mul(oddFactSeries(w, p), p)
	return v.clamp01()
}
