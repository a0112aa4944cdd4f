package policy

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
)

// LocalFunc computes local update i of a round (Algorithm 3) into gu (len
// NumParams, zeroed beforehand) on worker w, which owns Round.Learner(w) and
// nothing else the other workers use. A non-nil error marks the local update
// failed; Round never returns it (see Round for what a failed update
// contributes). A caller that must stop on an error which is not a function
// of the user's data (a bug, a broken environment) records it itself.
type LocalFunc func(w, i int, gu []float64) error

// Round is one round of DPPG's server (Algorithm 2): up to K local updates
// computed in parallel, one per worker Learner at a time; their block-wise
// clipped mean with the fixed denominator K plus noise (Aggregator); and,
// once the caller has published the result, every Learner's Adam moments
// reset from it (Learner.ResetMoments). Train and the online agent both run
// their rounds through it. A failed or non-finite local update contributes
// the zero vector and keeps its place (docs/privacy.md, section 1). Worker w
// computes slots w, w+W, w+2W, ... in that order, so seeded runs do not
// depend on scheduling. A Round is not safe for concurrent use.
type Round struct {
	agg      *Aggregator
	learners []*Learner
	k        int
	gus      [][]float64
	failed   []bool
	n        int // slots of the last Run
	gTilde   []float64
	released bool // gTilde holds a release not yet committed
}

// NewRound returns a Round aggregating with cfg over the joint vector of the
// learners (all of the same Spec and parameter count), drawing its noise
// from rng (non-nil in ModeDP; the production path passes a generator seeded
// from crypto/rand). The learners are the round's workers; the Round resets
// their moments on Commit and the caller must not use them concurrently
// with Run.
func NewRound(cfg DPConfig, learners []*Learner, rng *rand.Rand) (*Round, error) {
	if len(learners) == 0 {
		return nil, errors.New("policy: round: no learner")
	}
	n, nPi := learners[0].NumParams(), learners[0].NumPolicyParams()
	for i, l := range learners[1:] {
		if l.NumParams() != n || l.NumPolicyParams() != nPi {
			return nil, fmt.Errorf("policy: round: learner %d has %d parameters (%d policy), learner 0 %d (%d)", i+1, l.NumParams(), l.NumPolicyParams(), n, nPi)
		}
	}
	agg, err := NewAggregator(cfg, nPi, n-nPi, rng)
	if err != nil {
		return nil, err
	}
	return &Round{agg: agg, learners: learners, k: cfg.UsersPerUpdate, gTilde: make([]float64, n)}, nil
}

// Workers returns the number of workers (learners).
func (r *Round) Workers() int { return len(r.learners) }

// Learner returns worker w's Learner.
func (r *Round) Learner(w int) *Learner { return r.learners[w] }

// CarriedNoise returns the Aggregator's CarriedNoise (nil for a kind whose
// state the ledger does not carry).
func (r *Round) CarriedNoise() CarriedNoise { return r.agg.CarriedNoise() }

// NoiseStd returns the Aggregator's noise standard deviation per coordinate.
func (r *Round) NoiseStd() float64 { return r.agg.NoiseStd() }

// Run computes local updates 0..n-1 with local (1 <= n <= K; fewer than K
// is an early flush, still divided by K), aggregates them, the failed ones
// as the zero vector, and returns the noised update
//
//	g~ = (1/K) sum_{i<n} Clip(g_i) + noise
//
// (Aggregator.Release). The slice is the Round's and holds g~ until the next
// Run. The caller publishes g~ (theta <- theta + eta g~) and then calls
// Commit; a g~ that was not published is not committed, and the learners
// keep the previous moments. Run buffers grow to the largest n seen.
func (r *Round) Run(n int, local LocalFunc) ([]float64, error) {
	if n < 1 || n > r.k {
		return nil, fmt.Errorf("policy: round: %d local updates, want 1..K = %d", n, r.k)
	}
	if r.agg.Len() != 0 {
		return nil, errors.New("policy: round: aggregator holds updates of an unfinished round")
	}
	for len(r.gus) < n {
		r.gus = append(r.gus, make([]float64, len(r.gTilde)))
		r.failed = append(r.failed, false)
	}
	r.n, r.released = n, false
	W := min(len(r.learners), n)
	var wg sync.WaitGroup
	for w := range W {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += W {
				gu := r.gus[i]
				clear(gu)
				r.failed[i] = local(w, i, gu) != nil || !allFinite(gu)
			}
		}()
	}
	wg.Wait()
	for i := range n {
		if r.failed[i] {
			clear(r.gus[i]) // the zero vector, in its place among the K
		}
		if err := r.agg.Add(r.gus[i]); err != nil {
			return nil, fmt.Errorf("policy: round: %w", err)
		}
	}
	if err := r.agg.Release(r.gTilde); err != nil {
		return nil, fmt.Errorf("policy: round: %w", err)
	}
	r.released = true
	return r.gTilde, nil
}

// Commit resets every learner's Adam moments from the last Run's g~
// (Learner.ResetMoments) and commits the release to the noise state
// (Aggregator.Commit): call it once g~ is published. It does nothing if
// that g~ was already committed or no Run succeeded.
func (r *Round) Commit() {
	if !r.released {
		return
	}
	r.agg.Commit()
	for _, l := range r.learners {
		l.ResetMoments(r.gTilde)
	}
	r.released = false
}

// Local returns local update i of the last Run as it entered the
// aggregate before clipping (the zero vector if it failed), and whether it
// failed. It is the users' raw data: simulation diagnostics only, never to
// be released.
func (r *Round) Local(i int) (gu []float64, failed bool) {
	if i >= r.n {
		panic(fmt.Sprintf("policy: round: local update %d of %d", i, r.n))
	}
	return r.gus[i], r.failed[i]
}
