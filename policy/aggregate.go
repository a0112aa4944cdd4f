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
// vector [policy; value]: it sums up to K local updates, each re-clipped
// block-wise to S_pi and S_v on Add (so the sensitivity bound S holds whatever
// the caller passed), and Release returns
//
//	g~ = (1/K) sum_u g_u + N(0, (z S / K)^2 I)
//
// with the fixed denominator K also when fewer than K updates were added (an
// early flush). In ModePPO nothing is clipped and no noise is added.
//
// Every noise draw comes from the *rand.Rand given to NewAggregator; the
// production path passes a generator seeded from crypto/rand. An Aggregator is
// not safe for concurrent use.
type Aggregator struct {
	cfg      DPConfig
	nPi, n   int
	sum, tmp []float64
	count    int
	rng      *rand.Rand
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
	if cfg.Mode == ModeDP && rng == nil {
		errs = append(errs, errors.New("policy: aggregator: nil noise source in mode dp"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	n := nPolicy + nValue
	return &Aggregator{cfg: cfg, nPi: nPolicy, n: n, sum: make([]float64, n), tmp: make([]float64, n), rng: rng}, nil
}

// Len returns the number of updates added since the last Release.
func (a *Aggregator) Len() int { return a.count }

// Full reports whether K updates are held.
func (a *Aggregator) Full() bool { return a.count == a.cfg.UsersPerUpdate }

// NoiseStd returns the per-coordinate noise standard deviation z S / K.
func (a *Aggregator) NoiseStd() float64 {
	return a.cfg.NoiseMultiplier * a.cfg.ClipNorm / float64(a.cfg.UsersPerUpdate)
}

// Add accumulates one local update g_u (len nPolicy+nValue; not retained),
// clipping its blocks to S_pi and S_v first. It returns ErrBatchFull if K
// updates are already held, and ErrNonFinite (adding nothing) if g_u holds a
// NaN or Inf; the caller may then Add a zero vector for that user, which is
// within the sensitivity bound. It allocates nothing.
func (a *Aggregator) Add(gu []float64) error {
	if len(gu) != a.n {
		panic(fmt.Sprintf("policy: aggregator update length %d, want %d", len(gu), a.n))
	}
	if a.Full() {
		return ErrBatchFull
	}
	ss := 0.0
	for _, v := range gu {
		ss += v * v
	}
	if math.IsNaN(ss) || math.IsInf(ss, 0) {
		return fmt.Errorf("%w: norm %v", ErrNonFinite, math.Sqrt(ss))
	}
	copy(a.tmp, gu)
	if a.cfg.Mode != ModePPO {
		sPi, sV := a.cfg.clipNorms()
		Clip(a.tmp[:a.nPi], sPi)
		Clip(a.tmp[a.nPi:], sV)
	}
	for i, v := range a.tmp {
		a.sum[i] += v
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
	std := a.NoiseStd()
	for i, v := range a.sum {
		g := v * invK
		if std > 0 {
			g += std * a.rng.NormFloat64()
		}
		gTilde[i] = g
	}
	clear(a.sum)
	a.count = 0
	return nil
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
