package policy

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"dprl/ledger/accountant/bandsens"
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
	M := min(m, releases)
	switch c.Noise {
	case NoiseIndependent:
		return math.Sqrt(float64(M)), nil
	case NoiseBandedSqrt:
		return bandedWindowSensitivity(c.Band, M)
	case NoiseTree, NoiseSqrt:
	default:
		return 0, fmt.Errorf("policy: window sensitivity: noise %v", c.Noise)
	}
	N := c.Horizon
	if N < 1 || N > maxHorizon {
		return 0, fmt.Errorf("policy: window sensitivity: horizon %d, want 1 to %d", N, maxHorizon)
	}
	if M == 1 {
		// NoiseFactor is the largest column norm by construction.
		return 1, nil
	}
	starts := min(releases-M, N-1) + 1
	var normSq []float64
	if c.Noise == NoiseTree {
		normSq = windowNormsSq(N, M, starts, func(a, l int) float64 { return float64(treePieceSq(N, a, l)) })
	} else {
		normSq = sqrtWindowNormsSq(N, M, starts)
	}
	best := 0.0
	for _, v := range normSq {
		best = max(best, v)
	}
	f := c.NoiseFactor()
	if !(best > 0) || !(f > 0) {
		return 0, errors.New("policy: window sensitivity: degenerate encoder")
	}
	return math.Sqrt(best) / f * sensitivitySlack, nil
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

// treePieceSq returns ||C 1_[a, a+l)||^2 for the tree block of horizon N:
// the sum over released dyadic nodes of (leaves of the node in [a, a+l))^2.
func treePieceSq(N, a, l int) int64 {
	var ss int64
	for h := range treeLevels(N) {
		size := 1 << h
		for k := a >> h; k <= (a+l-1)>>h; k++ {
			lo, hi := k*size, (k+1)*size
			if hi > N {
				break // not released in this horizon (nor any node to its right)
			}
			o := int64(min(hi, a+l) - max(lo, a))
			ss += o * o
		}
	}
	return ss
}

// sqrtWindowNormsSq is windowNormsSq for the square-root factorization. The
// sum of columns [a, a+l) of C has entry P(d) - P(d-l) in row a + d, d = 0
// .. N-1-a, where P(d) = c_0 + ... + c_d (P(d) = 0 for d < 0), so its norm
// squared is G_l(N - a) with G_l(n) = sum_{d<n} (P(d) - P(d-l))^2: one
// prefix-sum array per piece length, O(N) each.
func sqrtWindowNormsSq(N, M, starts int) []float64 {
	P := sqrtFactorCoefficients(N)
	for d := 1; d < N; d++ {
		P[d] += P[d-1]
	}
	type use struct{ s, n, mult int }
	byLen := map[int][]use{}
	for s := range starts {
		l1, full, l2 := windowPieces(N, M, s)
		byLen[l1] = append(byLen[l1], use{s, N - s, 1})
		if full > 0 {
			byLen[N] = append(byLen[N], use{s, N, full})
		}
		if l2 > 0 {
			byLen[l2] = append(byLen[l2], use{s, N, 1})
		}
	}
	out := make([]float64, starts)
	G := make([]float64, N+1)
	// Lengths in increasing order: the same sums in the same order every
	// time, so the printed epsilon is reproducible to the last digit.
	for _, l := range slices.Sorted(maps.Keys(byLen)) {
		uses := byLen[l]
		for d := range N {
			v := P[d]
			if d >= l {
				v -= P[d-l]
			}
			G[d+1] = G[d] + v*v
		}
		for _, u := range uses {
			out[u.s] += float64(u.mult) * G[u.n]
		}
	}
	return out
}

// bandedWindowSensitivity is WindowSensitivity for the banded square root
// of b bands in an unbounded stream: the sum of M consecutive columns of C
// has entry P(d) - P(d-M) in its d-th row, d = 0 .. M+b-2, where P(d) =
// c_0 + ... + c_min(d, b-1) (P(d) = 0 for d < 0); rho = its norm over the
// column norm f, inflated by sensitivitySlack.
func bandedWindowSensitivity(b, M int) (float64, error) {
	if b < 1 || b > bandsens.MaxBand {
		return 0, fmt.Errorf("policy: window sensitivity: band %d, want 1 to %d", b, bandsens.MaxBand)
	}
	if M == 1 {
		return 1, nil
	}
	c := bandsens.SqrtCoefficients(b)
	pre := make([]float64, b)
	for j, v := range c {
		pre[j] = v
		if j > 0 {
			pre[j] += pre[j-1]
		}
	}
	P := func(d int) float64 {
		if d < 0 {
			return 0
		}
		return pre[min(d, b-1)]
	}
	ss := 0.0
	for d := range M + b - 1 {
		v := P(d) - P(d-M)
		ss += v * v
	}
	return math.Sqrt(ss) / bandsens.ColumnNorm(c) * sensitivitySlack, nil
}
