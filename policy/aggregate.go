package policy

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
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
// With DPConfig.TreeLeaves = N > 0 the noise is tree-aggregated instead (the
// binary mechanism, Chan, Shi and Song 2011, Sec. 3.4; DP-FTRL, Kairouz et
// al. 2021, Alg. 1 and Thm. 2.1). Let x_t = (1/K) sum_u g_u be the t-th
// averaged clipped update since the tree's start. Every dyadic block of
// leaves [k 2^h + 1, (k+1) 2^h] is a node; when its last leaf arrives the
// node's sum is released once, with noise N(0, sigma^2 I), sigma = z sqrt(L)
// S / K. The noisy prefix sum P~_t adds the nodes of t's binary expansion, and
// Release returns g~_t = P~_t - P~_{t-1}, so theta_0 + eta sum_{s<=t} g~_s =
// theta_0 + eta P~_t: the parameters carry the noise of at most L nodes
// whatever t is, instead of t independent draws. After N releases the tree
// restarts (P~ from 0; theta keeps what it has). Privacy: a leaf t <= N lies
// in at most L = bits.Len(N) = floor(log2 N) + 1 released nodes (a level-h
// node exists only if 2^h <= N), each a Gaussian mechanism of sensitivity S/K
// (one user changes x_t by at most S/K; the fixed denominator K holds for an
// early flush too) and noise sigma, i.e. mu_h = (S/K)/sigma-GDP. Under
// adaptive composition (Dong, Roth and Su 2022, Cor. 3.3) the user's release
// is sqrt(L) (S/K)/sigma = 1/z-GDP: exactly the Gaussian mechanism with
// multiplier z that the accountant charges (the other users' leaves depend on
// the user only through earlier releases). Each user enters one leaf of one
// tree, so the per-session epsilon is that of z, as without the tree.
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
	// Tree aggregation (cfg.TreeLeaves > 0): exact[h] is the exact sum of
	// the open level-h node, noisy[h] the released value of the level-h node
	// in the current prefix (zero when bit h of t is clear); t counts the
	// releases of the current tree.
	exact, noisy [][]float64
	t            int
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
	a := &Aggregator{cfg: cfg, nPi: nPolicy, n: n, sum: make([]float64, n), tmp: make([]float64, n), rng: rng}
	if cfg.TreeLeaves > 0 {
		L := cfg.TreeLevels()
		a.exact, a.noisy = make([][]float64, L), make([][]float64, L)
		for h := range L {
			a.exact[h], a.noisy[h] = make([]float64, n), make([]float64, n)
		}
	}
	return a, nil
}

// Len returns the number of updates added since the last Release.
func (a *Aggregator) Len() int { return a.count }

// Full reports whether K updates are held.
func (a *Aggregator) Full() bool { return a.count == a.cfg.UsersPerUpdate }

// NoiseStd returns the per-coordinate standard deviation of the noise of one
// release, z S / K, or with tree aggregation of one tree node, z sqrt(L) S / K.
func (a *Aggregator) NoiseStd() float64 {
	return a.cfg.NoiseMultiplier * math.Sqrt(float64(a.cfg.TreeLevels())) * a.cfg.ClipNorm / float64(a.cfg.UsersPerUpdate)
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
	if a.exact != nil {
		a.releaseTree(gTilde, invK, std)
		return nil
	}
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
		g := x
		if std > 0 {
			g += std * a.rng.NormFloat64()
		}
		ntop[i] = g
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
	if a.t == a.cfg.TreeLeaves {
		for h := range a.exact {
			clear(a.exact[h])
			clear(a.noisy[h])
		}
		a.t = 0
	}
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
