package policy

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
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
	std      float64      // NoiseStd, computed once
	noise    ReleaseNoise // the kind's noise state (Mechanism.NewNoise)
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
	a := &Aggregator{cfg: cfg, nPi: nPolicy, n: n, sum: make([]float64, n), tmp: make([]float64, n)}
	a.std = cfg.NoiseMultiplier * cfg.NoiseFactor() * cfg.ClipNorm / float64(cfg.UsersPerUpdate)
	m, err := cfg.Noise.Mechanism()
	if err != nil {
		return nil, err
	}
	if a.noise, err = m.NewNoise(cfg, n, a.std, rng); err != nil {
		return nil, fmt.Errorf("policy: aggregator: %w", err)
	}
	return a, nil
}

// Len returns the number of updates added since the last Release.
func (a *Aggregator) Len() int { return a.count }

// Full reports whether K updates are held.
func (a *Aggregator) Full() bool { return a.count == a.cfg.UsersPerUpdate }

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
	invK := 1 / float64(a.cfg.UsersPerUpdate)
	for i, v := range a.sum {
		a.tmp[i] = v * invK
	}
	a.noise.Release(a.tmp, gTilde)
	clear(a.sum)
	a.count = 0
	return nil
}

// Commit commits the last release to the noise state (ReleaseNoise.Commit:
// call it once the release is published; bandmf discards a release never
// committed at the next Release).
func (a *Aggregator) Commit() { a.noise.Commit() }

// CarriedNoise returns the noise state when the ledger carries it across
// restarts (bandmf's stream), nil otherwise: its pending release, to
// persist with the release, and its state, to restore after a restart.
func (a *Aggregator) CarriedNoise() CarriedNoise {
	c, _ := a.noise.(CarriedNoise)
	return c
}

// ApplyUpdate performs theta <- theta + eta * gTilde in place.
func ApplyUpdate(theta, gTilde []float64, eta float64) {
	if len(theta) != len(gTilde) {
		panic("policy: apply update length mismatch")
	}
	for i, g := range gTilde {
		theta[i] += eta * g
	}
}

// ClipUpdate bounds a local update g (policy block first, nPolicy values)
// as Aggregator.Add does before summing it: a g with a NaN or ±Inf
// coordinate becomes the zero vector, else its policy block is clipped to
// S_pi and its value block to S_v (not in ModePPO). A cluster's serving
// replica clips what it sends, so that no unbounded per-session vector
// crosses the network; the learner's Add clips again. It allocates
// nothing.
func (c DPConfig) ClipUpdate(g []float64, nPolicy int) {
	if c.Mode == ModePPO {
		return
	}
	for _, v := range g {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			clear(g)
			return
		}
	}
	sPi, sV := c.clipNorms()
	clipL2(g[:nPolicy], sPi)
	clipL2(g[nPolicy:], sV)
}
