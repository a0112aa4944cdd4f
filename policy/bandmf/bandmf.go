// Package bandmf is the banded matrix-factorization mechanism for a stream
// of releases in which one contributor may take part several times: the
// streaming generation of its correlated noise (Stream) and its noise in
// the parameters (PrefixNoise, NoiseRatio). The factor's coefficients and
// its sensitivity under a participation pattern (at most k participations,
// any two at least sep releases apart) are package bandsens's
// (ledger/accountant/bandsens).
//
// # The mechanism
//
// With x_t the t-th released statistic (an average of clipped updates, of
// L2 sensitivity Delta per participation), the mechanism releases
//
//	y = C x + z,    z i.i.d. N(0, sigma^2) per row and coordinate,
//
// for a lower-triangular Toeplitz C with C[t][t-j] = c_j (j = 0 .. b-1, zero
// beyond: b bands), and the learner uses g~ = C^{-1} y = x + C^{-1} z, a
// function of the releases only. The parameters after T releases carry the
// noise A C^{-1} z, A the prefix-sum matrix: C is a factor of A = B C with
// B = A C^{-1} (the matrix mechanism, Li et al. 2015, "The Matrix
// Mechanism: Optimizing Linear Counting Queries Under Differential
// Privacy"; for training, Denisov et al. 2022, "Improved Differential
// Privacy for SGD via Optimal Private Linear Operators on Adaptive
// Streams").
//
// The default factor is the banded square root (Kalinin and Lampert 2024,
// "Banded Square Root Matrix Factorization for Differentially Private Model
// Training"): the first b coefficients of the square root of A, c_j =
// binom(2j, j) / 4^j, the coefficients of (1 - x)^(-1/2). With b = 1 it is
// the identity (independent noise).
//
// # Sensitivity
//
// The banded square-root coefficients and the factor's sensitivity under a
// participation pattern are package bandsens's (ledger/accountant/bandsens), in the
// accounting layer, so that the ledger can check a release's guarantee
// without importing the policy layer. With the noise calibrated as sigma =
// z ||c|| Delta, a contributor with the participation set W gets the
// Gaussian mechanism of multiplier z ||c|| / ||C 1_W|| (bandsens.Sensitivities),
// with much less noise in the parameters than independent releases
// (PrefixNoise).
package bandmf

import (
	"fmt"
	"math"

	"dprl/ledger/accountant/bandsens"
)

// InverseCoefficients returns h_0 .. h_{n-1}, the first n Toeplitz
// coefficients of C^{-1} (C h = e_0: h_0 = 1/c_0, h_t = -(sum_{j=1}^{min(t,
// b-1)} c_j h_{t-j}) / c_0).
func InverseCoefficients(coef []float64, n int) []float64 {
	h := make([]float64, max(n, 0))
	for t := range h {
		v := 0.0
		if t == 0 {
			v = 1
		}
		for j := 1; j < len(coef) && j <= t; j++ {
			v -= coef[j] * h[t-j]
		}
		h[t] = v / coef[0]
	}
	return h
}

// PrefixNoise returns the per-coordinate standard deviation, in units of
// the fresh draws' sigma, of the noise in the sum of the first T released
// g~ (the parameters after T releases): the norm of row T of A C^{-1},
// sqrt(sum_{t<T} H_t^2) with H_t = h_0 + ... + h_t (h =
// InverseCoefficients). It is sqrt(T) for b = 1 (independent noise).
func PrefixNoise(coef []float64, T int) float64 {
	h := InverseCoefficients(coef, T)
	H, ss := 0.0, 0.0
	for _, v := range h {
		H += v
		ss += H * H
	}
	return math.Sqrt(ss)
}

// NoiseRatio returns the ratio of the per-coordinate noise in the sum of
// the first T released g~ (the parameters) with the banded factor to that
// with independent noise, at the same per-user guarantee for k
// participations any two at least sep apart. The banded noise has sigma =
// z ||c|| Delta and sensitivity rho_band(k) (bandsens.Sensitivities), independent
// noise sigma = z Delta and rho_ind(k) = sqrt(k); equal per-user
// multipliers z / rho scale the banded z by rho_band(k) / sqrt(k), so the
// ratio is
//
//	(rho_band(k) / sqrt(k)) ||c|| PrefixNoise(c, T) / sqrt(T).
func NoiseRatio(coef []float64, T, k, sep int) (float64, error) {
	rho, err := bandsens.Sensitivities(coef, k, sep)
	if err != nil {
		return 0, err
	}
	return rho[k] / bandsens.Slack / math.Sqrt(float64(k)) * bandsens.ColumnNorm(coef) * PrefixNoise(coef, T) / math.Sqrt(float64(T)), nil
}

// CheckRounding reports whether the floating-point error of the released
// statistic (C x)_t = sum_j c_j x_{t-j} stays below 2^-23 of its
// sensitivity, the part of the exact sampler's margin reserved for it
// (package noise: condition 1): each x is a mean of K contributions of
// norm at most S/K each, computed with error at most about K^2 2^-53 S/K,
// and the sum of b products adds at most b 2^-53 sum_j c_j ||x_{t-j}|| <=
// b 2^-53 C1 S, C1 = sum_j c_j (Higham 2002, "Accuracy and Stability of
// Numerical Algorithms", Eq. (3.5) for a dot product). The sensitivity is
// at least ||c|| S/K >= S/K, so C1 K (K + b) <= 2^29 suffices (half the
// reserve, for the higher-order terms).
func CheckRounding(coef []float64, K int) error {
	c1 := 0.0
	for _, c := range coef {
		c1 += c
	}
	if v := c1 * float64(K) * float64(K+len(coef)); !(v <= 1<<29) {
		return fmt.Errorf("bandmf: %d bands with K = %d: the rounding error of the released sum could pass the sampler's margin (sum c_j x K x (K + b) = %.3g, at most 2^29); use fewer bands or a smaller K", len(coef), K, v)
	}
	return nil
}
