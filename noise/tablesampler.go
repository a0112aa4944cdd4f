package noise

import (
	"math/big"
	"math/rand/v2"
)

// bitStream hands out the bits of rng's 64-bit words, most significant
// first, a few at a time, so that a draw pays only for the bits it uses.
type bitStream struct {
	rng *rand.Rand
	buf uint64 // the unused bits, at the top
	n   uint   // how many
}

// take returns w uniform bits, 1 <= w <= 64.
func (s *bitStream) take(w uint) uint64 {
	if s.n < w {
		return s.refill(w)
	}
	v := s.buf >> (64 - w)
	s.buf <<= w // a shift by 64 gives 0
	s.n -= w
	return v
}

func (s *bitStream) refill(w uint) uint64 {
	need := w - s.n
	hi := s.buf >> (64 - s.n) // the s.n bits left (0 if none)
	r := s.rng.Uint64()
	v := hi<<need | r>>(64-need)
	s.buf = r << need
	s.n = 64 - need
	return v
}

// sampleTable draws one standard normal variable into n.k, n.x, n.negate
// with the table sampler. n.s.rng and n.b.rng must be set.
//
// One 64-bit word r gives U's first uBits bits, the first 8 bits c of the
// first U', the sign and the first yBits bits of y, in that order from the
// top; the rest of x's digit 0 (its last yPart bits) is drawn only if
// something needs it (urand.part).
func (n *normal) sampleTable() { n.sampleTableFrom(n.s.rng.Uint64()) }

const (
	// uBits is the number of bits of U in the first word.
	uBits = 20
	// yBits is the number of bits of y in the first word, yPart the
	// number of bits of x's digit 0 left undrawn.
	yBits = 64 - uBits - 8 - 1
	yPart = 64 - binBits - yBits
)

// sampleTableFrom is sampleTable with the first word r given.
func (n *normal) sampleTableFrom(r uint64) {
	P := r >> (64 - uBits)
	c := r >> (yBits + 1) & 0xff
	n.negate = r>>yBits&1 == 1
	e := guide[P>>(uBits-guideBits)]
	j := uint(e & 0xffff)
	if j != uint(e>>16) || n.forceRefine {
		j = n.searchBin(P, uBits, e)
	}
	if j == nBins {
		n.sampleTail()
		return
	}
	n.k = uint64(j >> binBits)
	n.x.n, n.x.part = 1, yPart
	n.x.w[0] = uint64(j&(1<<binBits-1))<<(64-binBits) | (r&(1<<yBits-1))<<yPart
	if len(n.x.more) > 0 {
		n.x.more = n.x.more[:0]
	}
	// U' in [c, c+1) 2^-8 is below exp(-t) for every y in the sub-bin if
	// (c+1) 2^-8 <= squeeze[js] 2^-64, that is c < squeeze[js] >> 56.
	if c >= uint64(squeeze8[subBin(j, n.x.w[0])]) || n.forceExact {
		n.sampleBinSlow(j, c)
	}
}

// subBin returns the index j 2^subBits + s of the squeeze for bin j and x's
// digit 0 d0 (whose top binBits bits are frac(j h) and whose next subBits
// bits are y's first bits s: y is in [s, s+1) h 2^-subBits).
func subBin(j uint, d0 uint64) uint {
	return j>>binBits<<(binBits+subBits) | uint(d0>>(64-binBits-subBits))
}

// squeeze8[i] = squeeze[i] >> 56 (computed once, never written after).
var squeeze8 = func() (t [nBins << subBits]uint8) {
	for i, s := range squeeze {
		t[i] = uint8(s >> 56)
	}
	return t
}()

