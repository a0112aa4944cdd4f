package noise

import (
	"math/bits"
	"math/rand/v2"
)

// urand is a uniform deviate in [0, 1) whose base-2^64 digits are drawn only
// when a comparison needs them (Karney 2016, Sec. 2: a "u-rand"). Digits past
// the drawn ones are uniform and independent of everything seen so far.
//
// The table sampler may draw digit 0 in part: then its last part bits are
// not drawn yet (and are 0 in w[0]); digit draws them before anything else.
type urand struct {
	w    [4]uint64
	n    int
	part uint
	more []uint64 // digits 4, 5, ... (probability 2^-192 of being needed)
}

func (u *urand) reset() { u.n = 0; u.part = 0; u.more = u.more[:0] }

// digit returns digit i, drawing the digits up to i as needed.
func (u *urand) digit(i int, rng *rand.Rand) uint64 {
	if u.part != 0 {
		u.w[0] |= rng.Uint64() >> (64 - u.part)
		u.part = 0
	}
	for u.n <= i {
		d := rng.Uint64()
		if u.n < len(u.w) {
			u.w[u.n] = d
		} else {
			u.more = append(u.more, d)
		}
		u.n++
	}
	if i < len(u.w) {
		return u.w[i]
	}
	return u.more[i-len(u.w)]
}

// less reports whether a < b, drawing digits of both as needed. The two
// deviates are equal with probability zero, so the loop ends with
// probability one.
func less(a, b *urand, rng *rand.Rand) bool {
	for i := 0; ; i++ {
		x, y := a.digit(i, rng), b.digit(i, rng)
		if x != y {
			return x < y
		}
	}
}

// bernoulliHalfExp returns true with probability exp(-1/2), exactly: the
// alternating-series method of Canonne, Kamath & Steinke 2020 ("The Discrete
// Gaussian for Differential Privacy", Algorithm 1) with x = 1/2: draw
// A_k ~ Bernoulli(x/k) for k = 1, 2, ... until one is 0 and return whether
// that k is odd (P = sum_j (-1)^j x^j / j! = exp(-x)).
func bernoulliHalfExp(b *bitSource) bool {
	k := uint64(1)
	for b.uintN(2*k) == 0 { // Bernoulli(1/(2k))
		k++
	}
	return k%2 == 1
}

// bitSource hands out the bits of 64-bit words from rng a few at a time, so
// that small uniform integers cost a few bits instead of a word.
type bitSource struct {
	rng *rand.Rand
	buf uint64
	n   uint // bits left in buf
}

// bits returns w uniform bits (1 <= w <= 64).
func (b *bitSource) bits(w uint) uint64 {
	if b.n < w {
		// Use the leftover bits as the high part, new bits for the rest.
		hi, nh := b.buf, b.n
		b.buf, b.n = b.rng.Uint64(), 64
		lo := b.bits(w - nh)
		if nh == 0 {
			return lo
		}
		return hi<<(w-nh) | lo
	}
	var v uint64
	if w == 64 {
		v = b.buf
	} else {
		v = b.buf & (1<<w - 1)
	}
	b.buf >>= w % 64
	if w == 64 {
		b.buf = 0
	}
	b.n -= w
	return v
}

// uintN returns a uniform integer in [0, n), n >= 1, by rejection on the
// fewest bits that can hold n-1.
func (b *bitSource) uintN(n uint64) uint64 {
	if n == 1 {
		return 0
	}
	w := uint(bits.Len64(n - 1))
	for {
		if v := b.bits(w); v < n {
			return v
		}
	}
}

// normal is Karney's exact sampler of the standard normal distribution
// (Karney 2016, "Sampling exactly from the normal distribution", ACM TOMS 42,
// Algorithm N). A sample is ±(k + x) with an integer k >= 0 and x the
// deviate u0 (its undrawn digits uniform).
type normal struct {
	b      bitSource
	s      bitStream // the table sampler's bits (table.go)
	x      urand
	z      [3]urand // scratch deviates of Algorithm B
	ub     urand    // the table sampler's U when a comparison needs digits
	k      uint64
	negate bool
	// Test hooks of the table sampler: forceRefine decides every bin
	// comparison by refine, forceExact every acceptance by acceptExact.
	forceRefine, forceExact bool
}

// sample draws one standard normal variable into n.k, n.x, n.negate.
//
//	N1. k >= 0 with probability exp(-k/2) (1 - exp(-1/2)): count successes of
//	    Bernoulli(exp(-1/2)) before the first failure.
//	N2. accept with probability exp(-k(k-1)/2): k(k-1) more successes.
//	N3. x uniform in [0, 1).
//	N4. accept with probability exp(-x(2k+x)/2) = B(k, x)^(k+1), where B
//	    succeeds with probability exp(-x(2k+x)/(2k+2)).
//	N5. return ±(k + x), each sign with probability 1/2.
//
// The accepted density of k + x is proportional to exp(-k/2) exp(-k(k-1)/2)
// exp(-x(2k+x)/2) = exp(-(k+x)^2/2).
func (n *normal) sample(rng *rand.Rand) {
	n.b.rng = rng
outer:
	for {
		k := uint64(0)
		for bernoulliHalfExp(&n.b) {
			k++
		}
		for range k * (k - 1) { // 0 for k = 0 (wraps to 0 * (2^64-1)) and k = 1
			if !bernoulliHalfExp(&n.b) {
				continue outer
			}
		}
		n.x.reset()
		for range k + 1 {
			if !n.bernoulliB(k, rng) {
				continue outer
			}
		}
		n.k = k
		n.negate = n.b.bits(1) == 1
		return
	}
}

// bernoulliB returns true with probability exp(-x r) for r = (2k+x)/(2k+2),
// x = n.x (Karney 2016, Algorithm B): von Neumann's method. Draw deviates
// z_1, z_2, ... while x > z_1 > z_2 > ... and each step also passes a
// Bernoulli(r) test; the run reaches length j with probability (x r)^j / j!,
// so it stops at an even length with probability sum_j (-1)^j (x r)^j / j! =
// exp(-x r). Bernoulli(r) is a uniform c in {0, ..., 2k+1}: true if c < 2k,
// false if c = 2k+1, and for c = 2k true with probability x (a fresh deviate
// below x).
func (n *normal) bernoulliB(k uint64, rng *rand.Rand) bool {
	prev := &n.x
	cur, spare := 0, 1
	even := true
	for {
		z := &n.z[cur]
		z.reset()
		if !less(z, prev, rng) {
			return even
		}
		c := n.b.uintN(2*k + 2)
		if c == 2*k+1 {
			return even
		}
		if c == 2*k {
			w := &n.z[2]
			w.reset()
			if !less(w, &n.x, rng) {
				return even
			}
		}
		even = !even
		prev = z
		cur, spare = spare, cur
	}
}
