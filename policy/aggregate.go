package policy

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"

	"dprl/ledger/accountant/bandsens"
	"dprl/noise"
	"dprl/policy/bandmf"
)

// ErrBatchFull is returned by Aggregator.Add when K updates are already held.
var ErrBatchFull = errors.New("policy: aggregator already holds K updates")

// ErrEmptyBatch is returned by Aggregator.Release when no update was added.
var ErrEmptyBatch = errors.New("policy: aggregator holds no update")

// Aggregator implements DPPG's server step (Algorithm 2) over the joint
// vector [policy; value]: it sums up to K local updates, re-clipped
// block-wise to S_pi and S_v on Add (non-finite ones count as zero; in
// ModePPO nothing is clipped or noised), and Release returns
//
//	g~ = (1/K) sum_u g_u + N(0, (z S / K)^2 I)
//
// with the fixed denominator K, or with correlated noise (DPConfig.Noise) the
// difference of private prefix-sum estimates at noise z f S / K; each is
// exactly the Gaussian mechanism of multiplier z (docs/privacy.md, section
// 3). Noise comes from package noise's exact sampler fed by the given
// *rand.Rand. An Aggregator is not safe for concurrent use.
type Aggregator struct {
	cfg      DPConfig
	nPi, n   int
	sum, tmp []float64
	count    int
	rng      *rand.Rand
	gauss    *noise.Gaussian // exact sampler drawing from rng
	std      float64         // NoiseStd, computed once
	// t counts the releases of the current horizon (correlated noise).
	t int
	// NoiseTree: exact[h] is the exact sum of the open level-h node,
	// noisy[h] the released value of the level-h node in the current prefix
	// (zero when bit h of t is clear).
	exact, noisy [][]float64
	// NoiseSqrt: xs[i] is x_{i+1} of the current horizon and ys[i] its
	// release y_{i+1} = (C x)_{i+1} + w_{i+1}; c[k] is c_k and coef[k] is
	// c_k - c_{k-1}, the coefficients of C^{-1}.
	xs, ys  [][]float64
	c, coef []float64
	// NoiseBandedSqrt: the stream of the banded factor (its state is the
	// last Band-1 releases; a release is pending until Commit).
	band *bandmf.Stream
}

