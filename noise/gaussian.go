package noise

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"
)

// Margin is the relative amount by which Add raises the standard deviation it
// is given: sigma' = sigma (1 + Margin), rounded up. It covers the rounding of
// the input to the fine grid and the floating-point error of the statistic
// (package doc).
const Margin = 0x1p-20

// gridBits: the output grid is between sigma' 2^-(gridBits+1) and
// sigma' 2^-gridBits.
const gridBits = 20

// scaleBits: sigma'/gamma, in [2^gridBits, 2^(gridBits+1)), is M 2^-scaleBits
// with an integer M below 2^53.
const scaleBits = 52 - gridBits

// inputBits: inputs are rounded to the output grid times 2^-inputBits.
const inputBits = 40

// clampBits: inputs are clamped to 2^clampBits output grid steps (2^42
// sigma' and more), so that the output, an integer multiple of the grid, is
// computed exactly in int64 before its conversion to float64 (which rounds
// beyond 2^53 grid steps: a deterministic function of the exact output, so
// post-processing).
const clampBits = 62

// Gaussian adds exactly sampled Gaussian noise rounded to a data-independent
// power-of-two grid (see the package documentation for the exact output and
// its guarantee). A Gaussian is not safe for concurrent use.
type Gaussian struct {
	rng *rand.Rand
	n   normal
	ref bool // Karney's sampler (NewGaussianReference)
	// slowOnly (a test hook) sends every coordinate through
	// sampleTableFrom and round, past Add's inline common case.
	slowOnly bool
	// scratch of the exact slow path (probability about 2^-33 per
	// coordinate)
	bx, bp, bq, bt, bu big.Int
}

// NewGaussian returns a sampler that draws every random bit from rng. The
// production paths pass a generator keyed from crypto/rand.
func NewGaussian(rng *rand.Rand) *Gaussian {
	if rng == nil {
		panic("noise: nil generator")
	}
	g := &Gaussian{rng: rng}
	g.n.s.rng, g.n.b.rng = rng, rng
	return g
}

// NewGaussianReference returns a sampler whose output has the same law as
// NewGaussian's, with N drawn by Karney's algorithm (package
// documentation): the reference the table sampler is tested against, about
// ten times slower.
func NewGaussianReference(rng *rand.Rand) *Gaussian {
	g := NewGaussian(rng)
	g.ref = true
	return g
}

// params returns sigma' = sigma (1 + Margin) rounded up, the exponent G of
// the grid gamma = 2^G = 2^(floor(log2 sigma') - gridBits), and M =
// sigma'/gamma 2^scaleBits (an integer below 2^53: sigma'/gamma is in
// [2^gridBits, 2^(gridBits+1))).
func params(sigma float64) (sp float64, G int, M uint64) {
	if !(sigma >= 0x1p-900 && sigma <= 0x1p900) {
		panic(fmt.Sprintf("noise: Gaussian standard deviation %v outside [2^-900, 2^900]", sigma))
	}
	sp = math.Nextafter(sigma*(1+Margin), math.Inf(1))
	frac, exp := math.Frexp(sp) // sp = frac 2^exp, frac in [1/2, 1)
	G = exp - 1 - gridBits
	M = uint64(math.Ldexp(frac, 53)) // sigma'/gamma = frac 2^(gridBits+1) = M 2^-scaleBits
	return sp, G, M
}

// Grid returns the output grid gamma of Add for sigma: every output
// coordinate is an integer multiple of it. It depends on sigma only.
func Grid(sigma float64) float64 {
	_, G, _ := params(sigma)
	return math.Ldexp(1, G)
}

// Std returns the standard deviation sigma' = sigma (1 + Margin) that Add
// actually uses for sigma (rounded up).
func Std(sigma float64) float64 {
	sp, _, _ := params(sigma)
	return sp
}

