package policy

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/floats"

	"dprl/noise"
)

// NoiseSqrt is the square-root factorization of the prefix-sum matrix
// (Fichtenberger, Henzinger and Upadhyay 2023, "Constant Matters:
// Fine-grained Error Bound on Differentially Private Continual Observation";
// Henzinger, Upadhyay and Upadhyay 2023): the noise of the parameters after
// t releases is sum_k c_k w_{t-k} with c_k = binom(2k, k) / 4^k, the
// coefficients of (1 - x)^(-1/2), and fresh draws w of std
// z sqrt(sum_{k<N} c_k^2) S / K, N the horizon.
const NoiseSqrt Noise = 2

func init() { register(NoiseSqrt, sqrtNoise{}) }

type sqrtNoise struct{}

func (sqrtNoise) Name() string  { return "sqrt" }
func (sqrtNoise) Online() bool  { return false }
func (sqrtNoise) Horizon() bool { return true }
func (sqrtNoise) Fresh() bool   { return false }

func (sqrtNoise) CheckParams(c DPConfig) []error { return append(horizonRange(c), noBand(c)...) }

// Factor is sqrt(sum_{k<N} c_k^2), the largest column norm of the factor C.
func (sqrtNoise) Factor(c DPConfig) float64 {
	ss := 0.0
	for _, ck := range sqrtFactorCoefficients(c.Horizon) {
		ss += ck * ck
	}
	return math.Sqrt(ss)
}

// GridRows is the horizon: one update enters every row of its horizon.
func (sqrtNoise) GridRows(c DPConfig) int { return c.Horizon }

// RoundingExtra: a row sums at most N scaled means, (N+1) C1 per row with
// C1 = sum_k c_k, over the N rows one mean enters, against the column norm
// f: sqrt(N) (N+1) C1 / f.
func (sqrtNoise) RoundingExtra(c DPConfig) float64 {
	c1, ss := 0.0, 0.0
	for _, ck := range sqrtFactorCoefficients(c.Horizon) {
		c1 += ck
		ss += ck * ck
	}
	N := float64(c.Horizon)
	return math.Ceil(math.Sqrt(N)) * (N + 1) * c1 * (1 + 1e-9) / math.Sqrt(ss)
}

func (sqrtNoise) Separation(DPConfig) int { return 0 }

func (sqrtNoise) WindowSensitivity(c DPConfig, M, releases int) (float64, error) {
	return horizonWindowSensitivity(c, M, releases, sqrtWindowNormsSq)
}

func (sqrtNoise) UserSensitivity(DPConfig, int) (float64, error) { return 0, errNotOnline(NoiseSqrt) }

// maxSqrtFloats bounds the values the square-root noise keeps (8 bytes
// each: 1 GiB).
const maxSqrtFloats = 1 << 27

func (sqrtNoise) NewNoise(c DPConfig, n int, std float64, rng *rand.Rand) (ReleaseNoise, error) {
	if c.Horizon > maxSqrtFloats/max(2*n, 1) {
		return nil, fmt.Errorf("sqrt noise keeps 2 x horizon x parameters = 2 x %d x %d values, at most %d", c.Horizon, n, maxSqrtFloats)
	}
	s := &sqrtState{horizon: c.Horizon, std: std, xs: make([][]float64, c.Horizon), ys: make([][]float64, c.Horizon)}
	for i := range s.xs {
		s.xs[i], s.ys[i] = make([]float64, n), make([]float64, n)
	}
	s.c = sqrtFactorCoefficients(c.Horizon)
	s.coef = make([]float64, c.Horizon)
	for k, ck := range s.c {
		s.coef[k] = ck
		if k > 0 {
			s.coef[k] -= s.c[k-1]
		}
	}
	if rng != nil {
		s.gauss = noise.NewGaussian(rng)
	}
	return s, nil
}

func (sqrtNoise) Entry(DPConfig, int, uint64) (EntryNoise, error) {
	return EntryNoise{}, errNotOnline(NoiseSqrt)
}

func (sqrtNoise) Describe(DPConfig, int) string { return "" }

// sqrtFactorCoefficients returns c_0, ..., c_{n-1} of the square-root
// factorization, c_k = binom(2k, k) / 4^k = c_{k-1} (2k - 1) / (2k).
func sqrtFactorCoefficients(n int) []float64 {
	c := make([]float64, max(n, 0))
	for k := range c {
		c[k] = 1
		if k > 0 {
			c[k] = c[k-1] * float64(2*k-1) / float64(2*k)
		}
	}
	return c
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

// sqrtState is the square-root noise over one horizon: xs[i] is x_{i+1} of
// the current horizon and ys[i] its release y_{i+1} = (C x)_{i+1} +
// w_{i+1}; c[k] is c_k and coef[k] is c_k - c_{k-1}, the coefficients of
// C^{-1}.
type sqrtState struct {
	horizon int
	std     float64
	gauss   *noise.Gaussian
	t       int
	xs, ys  [][]float64
	c, coef []float64
}

// Release releases y_t = (C x)_t + w_t (one call of the exact sampler, so
// y_t is exactly a post-processed Gaussian mechanism) and returns g~_t =
// (C^{-1} y)_t = sum_{k<t} (c_k - c_{k-1}) y_{t-k}, a function of the
// releases only. (The algebraically equal x_t + sum_k (c_k - c_{k-1})
// w_{t-k} would add floating-point noise to the raw x_t, which the
// sampler's guarantee does not cover.) Without noise (std = 0) it returns
// x_t.
func (s *sqrtState) Release(x, out []float64) {
	t := s.t
	xt, y := s.xs[t], s.ys[t]
	copy(xt, x)
	s.t++
	if s.std == 0 {
		copy(out, xt)
	} else {
		clear(y)
		for k := range t + 1 {
			floats.AddScaled(y, s.c[k], s.xs[t-k])
		}
		s.gauss.Add(y, s.std)
		clear(out)
		for k := range t + 1 {
			floats.AddScaled(out, s.coef[k], s.ys[t-k])
		}
	}
	if s.t == s.horizon {
		s.t = 0
	}
}

func (*sqrtState) Commit() {}
