package agent

import (
	"errors"
	"fmt"
	"sync"

	"dprl/ledger"
	"dprl/ledger/accountant"
	"dprl/policy"
)

// updater owns the learning state; it runs on Run's goroutine only.
type updater struct {
	a        *Agent
	learners []*policy.Learner
	rngs     []*randWrap
	agg      *policy.Aggregator
	gus      [][]float64
	inBatch  map[ledger.UserKey]bool // users in the batch being formed (reused)
	gTilde   []float64
	pending  []finished
	batch    []finished
	nParams  int
}

func newUpdater(a *Agent, workers int) (*updater, error) {
	cfg := a.cfg
	u := &updater{a: a}
	for i := 0; i < workers; i++ {
		l, err := policy.NewLearner(cfg.Spec, cfg.Policy)
		if err != nil {
			return nil, err
		}
		u.learners = append(u.learners, l)
		u.rngs = append(u.rngs, &randWrap{a.newRand("local-update")})
	}
	u.nParams = u.learners[0].NumParams()
	nPi := u.learners[0].NumPolicyParams()
	agg, err := policy.NewAggregator(cfg.Policy.DP, nPi, u.nParams-nPi, a.newRand("noise"))
	if err != nil {
		return nil, err
	}
	u.agg = agg
	u.gTilde = make([]float64, u.nParams)
	return u, nil
}

// tryUpdate forms a batch from the pending sessions — in arrival order, at
// most one per user, dropping sessions too stale to use — and runs an update
// when it has K sessions, or (flush) when the oldest has waited FlushTimeout.
func (u *updater) tryUpdate(flush bool) error {
	a := u.a
	K := a.cfg.Policy.DP.UsersPerUpdate
	if !flush && len(u.pending) < K {
		// No batch of K can form yet: skip the scan (it is O(pending) and
		// runs on every finished session). Stale sessions are dropped at
		// the next scan.
		return nil
	}
	cur := a.current.Load()
	kept := u.pending[:0]
	u.batch = u.batch[:0]
	if u.inBatch == nil {
		u.inBatch = map[ledger.UserKey]bool{}
	}
	inBatch := u.inBatch
	clear(inBatch)
	for _, f := range u.pending {
		if cur.num-f.ver > a.cfg.MaxStaleness {
			a.discard("stale: served by an old policy version")
			continue
		}
		if len(u.batch) < K && (!f.hasUser || !inBatch[f.user]) {
			if f.hasUser {
				if ok, why := a.userEligible(f.user); !ok {
					a.discard(why)
					continue
				}
				inBatch[f.user] = true
			}
			u.batch = append(u.batch, f)
			continue
		}
		kept = append(kept, f) // a later session of a user in this batch waits
	}
	if len(u.batch) == 0 {
		u.pending = kept
		return nil
	}
	due := len(u.batch) == K || (flush && a.now().Sub(u.batch[0].at) >= a.cfg.FlushTimeout)
	if !due {
		// Put the batch back in front, in order.
		u.pending = append(append([]finished(nil), u.batch...), kept...)
		return nil
	}
	u.pending = append([]finished(nil), kept...)
	return u.update(cur)
}

// update runs the local updates on the worker pool, aggregates with the
// fixed denominator K, and releases: snapshot, ledger entry and user
// counters in one synced batch, then the serving swap, then the
// announcement. A failed release leaves the serving policy unchanged.
//
// Every session of the batch takes part: one whose local update fails (an
// empty trajectory, a non-finite value such as an overflowed return or an
// underflowed action probability) contributes the zero vector, which is
// within the sensitivity bound. Such a failure is a function of the
// session's content, so it is neither logged nor counted, and it changes
// neither the participant count, nor the users charged, nor anything else
// released.
func (u *updater) update(cur *version) error {
	a := u.a
	n := len(u.batch)
	// Local-update buffers grow to the largest batch seen (at most K) and
	// are reused: a large K costs memory only once that many sessions came.
	for len(u.gus) < n {
		u.gus = append(u.gus, make([]float64, u.nParams))
	}
	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	for w := range u.learners {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := range next {
				tr := &u.batch[i].tr
				if tr.Len() == 0 || u.learners[w].LocalUpdate(u.gus[i], cur.theta, tr, u.rngs[w].r) != nil {
					clear(u.gus[i])
				}
			}
		}(w)
	}
	wg.Wait()
	var users []ledger.UserKey
	for i := 0; i < n; i++ {
		// Mode dp: a non-finite update counts as zero; only a batch over K
		// (a bug) is refused.
		if err := u.agg.Add(u.gus[i]); err != nil {
			return fmt.Errorf("agent: aggregate: %w", err)
		}
		if u.batch[i].hasUser {
			users = append(users, u.batch[i].user)
		}
	}
	participants := n
	if err := u.agg.Release(u.gTilde); err != nil {
		return fmt.Errorf("agent: aggregate: %w", err)
	}
	theta := append([]float64(nil), cur.theta...)
	policy.ApplyUpdate(theta, u.gTilde, a.cfg.Policy.PPO.ServerLR)
	newVer := cur.num + 1
	snap, err := encodeSnapshot(a.cfg, newVer, theta)
	if err != nil {
		return err
	}
	dp := a.cfg.Policy.DP
	entry := ledger.Entry{
		Unit:      ledger.UnitSession,
		Mechanism: "dppg: mean of K clipped local PPO updates (policy and value) + Gaussian noise (z S / K)",
		Events:    []accountant.Event{accountant.Gaussian(dp.NoiseMultiplier)},
		Method:    accountant.MethodAnalytic, Epsilon: a.epsilon, Delta: a.cfg.Delta,
		Z: dp.NoiseMultiplier, S: dp.ClipNorm, K: dp.UsersPerUpdate, Participants: participants, Seeded: a.seeded,
	}
	if _, err := a.store.Release(ledger.Release{Version: newVer, Snapshot: snap, Entry: entry, Users: users}); err != nil {
		a.m.ReleaseErrors.Inc()
		a.log.Error().Err(err).Uint64("version", newVer).Msg("release failed; serving the previous version")
		if errors.Is(err, ledger.ErrClosed) {
			return err
		}
		return nil
	}
	for _, l := range u.learners {
		l.ResetMoments(u.gTilde)
	}
	a.current.Store(&version{num: newVer, theta: theta})
	a.updates.Add(1)
	a.m.Releases.Inc()
	a.m.SessionsUsed.Add(float64(participants))
	a.log.Debug().Uint64("version", newVer).Int("participants", participants).Float64("epsilon", a.epsilon).Msg("released")
	if a.opt.OnRelease != nil {
		a.opt.OnRelease(Release{Version: newVer, Epsilon: a.epsilon, Delta: a.cfg.Delta, Participants: participants})
	}
	return nil
}