// searchBin returns the bin of U by binary search in the range of guide
// entry e; the first nb bits of U are P.
func (n *normal) searchBin(P uint64, nb uint, e uint32) uint {
	lo, hi := uint(e&0xffff), uint(e>>16)
	if n.forceRefine {
		lo, hi = 0, nBins
	}
	slow := false // U's digits are in n.ub
	for lo < hi {
		mid := (lo + hi + 1) / 2
		var ge bool // U >= C_mid
		if slow {
			ge = n.geqSlow(mid)
		} else {
			t := &thresholds[mid]
			for {
				// U in [P, P+1) 2^-nb. U < C if (P+1) 2^-nb <= L 2^-128,
				// which holds if P < loHi >> (64-nb); U >= C if P 2^-nb
				// >= H 2^-128, which holds if P > hiHi >> (64-nb).
				sh := 64 - nb
				if !n.forceRefine {
					if P < t.loHi>>sh {
						break
					}
					if P > t.hiHi>>sh {
						ge = true
						break
					}
				}
				if nb == 64 {
					slow = true
					n.ub.reset()
					n.ub.w[0], n.ub.n = P, 1
					ge = n.geqSlow(mid)
					break
				}
				w := min(16, 64-nb)
				P = P<<w | n.s.take(w)
				nb += w
			}
		}
		if ge {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// geqSlow reports whether U >= C_j, U held in n.ub: first with the stored
// 128-bit enclosure and two digits of U, then by refine.
func (n *normal) geqSlow(j uint) bool {
	t := &thresholds[j]
	d0, d1 := n.ub.digit(0, n.s.rng), n.ub.digit(1, n.s.rng)
	if !n.forceRefine {
		// U in [V, V+1) 2^-128 for V = (d0, d1): below L if V < L, at or
		// above H if V >= H.
		if d0 < t.loHi || d0 == t.loHi && d1 < t.loLo {
			return false
		}
		if d0 > t.hiHi || d0 == t.hiHi && d1 >= t.hiLo {
			return true
		}
	}
	return n.refine(j)
}

// refine decides U >= C_j when the stored enclosure cannot: with L digits of
// U, U lies in [V, V + 2^-64L); C_j is recomputed in an interval of width
// about 2^-(64L+32); the answer is given once [V, V + 2^-64L) lies wholly
// below or wholly at or above that interval, else L grows. (Slow, allocates:
// probability about 2^-127 per comparison.)
func (n *normal) refine(j uint) bool {
	z := dyadic(int64(j), -binBits)
	for L := 2; ; L++ {
		p := uint(64*L + 32)
		c := certProbBelow(z, certSqrt2OverPi(p), p)
		v, v1 := n.ub.prefix(L, n.s.rng)
		if v1.Cmp(c.lo) <= 0 {
			return false
		}
		if v.Cmp(c.hi) >= 0 {
			return true
		}
	}
}

// prefix returns the interval [V, V + 2^-64L) in which the deviate lies,
// given its first L digits (drawn as needed), as exact big.Floats.
func (u *urand) prefix(L int, rng *rand.Rand) (v, v1 *big.Float) {
	var x, d big.Int
	for i := range L {
		x.Lsh(&x, 64)
		x.Or(&x, d.SetUint64(u.digit(i, rng)))
	}
	prec := uint(64*L + 2)
	v = new(big.Float).SetPrec(prec).SetInt(&x)
	v.SetMantExp(v, -64*L)
	x.Add(&x, big.NewInt(1))
	v1 = new(big.Float).SetPrec(prec).SetInt(&x)
	v1.SetMantExp(v1, -64*L)
	return v, v1
}

// sampleBinSlow finishes sampleTableFrom when the first 8 bits c of U' did
// not accept y (x's digit 0 holds frac(j h) in its top binBits bits and y's
// first bits below): it decides U' < exp(-(2 a y + y^2)/2), a = j h, and on
// rejection draws y and U' again in the same bin.
func (n *normal) sampleBinSlow(j uint, c uint64) {
	for !n.acceptSlow(j, c) {
		n.x.reset()
		n.x.n, n.x.w[0] = 1, uint64(j&(1<<binBits-1))<<(64-binBits)|n.s.take(64-binBits)
		c = n.s.take(8)
		if c < uint64(squeeze8[subBin(j, n.x.w[0])]) && !n.forceExact {
			return
		}
	}
}

// acceptMargin bounds the error of acceptFloat's comparison (see there).
const acceptMargin = 0x1p-40

// acceptSlow decides U' < exp(-t(y)) when the first 8 bits c of U' did
// not: with 64 bits of U' against the squeeze, then in float64 with a
// margin, then exactly.
func (n *normal) acceptSlow(j uint, c uint64) bool {
	u := c<<56 | n.s.take(56) // U' in [u, u+1) 2^-64
	n.x.digit(0, n.s.rng)     // all of x's digit 0
	if !n.forceExact {
		if u < squeeze[subBin(j, n.x.w[0])] {
			return true
		}
		if r := acceptFloat(j, n.x.w[0], u); r != 0 {
			return r > 0
		}
	}
	return n.acceptExact(j, u)
}

// acceptFloat compares U' in [u, u+1) 2^-64 with exp(-t), t = y (2a + y)/2,
// for y in [Y, Y + 2^-64), Y = (d0 mod 2^(64-binBits)) 2^-64, a = j h, in
// float64: +1 if U' < exp(-t) for every such U' and y, -1 if U' >= exp(-t)
// for every such U' and y, 0 if it cannot tell.
//
// Error analysis (u = 2^-53 the unit roundoff; t <= h (2 tailK + h)/2 <
// 0.126): yf = float64(Y) has relative error <= u; tf = yf (2a + yf)/2 (2a
// exact, three operations) is within 5u t + (a + h) 2^-64 < 2^-54 of t for
// every y in the cell (dt/dy = a + y <= 8.02). expNegPoly's Horner sum of
// the degree-12 Taylor polynomial of exp(-t) is within gamma_24 sum_i
// t^i/i! <= 24 u (1 + 24u) e^0.126 < 2^-47 of the polynomial (Higham,
// "Accuracy and Stability of Numerical Algorithms", eq. 5.3; the rounding
// of the coefficients 1/i! adds at most u e^0.126), and the polynomial is
// within t^13/13! < 2^-70 of exp(-t) (|d exp(-t)/dt| <= 1 carries tf's
// error over unchanged). So |ef - exp(-t(y))| < 2^-46 for every y in the
// cell. uf = float64(u) 2^-64 is within 2^-54 of u 2^-64, and U' within
// 2^-64 of that. The comparisons below are made with ef -+ 2^-40, each
// subtraction or addition rounded by at most 2^-53: far inside the margin.
// A fused multiply-add (which the Go specification allows) only removes
// roundings, so the bound holds with or without one.
func acceptFloat(j uint, d0, u uint64) int {
	y := float64(d0&(1<<(64-binBits)-1)) * 0x1p-64
	a2 := float64(j) * (2.0 / (1 << binBits))
	t := y * (a2 + y) * 0.5
	ef := expNegPoly(t)
	uf := float64(u) * 0x1p-64
	switch {
	case uf < ef-acceptMargin:
		return 1
	case uf > ef+acceptMargin:
		return -1
	}
	return 0
}

// expNegPoly returns the degree-12 Taylor polynomial of exp(-t) at 0, by
// Horner's rule (t in [0, 1/8]).
func expNegPoly(t float64) float64 {
	const (
		c2  = 1.0 / 2
		c3  = 1.0 / 6
		c4  = 1.0 / 24
		c5  = 1.0 / 120
		c6  = 1.0 / 720
		c7  = 1.0 / 5040
		c8  = 1.0 / 40320
		c9  = 1.0 / 362880
		c10 = 1.0 / 3628800
		c11 = 1.0 / 39916800
		c12 = 1.0 / 479001600
	)
	p := c12
	p = c11 - t*p
	p = c10 - t*p
	p = c9 - t*p
	p = c8 - t*p
	p = c7 - t*p
	p = c6 - t*p
	p = c5 - t*p
	p = c4 - t*p
	p = c3 - t*p
	p = c2 - t*p
	p = 1 - t*p
	return 1 - t*p
}

// acceptExact decides U' < exp(-t(y)) exactly: with L digits of x and of U'
// (U' in [V, V + 2^-64L), u its first digit), k + x lies in [Zlo, Zlo +
// 2^-64L) and t = ((k+x)^2 - a^2)/2 in [tlo, thi] (exact); exp(-t) is
// decreasing, so it lies in [exp(-thi), exp(-tlo)], each enclosed by
// certExpNeg. Accept if V + 2^-64L <= the lower end, reject if V >= the
// upper end, else draw one more digit of each. (Slow, allocates:
// probability about 2^-45 per sample.)
func (n *normal) acceptExact(j uint, u uint64) bool {
	rng := n.s.rng
	w := &n.z[0]
	w.reset()
	w.w[0], w.n = u, 1
	a2 := dyadic(int64(j)*int64(j), -2*binBits) // a^2, exact
	k := int64(j >> binBits)
	for L := 1; ; L++ {
		p := uint(64*L + 64)
		xlo, xhi := n.x.prefix(L, rng)
		tq := func(x *big.Float) *big.Float { // ((k+x)^2 - a^2)/2, exact
			z := new(big.Float).SetPrec(p+8).Add(x, new(big.Float).SetInt64(k))
			z2 := new(big.Float).SetPrec(2*p+16).Mul(z, z)
			z2.Sub(z2, a2)
			return z2.SetMantExp(z2, -1)
		}
		elo := certExpNeg(tq(xhi), p).lo
		ehi := certExpNeg(tq(xlo), p).hi
		v, v1 := w.prefix(L, rng)
		if v1.Cmp(elo) <= 0 {
			return true
		}
		if v.Cmp(ehi) >= 0 {
			return false
		}
	}
}

// sampleTail draws |N| given |N| >= tailK, exactly, into n.k and n.x
// (Karney's Algorithm N conditioned on k >= tailK, karney.go): with k =
// tailK + m,
//
//	T1. m >= 0 with probability proportional to exp(-tailK m): count
//	    successes of Bernoulli(exp(-tailK)) (2 tailK successes of
//	    Bernoulli(exp(-1/2))) before the first failure;
//	T2. accept with probability exp(-m^2/2): m^2 successes;
//	T3. x uniform; accept with probability exp(-x(2k+x)/2) = B(k, x)^(k+1).
//
// The accepted density of k + x is proportional to exp(-tailK m - m^2/2)
// exp(-x(2k+x)/2) = exp(tailK^2/2) exp(-(k+x)^2/2) on [tailK, inf).
// (Probability about 2^-49 per sample.)
func (n *normal) sampleTail() {
	rng := n.b.rng
outer:
	for {
		m := uint64(0)
	count:
		for {
			for range 2 * tailK {
				if !bernoulliHalfExp(&n.b) {
					break count
				}
			}
			m++
		}
		for range m * m {
			if !bernoulliHalfExp(&n.b) {
				continue outer
			}
		}
		k := tailK + m
		n.x.reset()
		for range k + 1 {
			if !n.bernoulliB(k, rng) {
				continue outer
			}
		}
		n.k = k
		return
	}
}
