// Package noise holds the samplers behind every differentially private
// release in dprl: Gaussian noise for the Gaussian mechanisms and discrete
// Laplace noise for the sparse vector technique.
//
// # Why not x + sigma * rand.NormFloat64()
//
// A floating-point Gaussian sample is not a real Gaussian: Go's ziggurat
// returns float64(j) * w[i] for an int32 j and one of 128 float32 table
// values w[i], so x + sigma*N lands on a lattice that moves with x, and a
// distinguisher that asks which of two neighbouring inputs the output fits
// wins almost always (Mironov 2012, "On significance of the least significant
// bits for differential privacy", shows the same for Laplace samples). The
// samplers here return values whose floating-point representation is a
// function of a mechanism's exact output on a data-independent grid, so the
// representation leaks nothing that the mechanism does not release.
//
// # The Gaussian sampler
//
// Gaussian.Add(v, sigma) replaces each coordinate v_i by
//
//	gamma * round((v°_i + sigma' N_i) / gamma)
//
// computed exactly, with N_i independent standard normal variables sampled
// exactly as ±(k + x), an integer k and a uniform deviate x whose bits are
// drawn only as far as a comparison needs them (the representation of Karney
// 2016, "Sampling exactly from the normal distribution", Algorithm N), where
//
//   - gamma = 2^(floor(log2 sigma') - 20) is a power of two that depends only
//     on sigma (public), never on v;
//   - sigma' = sigma (1 + 2^-20), rounded up;
//   - v° is v rounded to the grid gamma 2^-40, after clamping each coordinate
//     to |v_i| <= 2^62 gamma (at least 2^42 sigma, 4 10^12 sigma).
//
// The output is a deterministic function (rounding to the grid gamma) of
// v° + sigma' N, the Gaussian mechanism on v°: post-processing, so it is
// exactly as private as that mechanism, and its floating-point value (the
// exact integer multiple of gamma, converted to float64, exactly below 2^53
// grid steps and rounded beyond) carries nothing else.
//
// Privacy of a caller's release. Let f be a statistic with L2 sensitivity
// Delta (in exact arithmetic) and v its value computed in floating point, and
// call the release with sigma = z Delta. Then the output is at least as private
// as the Gaussian mechanism with noise multiplier z (the value the
// accountant charges), provided
//
//  1. the floating-point error ||v - f||_2 is at most 2^-23 Delta on every
//     input (for a sum of K contributions each clipped to norm C <= Delta in
//     float64, the error is below K^2 2^-53 C, so K <= 2^15 suffices), and
//  2. z sqrt(d) <= 2^38 for d = len(v) (any d <= 2^40 with z <= 2^18).
//
// The proof is in docs/privacy.md, section 2: clamping and the fine grid
// move the input by less than the 2^-20 margin added to the noise covers.
//
// # The table sampler
//
// N is drawn by a table sampler: |N| falls in one of 512 bins of width 1/64
// on [0, 8) or in the tail [8, inf). The bin is chosen by comparing a uniform
// U with the thresholds C_j = P(|N| < j/64), stored as certified 128-bit
// enclosures computed in interval arithmetic (certified.go, normtable.go).
// When U's first 128 bits fall inside an enclosure, C_j is recomputed at
// higher precision and more bits of U are drawn. Within the bin, a uniform
// offset is accepted with probability exp(-(2 a y + y^2)/2), decided by a
// certified squeeze, by float64 with a proven margin or exactly in big.Float.
// The tail uses Karney's construction conditioned on k >= 8. Every decision
// is made only when the drawn bits determine it, so N is exactly standard
// normal and x's undrawn bits are uniform. The output has the same law as
// with Karney's Algorithm N, which NewGaussianReference keeps as the
// reference (docs/privacy.md, section 2).
//
// The common case costs one random 64-bit word per coordinate, about 18 ns
// against Karney's 220 (BenchmarkNoise). Add allocates nothing in steady
// state.
package noise