// Add replaces every v[i] by gamma round((v°_i + sigma' N_i) / gamma), exactly,
// with N_i independent standard normal variables (package documentation:
// gamma = Grid(sigma), sigma' = Std(sigma), v° the input clamped and rounded
// to a grid finer than gamma). A NaN input coordinate is treated as 0 and an
// infinite one is clamped; callers must still keep their statistics finite
// (the sensitivity argument is theirs). sigma must be in [2^-900, 2^900]:
// a caller with no noise (a non-private mode) must not call Add. Add
// allocates nothing in steady state.
func (g *Gaussian) Add(v []float64, sigma float64) {
	_, G, M := params(sigma)
	// x 2^-G is exact unless it underflows (far below the input grid, where
	// it rounds to 0 all the same) or overflows (then clamped); 2^-G is a
	// normal float64 (|G| <= 921).
	scale, gamma := math.Ldexp(1, -G), math.Ldexp(1, G)
	if g.ref {
		for i, x := range v {
			ai, f := onGrid(x * scale)
			g.n.sample(g.rng)
			// |ai + r| < 2^63; the product is exact (a power of two, the
			// result within [2^-921, 2^944]), as Ldexp(float64(ai+r), G).
			v[i] = float64(ai+g.round(M, f)) * gamma
		}
		return
	}
	// The table sampler, with the common case of sampleTableFrom and round
	// written out here: the first uBits bits of the word r name the bin
	// (the guide names one bin, or two with their threshold decided by
	// those bits), the first 8 bits of U' are below the squeeze, and the
	// sample is ±(k + x) with x's digit 0 drawn but for its last yPart
	// bits; round's 128-bit arithmetic (see there) then decides the output
	// for every value of those bits unless the interval it leaves (width
	// s 2^-41 <= 2^-20) holds a rounding boundary. Every other case goes
	// through sampleTableFrom and round with the same r, so the output is
	// theirs exactly.
	const w = scaleBits + 64
	width := u128{0, M}.shl(yPart) // the interval of s x, in units 2^-w
	hooks := g.n.forceRefine || g.n.forceExact || g.slowOnly
	for i, x := range v {
		ai, f := onGrid(x * scale)
		r := g.rng.Uint64()
		P := r >> (64 - uBits)
		e := guide[P>>(uBits-guideBits)]
		j := uint(e & 0xffff)
		ok := !hooks
		if hi := uint(e >> 16); hi != j {
			ok = ok && hi == j+1
			if ok { // as in searchBin
				t := &thresholds[hi]
				switch {
				case P > t.hiHi>>(64-uBits):
					j = hi
				case P < t.loHi>>(64-uBits):
				default:
					ok = false
				}
			}
		}
		if ok && j < nBins {
			X := uint64(j&(1<<binBits-1))<<(64-binBits) | (r&(1<<yBits-1))<<yPart
			if r>>(yBits+1)&0xff < uint64(squeeze8[subBin(j, X)]) {
				k := uint64(j >> binBits)
				m := -(r >> yBits & 1) // all ones for a negative sample
				p := u128{0, f}.shl(w - inputBits).add(u128{1 << (w - 1 - 64), 0})
				q := u128{M * k, 0}.add(mul(M, X))
				t := u128{1 << 62, 0}.add(p).add(u128{q.hi ^ m, q.lo ^ m}).add(u128{0, m & 1})
				a := t.sub(u128{width.hi & m, width.lo & m})
				if lo, hi := a.shr(w), a.add(width).shr(w); lo == hi {
					v[i] = float64(ai+int64(lo)-1<<(126-w)) * gamma
					continue
				}
			}
		}
		g.n.sampleTableFrom(r)
		v[i] = float64(ai+g.round(M, f)) * gamma
	}
}

// clamp returns a clamped to |a| <= 2^clampBits, 0 for NaN.
func clamp(a float64) float64 {
	if a != a {
		return 0
	}
	return max(-(1 << clampBits), min(1<<clampBits, a))
}

// onGrid returns a = x 2^-G clamped to |a| <= 2^clampBits (0 for NaN) and
// rounded to the grid 2^-inputBits, as ai + f 2^-inputBits with an integer
// ai and 0 <= f < 2^inputBits.
func onGrid(a float64) (ai int64, f uint64) {
	if !(a >= -(1<<clampBits) && a <= 1<<clampBits) { // NaN or beyond the clamp
		a = clamp(a)
	}
	fa := math.Floor(a)
	// f = round((a - fa) 2^40) in [0, 2^40], halves away from zero (up:
	// d >= 0), as math.Round; d - fl is exact. f = 2^40 carries into ai.
	d := (a - fa) * (1 << inputBits)
	fl := math.Floor(d)
	var up uint64
	if d-fl >= 0.5 {
		up = 1
	}
	f = uint64(int64(fl)) + up // fl < 2^40
	return int64(fa) + int64(f>>inputBits), f & (1<<inputBits - 1)
}

