package policy

import (
	"errors"
	"fmt"
	"math"
)

// Sensitivity of several participations (one episode in several releases).
//
// The noise of Aggregator releases y = B x + w, B block diagonal over the
// horizons of a run (identity, binary tree or the Toeplitz square root of
// the prefix-sum matrix), w i.i.d. N(0, sigma^2), sigma = z f S / K with f
// the largest column norm of B. Every entry of B is non-negative, so a
// contributor in the releases of a window W has L2 sensitivity exactly
// (S/K) ||B 1_W|| and gets multiplier
//
//	z_W = z f / ||B 1_W|| = z / rho_W
//
// (Choquette-Choo et al. 2023, "Multi-Epoch Matrix Factorization Mechanisms
// for Private Machine Learning", Corollary 2.1 and Eq. (3)). The argument:
// docs/privacy.md, sections 3 and 4.

// sensitivitySlack inflates a ratio computed by floating-point sums of up to
// 2^20 non-negative terms (relative error below 2^20 x 2^-53, about 1e-10)
// so that rounding can only overstate it.
const sensitivitySlack = 1 + 1e-9

// WindowSensitivity returns rho(m) = max_W ||B 1_W|| / f over the windows W
// of m consecutive releases of a run of releases releases (m is capped at
// releases), for the noise c configures (see the comment above): the L2
// sensitivity of a contributor present in m consecutive releases, in units
// of the single-release sensitivity the noise was calibrated for. That
// contributor gets the Gaussian mechanism of multiplier z / rho(m).
//
// rho(1) = 1 for every noise; rho(m) = sqrt(m) for NoiseIndependent. For
// correlated noise every window start within a horizon is tried (B is
// periodic with period N), with every horizon's block taken whole: when
// releases is not a multiple of N the last block is in truth cut short (its
// missing rows are never released), so the result is then an upper bound,
// and exact otherwise. Floating-point rounding can only overstate it
// (sensitivitySlack). Cost: O(N min(m, N)) for NoiseSqrt, O(N (m + log N))
// for NoiseTree. For NoiseBandedSqrt the stream is unbounded: every window
// is the same, with whole columns (an upper bound when the run ends before
// the window's last columns are complete), O(m + Band).
func (c DPConfig) WindowSensitivity(m, releases int) (float64, error) {
	if m < 1 || releases < 1 {
		return 0, fmt.Errorf("policy: window sensitivity: %d releases per contributor in a run of %d, want both >= 1", m, releases)
	}
	mech, err := c.Noise.Mechanism()
	if err != nil {
		return 0, fmt.Errorf("policy: window sensitivity: noise %v", c.Noise)
	}
	return mech.WindowSensitivity(c, min(m, releases), releases)
}

// horizonWindowSensitivity is WindowSensitivity for a kind whose factor B
// is block diagonal over horizons of N = c.Horizon releases, given
// normsSq(N, M, starts), ||B 1_W||^2 for the windows of M releases
// starting at offsets 0 .. starts-1 of a horizon.
func horizonWindowSensitivity(c DPConfig, M, releases int, normsSq func(N, M, starts int) []float64) (float64, error) {
	N := c.Horizon
	if N < 1 || N > maxHorizon {
		return 0, fmt.Errorf("policy: window sensitivity: horizon %d, want 1 to %d", N, maxHorizon)
	}
	if M == 1 {
		// NoiseFactor is the largest column norm by construction.
		return 1, nil
	}
	best := 0.0
	for _, v := range normsSq(N, M, min(releases-M, N-1)+1) {
		best = max(best, v)
	}
	f := c.NoiseFactor()
	if !(best > 0) || !(f > 0) {
		return 0, errors.New("policy: window sensitivity: degenerate encoder")
	}
	return math.Sqrt(best) / f * sensitivitySlack, nil
}

// maxHorizon bounds DPConfig.Horizon: NoiseSqrt keeps every draw of a
// horizon (Horizon x parameters floats).
const maxHorizon = 1 << 20

// horizonRange reports a Horizon out of range for a kind with one.
func horizonRange(c DPConfig) []error {
	if c.Horizon < 1 || c.Horizon > maxHorizon {
		return []error{NoiseFields.Errorf("{Horizon} %d with %v noise: must be in [1, %d]", c.Horizon, c.Noise, maxHorizon)}
	}
	return nil
}

// errNotOnline is the error of an online use of a kind the agent does not
// run.
func errNotOnline(n Noise) error {
	return fmt.Errorf("policy: %v noise is for in-process training only", n)
}

// windowPieces splits the window of M consecutive releases starting at
// offset s < N of a horizon into pieces within one horizon block: [s, s +
// l1), then full whole blocks, then the head [0, l2) of the next block (l2
// may be 0).
func windowPieces(N, M, s int) (l1, full, l2 int) {
	l1 = min(N-s, M)
	rest := M - l1
	return l1, rest / N, rest % N
}

// windowNormsSq returns ||B 1_W||^2 for the windows of M releases starting
// at offsets 0 .. starts-1 of a horizon, given pieceSq(a, l) = ||C 1_[a,
// a+l)||^2 for one block C (columns from different blocks are orthogonal).
func windowNormsSq(N, M, starts int, pieceSq func(a, l int) float64) []float64 {
	out := make([]float64, starts)
	for s := range out {
		l1, full, l2 := windowPieces(N, M, s)
		v := pieceSq(s, l1)
		if full > 0 {
			v += float64(full) * pieceSq(0, N)
		}
		if l2 > 0 {
			v += pieceSq(0, l2)
		}
		out[s] = v
	}
	return out
}
