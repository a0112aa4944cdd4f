package noise

import (
	"math"
	"math/rand/v2"
)

// Bernoulli returns true with probability floor(q 2^64) / 2^64, which is at
// most q and within 2^-64 of it, for q in [0, 1] (q >= 1 always returns true).
// Poisson subsampling uses it: the subsampled Gaussian's privacy bound
// increases with the sampling rate, so accounting at q covers the rate
// actually used. (rng.Float64() < q instead samples with probability
// ceil(q 2^53) / 2^53, which can exceed q.)
func Bernoulli(rng *rand.Rand, q float64) bool {
	if q >= 1 {
		return true
	}
	if !(q > 0) {
		return false
	}
	// q < 1, so q 2^64 < 2^64; the product is exact (a power-of-two
	// scaling) and its floor fits in a uint64.
	return rng.Uint64() < uint64(math.Ldexp(q, 64))
}

// MaxPoissonBatch bounds the expected batch q·n of a Poisson-subsampled
// sum of clipped contributions whose noise this package draws. The exact
// sampler's floating-point condition holds for sums of at most 2^15 terms
// (docs/privacy.md, section 2); with an expected batch mu <= 2^14 a batch
// of k = 2^15 or more has probability at most e^-mu (e mu / k)^k <= e^-6329
// per step (the multiplicative Chernoff bound, Mitzenmacher & Upfal,
// "Probability and Computing", Theorem 4.4), so over at most 2^26 steps the
// event has probability below e^-6300, which the guarantee's delta absorbs
// (docs/privacy.md, section 2). Offline modes refuse a larger expected batch.
const MaxPoissonBatch = 1 << 14
