package noise

import (
	"math"
	"math/rand/v2"
)

// Discrete Laplace noise for the sparse vector technique: added to counts on
// an integer grid, it has the same density-ratio bounds on integer shifts as
// the continuous Laplace distribution and no floating-point representation
// to leak (Canonne, Kamath & Steinke 2020, "The Discrete Gaussian for
// Differential Privacy", Section 5).

// bernoulliRational returns true with probability num/den (0 <= num <= den).
func bernoulliRational(rng *rand.Rand, num, den uint64) bool {
	return rng.Uint64N(den) < num
}

// bernoulliExp returns true with probability exp(-num/den), exactly
// (Canonne, Kamath & Steinke 2020, Algorithm 1).
func bernoulliExp(rng *rand.Rand, num, den uint64) bool {
	for num > den { // exp(-x) = exp(-1)^floor(x) exp(-(x - floor(x)))
		if !bernoulliExp1(rng, 1, 1) {
			return false
		}
		num -= den
	}
	return bernoulliExp1(rng, num, den)
}

// bernoulliExp1 handles num/den in [0, 1]: draw A_k ~ Bernoulli(x/k) for
// k = 1, 2, ... until one is 0; return whether that k is odd.
func bernoulliExp1(rng *rand.Rand, num, den uint64) bool {
	k := uint64(1)
	for bernoulliRational(rng, num, den*k) {
		k++
	}
	return k%2 == 1
}

// DiscreteLaplace returns an integer Y with P(Y = y) ∝ exp(-|y| / t), for an
// integer scale t >= 1, exactly (Canonne, Kamath & Steinke 2020, Algorithm 2
// with s = 1).
func DiscreteLaplace(rng *rand.Rand, t uint64) int64 {
	for {
		u := rng.Uint64N(t)
		if !bernoulliExp(rng, u, t) {
			continue
		}
		var v uint64
		for bernoulliExp(rng, 1, 1) {
			v++
		}
		x := u + t*v
		neg := rng.Uint64N(2) == 1
		if neg && x == 0 {
			continue
		}
		if x > math.MaxInt64 {
			continue
		}
		if neg {
			return -int64(x)
		}
		return int64(x)
	}
}
