package svt

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Grid is the resolution of the noisy comparisons: counts and thresholds are
// rounded to multiples of Grid before discrete Laplace noise is added.
//
// Why not math.Log(U)·b: a Laplace sample computed in floating point has
// gaps and a non-uniform set of reachable values that depend on the value it
// is added to, and Mironov (2012, "On significance of the least significant
// bits for differential privacy") shows those gaps can reveal the input
// exactly. We instead add integer noise from the discrete Laplace
// distribution, sampled exactly with integer arithmetic (Canonne, Kamath &
// Steinke 2020, "The Discrete Gaussian for Differential Privacy", Algorithms
// 1 and 2), to counts rounded to a grid of 2^-20. Rounding can move a count
// by half a grid step, so a sensitivity-1 count has integer sensitivity at
// most 2^20 + 1 on the grid; the noise scales are set for that sensitivity.
// The discrete Laplace distribution satisfies the same density-ratio bounds
// on integer shifts as the continuous one, which is all the sparse vector
// analysis uses, so DataRelease keeps its (eps1, delta1) guarantee.
const Grid = 1.0 / (1 << 20)

// gridSensitivity is the sensitivity, in grid units, of a sensitivity-1
// quantity rounded to the grid.
const gridSensitivity = 1<<20 + 1

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

// discreteLaplace returns an integer Y with P(Y = y) ∝ exp(-|y| / t), for an
// integer scale t >= 1, exactly (Canonne, Kamath & Steinke 2020, Algorithm 2
// with s = 1).
func discreteLaplace(rng *rand.Rand, t uint64) int64 {
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

// laplaceScale returns the integer grid scale of Laplace noise with real
// scale b for a sensitivity-1 query: ceil(b · gridSensitivity), rounded up so
// the noise is never smaller than the analysis needs.
func laplaceScale(b float64) (uint64, error) {
	s := math.Ceil(b * gridSensitivity)
	if !(s >= 1) || s > 1<<62 {
		return 0, fmt.Errorf("svt: Laplace scale %v out of range", b)
	}
	return uint64(s), nil
}

// toGrid rounds a non-negative real to the nearest grid point.
func toGrid(x float64) int64 { return int64(math.Round(x / Grid)) }