// NewAggregator returns an aggregator for a joint vector of nPolicy + nValue
// parameters. rng must be non-nil in ModeDP.
func NewAggregator(cfg DPConfig, nPolicy, nValue int, rng *rand.Rand) (*Aggregator, error) {
	var errs []error
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	if nPolicy < 1 || nValue < 0 {
		errs = append(errs, fmt.Errorf("policy: aggregator: %d policy and %d value parameters", nPolicy, nValue))
	}
	if err := cfg.CheckGrid(nPolicy + nValue); err != nil {
		errs = append(errs, err)
	}
	if cfg.Mode == ModeDP && rng == nil {
		errs = append(errs, errors.New("policy: aggregator: nil noise source in mode dp"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	n := nPolicy + nValue
	a := &Aggregator{cfg: cfg, nPi: nPolicy, n: n, sum: make([]float64, n), tmp: make([]float64, n), rng: rng}
	if rng != nil {
		a.gauss = noise.NewGaussian(rng)
	}
	a.std = cfg.NoiseMultiplier * cfg.NoiseFactor() * cfg.ClipNorm / float64(cfg.UsersPerUpdate)
	switch cfg.Noise {
	case NoiseTree:
		L := treeLevels(cfg.Horizon)
		a.exact, a.noisy = make([][]float64, L), make([][]float64, L)
		for h := range L {
			a.exact[h], a.noisy[h] = make([]float64, n), make([]float64, n)
		}
	case NoiseSqrt:
		if cfg.Horizon > maxSqrtFloats/max(2*n, 1) {
			return nil, fmt.Errorf("policy: aggregator: sqrt noise keeps 2 x horizon x parameters = 2 x %d x %d values, at most %d", cfg.Horizon, n, maxSqrtFloats)
		}
		a.xs, a.ys = make([][]float64, cfg.Horizon), make([][]float64, cfg.Horizon)
		for i := range a.xs {
			a.xs[i], a.ys[i] = make([]float64, n), make([]float64, n)
		}
		c := sqrtFactorCoefficients(cfg.Horizon)
		a.c = c
		a.coef = make([]float64, cfg.Horizon)
		for k, ck := range c {
			a.coef[k] = ck
			if k > 0 {
				a.coef[k] -= c[k-1]
			}
		}
	case NoiseBandedSqrt:
		var noiseRNG *rand.Rand
		if a.std > 0 {
			noiseRNG = rng
		}
		st, err := bandmf.NewStream(bandsens.SqrtCoefficients(cfg.Band), n, a.std, noiseRNG)
		if err != nil {
			return nil, fmt.Errorf("policy: aggregator: %w", err)
		}
		a.band = st
	}
	return a, nil
}

// Len returns the number of updates added since the last Release.
func (a *Aggregator) Len() int { return a.count }

// Full reports whether K updates are held.
func (a *Aggregator) Full() bool { return a.count == a.cfg.UsersPerUpdate }

// maxSqrtFloats bounds the values NoiseSqrt keeps (8 bytes each: 1 GiB).
const maxSqrtFloats = 1 << 27

// NoiseStd returns the per-coordinate standard deviation of one fresh noise
// draw, z f S / K with f = DPConfig.NoiseFactor() (1 for independent noise:
// the noise of one release).
func (a *Aggregator) NoiseStd() float64 { return a.std }

// Add accumulates one local update g_u (len nPolicy+nValue; not retained),
// clipping its blocks to S_pi and S_v first (Clip: the exact norm of each
// clipped block is at most its share, whatever the rounding). A g_u with a
// NaN or ±Inf coordinate, in any block, is counted as the zero vector: it
// takes its place among the K (the denominator and the participant count do
// not depend on it), which is within the sensitivity bound, and Add returns
// nil, so that whether a user's update was finite (a function of the user's
// data) changes nothing the caller releases. In ModePPO (not private, no
// clipping) a non-finite g_u is refused with ErrNonFinite instead, adding
// nothing. Add returns ErrBatchFull if K updates are already held. It
// allocates nothing.
func (a *Aggregator) Add(gu []float64) error {
	if len(gu) != a.n {
		panic(fmt.Sprintf("policy: aggregator update length %d, want %d", len(gu), a.n))
	}
	if a.Full() {
		return ErrBatchFull
	}
	finite := true
	for _, v := range gu {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			finite = false
			break
		}
	}
	if a.cfg.Mode == ModePPO {
		if !finite {
			return fmt.Errorf("%w: local update has a NaN or Inf coordinate", ErrNonFinite)
		}
		for i, v := range gu {
			a.sum[i] += v
		}
		a.count++
		return nil
	}
	if finite {
		copy(a.tmp, gu)
		sPi, sV := a.cfg.clipNorms()
		clipL2(a.tmp[:a.nPi], sPi)
		clipL2(a.tmp[a.nPi:], sV)
		for i, v := range a.tmp {
			a.sum[i] += v
		}
	}
	a.count++
	return nil
}

// Release writes g~ into gTilde and empties the aggregator. It returns
// ErrEmptyBatch (and writes nothing) if no update was added. It allocates
// nothing.
func (a *Aggregator) Release(gTilde []float64) error {
	if len(gTilde) != a.n {
		panic(fmt.Sprintf("policy: aggregator output length %d, want %d", len(gTilde), a.n))
	}
	if a.count == 0 {
		return ErrEmptyBatch
	}
	invK, std := 1/float64(a.cfg.UsersPerUpdate), a.std
	switch a.cfg.Noise {
	case NoiseTree:
		a.releaseTree(gTilde, invK, std)
		return nil
	case NoiseSqrt:
		a.releaseSqrt(gTilde, invK, std)
		return nil
	case NoiseBandedSqrt:
		for i, v := range a.sum {
			a.tmp[i] = v * invK
		}
		a.band.Release(a.tmp, gTilde) // exact sampler on (C x)_t; see bandmf.Stream
		clear(a.sum)
		a.count = 0
		return nil
	}
	for i, v := range a.sum {
		gTilde[i] = v * invK
	}
	if std > 0 {
		a.gauss.Add(gTilde, std)
	}
	clear(a.sum)
	a.count = 0
	return nil
}

// releaseTree is Release with tree aggregation: leaf t = a.t+1 closes the
// level-h node, h = trailing zeros of t, whose exact sum is the leaf plus the
// open nodes below h; that node is noised once, and g~ = noisy[h] - sum_{j<h}
// noisy[j] (the levels below h leave the prefix, level h joins it).
func (a *Aggregator) releaseTree(gTilde []float64, invK, std float64) {
	a.t++
	h := bits.TrailingZeros(uint(a.t))
	top, ntop := a.exact[h], a.noisy[h]
	for i, v := range a.sum {
		x := v * invK
		for j := range h {
			x += a.exact[j][i]
		}
		top[i] = x
	}
	copy(ntop, top)
	if std > 0 {
		a.gauss.Add(ntop, std) // the node's release
	}
	for i := range gTilde {
		g := ntop[i]
		for j := range h {
			g -= a.noisy[j][i]
		}
		gTilde[i] = g
	}
	for j := range h {
		clear(a.exact[j])
		clear(a.noisy[j])
	}
	clear(a.sum)
	a.count = 0
	if a.t == a.cfg.Horizon {
		for h := range a.exact {
			clear(a.exact[h])
			clear(a.noisy[h])
		}
		a.t = 0
	}
}

// releaseSqrt is Release with the square-root factorization: it releases
// y_t = (C x)_t + w_t (one call of the exact sampler, so y_t is exactly a
// post-processed Gaussian mechanism) and returns g~_t = (C^{-1} y)_t =
// sum_{k<t} (c_k - c_{k-1}) y_{t-k}, a function of the releases only. (The
// algebraically equal x_t + sum_k (c_k - c_{k-1}) w_{t-k} would add
// floating-point noise to the raw x_t, which the sampler's guarantee does
// not cover.) Without noise (std = 0) it returns x_t.
func (a *Aggregator) releaseSqrt(gTilde []float64, invK, std float64) {
	t := a.t
	x, y := a.xs[t], a.ys[t]
	for i, v := range a.sum {
		x[i] = v * invK
	}
	a.t++
	clear(a.sum)
	a.count = 0
	if std == 0 {
		copy(gTilde, x)
	} else {
		clear(y)
		for k := range t + 1 {
			floats.AddScaled(y, a.c[k], a.xs[t-k])
		}
		a.gauss.Add(y, std)
		clear(gTilde)
		for k := range t + 1 {
			floats.AddScaled(gTilde, a.coef[k], a.ys[t-k])
		}
	}
	if a.t == a.cfg.Horizon {
		a.t = 0
	}
}

// Commit commits the last release to the noise state of NoiseBandedSqrt
// (bandmf.Stream.Commit: call it once the release is published; a release
// never committed is discarded by the next Release). Other noises keep no
// pending release: it does nothing.
func (a *Aggregator) Commit() {
	if a.band != nil {
		a.band.Commit()
	}
}

// BandedStream returns the stream of NoiseBandedSqrt (nil for other
// noises), for callers that persist or restore its state.
func (a *Aggregator) BandedStream() *bandmf.Stream { return a.band }

// ApplyUpdate performs theta <- theta + eta * gTilde in place.
func ApplyUpdate(theta, gTilde []float64, eta float64) {
	if len(theta) != len(gTilde) {
		panic("policy: apply update length mismatch")
	}
	for i, g := range gTilde {
		theta[i] += eta * g
	}
}