// round returns floor(f 2^-40 + 1/2 ± s (k + x)) for the sample ±(k + x) in
// g.n and s = M 2^-scaleBits, exactly: the digits of x are drawn until the
// floor is the same for every value of the undrawn ones. It works in units of
// 2^-(scaleBits+L), L the number of bits of x drawn, where x lies in
// [X 2^-L, (X+1) 2^-L), s x in [M X, M X + M), s k = M k 2^L,
// f 2^-40 = f 2^(scaleBits+L-40) and 1/2 = 2^(scaleBits+L-1).
func (g *Gaussian) round(M, f uint64) int64 {
	const w = scaleBits + 64 // the unit exponent for L = 64
	k := g.n.k
	if k < 64 { // M k < 2^59: 128-bit arithmetic with L = 64
		x := &g.n.x
		if x.n == 0 {
			x.digit(0, g.rng)
		}
		p := u128{0, f}.shl(w - inputBits).add(u128{1 << (w - 1 - 64), 0}) // < 2^(w+1)
		// m is all ones for a negative sample: the sign is applied without
		// a branch (it is a coin flip, which a branch would mispredict
		// half of the time).
		var m uint64
		if g.n.negate {
			m = ^uint64(0)
		}
		for {
			// x in [X, X + 2^part) 2^-64: the table sampler may leave the
			// last part bits of digit 0 undrawn (0 in X).
			X, width := x.w[0], u128{0, M}.shl(x.part) // width < 2^68
			q := u128{M * k, 0}.add(mul(M, X))         // < 2^124
			// t = 2^126 + p ± q (|p ± q| < 2^125: t stays positive);
			// -q = ^q + 1 in two's complement. The value lies in [t, t +
			// width) for a positive sample and in (t - width, t] for a
			// negative one: in [a, a + width] for a = t - (width if
			// negative). Subtract 2^(126-w) after the shift.
			t := u128{1 << 62, 0}.add(p).add(u128{q.hi ^ m, q.lo ^ m}).add(u128{0, m & 1})
			a := t.sub(u128{width.hi & m, width.lo & m})
			if lo, hi := a.shr(w), a.add(width).shr(w); lo == hi {
				return int64(lo) - 1<<(126-w)
			}
			if x.part == 0 {
				break
			}
			x.digit(0, g.rng) // draw the rest of digit 0 and try again
		}
	}
	return g.roundSlow(M, f)
}

// roundSlow is round with arbitrary precision, drawing digits of x until the
// floor is determined.
func (g *Gaussian) roundSlow(M, f uint64) int64 {
	x, p, q, t, u := &g.bx, &g.bp, &g.bq, &g.bt, &g.bu
	var bm big.Int
	bm.SetUint64(M)
	for nd := 1; ; nd++ {
		L := uint(64 * nd)
		w := scaleBits + L
		x.SetUint64(0)
		for i := range nd {
			x.Lsh(x, 64)
			x.Or(x, u.SetUint64(g.n.x.digit(i, g.rng)))
		}
		p.SetUint64(f)
		p.Lsh(p, w-inputBits)
		p.Add(p, u.Lsh(u.SetUint64(1), w-1))
		q.SetUint64(g.n.k)
		q.Lsh(q, L)
		q.Add(q, x)
		q.Mul(q, &bm)
		if !g.n.negate {
			t.Add(p, q) // [t, t+M)
			u.Add(t, &bm)
		} else {
			t.Sub(p, q) // (t-M, t]
			u.Set(t)
			t.Sub(t, &bm)
		}
		t.Rsh(t, w) // arithmetic: floor for negative values
		u.Rsh(u, w)
		if t.Cmp(u) == 0 {
			if !t.IsInt64() {
				panic("noise: Gaussian sample out of range")
			}
			return t.Int64()
		}
	}
}

// u128 is an unsigned 128-bit integer.
type u128 struct{ hi, lo uint64 }

func mul(a, b uint64) u128 {
	hi, lo := bits.Mul64(a, b)
	return u128{hi, lo}
}

func (a u128) add(b u128) u128 {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi, _ := bits.Add64(a.hi, b.hi, c)
	return u128{hi, lo}
}

func (a u128) sub(b u128) u128 {
	lo, c := bits.Sub64(a.lo, b.lo, 0)
	hi, _ := bits.Sub64(a.hi, b.hi, c)
	return u128{hi, lo}
}

// shr returns a >> s for 64 <= s < 128, which must fit in 64 bits.
func (a u128) shr(s uint) uint64 { return a.hi >> (s - 64) }

// shl returns a << s for a < 2^64 and s < 64.
func (a u128) shl(s uint) u128 {
	if s == 0 {
		return a
	}
	return u128{a.lo >> (64 - s), a.lo << s}
}
