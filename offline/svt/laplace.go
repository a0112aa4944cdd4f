package svt

import (
	"fmt"
	"math"
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
// 1 and 2; package noise), to counts rounded to a grid of 2^-20. Rounding can move a count
// by half a grid step, so a sensitivity-1 count has integer sensitivity at
// most 2^20 + 1 on the grid; the noise scales are set for that sensitivity.
// The discrete Laplace distribution satisfies the same density-ratio bounds
// on integer shifts as the continuous one, which is all the sparse vector
// analysis uses, so DataRelease keeps its (eps1, delta1) guarantee.
const Grid = 1.0 / (1 << 20)

// gridSensitivity is the sensitivity, in grid units, of a sensitivity-1
// quantity rounded to the grid.
const gridSensitivity = 1<<20 + 1

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
