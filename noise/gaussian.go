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
	const lim = 1 << clampBits
	for i, x := range v {
		a := math.Ldexp(x, -G) // exact unless it underflows, below the input grid anyway
		if a != a {
			a = 0
		}
		a = max(-lim, min(lim, a))
		ai := math.Floor(a)
		f := uint64(math.Round((a - ai) * (1 << inputBits)))
		if f == 1<<inputBits {
			ai, f = ai+1, 0
		}
		g.n.sample(g.rng)
		r := g.round(M, f)
		v[i] = math.Ldexp(float64(int64(ai)+r), G) // |ai + r| < 2^63
	}
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
		X := g.n.x.digit(0, g.rng)
		p := u128{0, f}.shl(w - inputBits).add(u128{1 << (w - 1 - 64), 0}) // < 2^(w+1)
		q := u128{M * k, 0}.add(mul(M, X))                                 // < 2^124
		if !g.n.negate {
			t := p.add(q) // value in [t, t+M)
			if lo, hi := t.shr(w), t.add(u128{0, M}).shr(w); lo == hi {
				return int64(lo)
			}
		} else {
			// value in (t-M, t] for t = p - q; add 2^126 to keep it
			// positive (|p - q| < 2^124), subtract 2^(126-w) after the
			// shift.
			t := u128{1 << 62, 0}.add(p).sub(q)
			if lo, hi := t.sub(u128{0, M}).shr(w), t.shr(w); lo == hi {
				return int64(hi) - 1<<(126-w)
			}
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
