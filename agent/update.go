package agent

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"dprl/internal/rng"
	"dprl/ledger"
	"dprl/ledger/accountant"
	"dprl/ledger/record"
	"dprl/noise"
	"dprl/policy"
	"dprl/policy/lincb"

	"github.com/prometheus/client_golang/prometheus"
)

// updater owns the learning state; it runs on Run's goroutine only.
type updater struct {
	a     *Agent
	lin   *linUpdater // the linear contextual bandit's state (Config.LinCB); nil for DPPG
	rngs  []*randWrap // worker w's local-update generator
	round *policy.Round
	mech  policy.Mechanism // the noise kind: each release's ledger entry
	cur   *version         // the version the running round's local updates start from
	// batch is the batch being formed: sessions taken from the queues,
	// at most one per user. They cannot go stale while they wait here:
	// only this goroutine releases versions, and a release empties it.
	batch []finished
	held  []*learnerQueue // the user queues with a session in batch
	// streamStart is the version that started the carried noise stream
	// (bandmf's) the releases continue (0: the next release starts one).
	streamStart uint64
	// probe and probeAt space out the store probes while releases are
	// paused on a full disk (diskfull.go).
	probe   time.Duration
	probeAt time.Time
}

func newUpdater(a *Agent, workers int) (*updater, error) {
	cfg := a.cfg
	u := &updater{a: a}
	if cfg.LinCB != nil {
		c := cfg.LinCBConfig()
		u.lin = &linUpdater{cfg: c, noise: noise.NewGaussian(a.newRand("noise")),
			block: make([]float64, c.Actions*c.Stride()), u: make([]float64, c.Stride()), phi: make([]float64, c.Dim)}
		return u, nil
	}
	var learners []*policy.Learner
	for i := 0; i < workers; i++ {
		l, err := policy.NewLearner(cfg.Spec, cfg.Policy)
		if err != nil {
			return nil, err
		}
		learners = append(learners, l)
		if a.seeded {
			c := rand.NewChaCha8(rng.Key(a.seedBase, "agent local-update"))
			u.rngs = append(u.rngs, &randWrap{r: rand.New(c), c: c})
		} else {
			u.rngs = append(u.rngs, &randWrap{r: a.newRand("local-update")})
		}
	}
	round, err := policy.NewRound(cfg.Policy.DP, learners, a.newRand("noise"))
	if err != nil {
		return nil, err
	}
	u.round = round
	if u.mech, err = cfg.Policy.DP.Noise.Mechanism(); err != nil {
		return nil, err
	}
	if err := u.resumeStream(learners[0].NumParams()); err != nil {
		return nil, err
	}
	return u, nil
}

// resumeStream continues the carried noise stream (bandmf's) the ledger's
// noise records hold, if its parameters are this agent's (the correlation
// its releases would record, z, S, K, the parameter count): the stream's
// state (bandmf: the last Band-1 releases' means and released values,
// written with each release) is restored, so the next release is the
// stream's next row. Otherwise the next release
// starts a new stream, whose batch deletes the old records. A ledger whose
// stream ended (restored from a backup, which leaves the records out, or
// marked by dprl ledger end-stream) has no state: its next release starts
// a new stream, never a row of the old one a second time. Damaged records
// fail the start (ErrCorrupt), as dprl ledger verify fails.
func (u *updater) resumeStream(params int) error {
	st := u.round.CarriedNoise()
	if st == nil {
		return nil
	}
	a := u.a
	dp := a.cfg.Policy.DP
	ns, err := a.store.NoiseState()
	if err != nil {
		return fmt.Errorf("agent: the ledger's noise state: %w", err)
	}
	if ns.EndedAt != 0 {
		a.log.Info().Stringer("noise", dp.Noise).Uint64("ended_at", ns.EndedAt).Msg("noise stream: the ledger's stream ended (a backup or a restore); the next release starts a new stream")
		return nil
	}
	want, err := u.mech.Entry(dp, a.cfg.MaxUpdatesPerUser, max(ns.StreamStart, 1))
	if err != nil {
		return fmt.Errorf("agent: %v noise: %w", dp.Noise, err)
	}
	c := want.Correlation
	if ns.Version == 0 || ns.Version != a.current.Load().num || c == nil || ns.Band != c.Band || ns.MinSeparation != c.MinSeparation ||
		ns.MaxParticipations != c.MaxParticipations || ns.Params != params || ns.Z != dp.NoiseMultiplier || ns.S != dp.ClipNorm || ns.K != dp.UsersPerUpdate {
		if ns.Version != 0 {
			a.log.Warn().Uint64("stream_start", ns.StreamStart).Msg("noise stream: the ledger's stream has other parameters; the next release starts a new stream")
		}
		return nil
	}
	if err := st.Restore(ns.X, ns.G, ns.Version-ns.StreamStart+1); err != nil {
		return fmt.Errorf("agent: restore the noise stream: %w", err)
	}
	u.streamStart = ns.StreamStart
	a.log.Info().Uint64("stream_start", ns.StreamStart).Uint64("version", ns.Version).Msg("noise stream: continuing the ledger's stream")
	return nil
}

// local is the round's LocalFunc: session i's local update on worker w. An
// empty trajectory fails (it has no step to learn from).
func (u *updater) local(w, i int, gu []float64) error {
	if q := u.batch[i].q; q != nil {
		if len(q.gu) != len(gu) {
			return fmt.Errorf("agent: learner: an update of %d values, want %d", len(q.gu), len(gu))
		}
		copy(gu, q.gu) // clipped by its replica; Add clips again
		return nil
	}
	tr := &u.batch[i].tr
	if tr.Len() == 0 {
		return policy.ErrTrajectory
	}
	g := u.rngs[w]
	if g.c != nil {
		// Seeded: a stream per release and batch slot, so the release
		// does not depend on which worker computes which update.
		g.c.Seed(u.a.localUpdateKey(u.cur.num+1, i))
	}
	return u.round.Learner(w).LocalUpdate(gu, u.cur.theta, tr, g.r)
}

// queueKey names a learner queue: a user's (hasUser), or for anonymous
// sessions their connection's.
type queueKey struct {
	user    ledger.UserKey
	hasUser bool
	origin  string
}

// learnerQueue holds one user's (or one connection's anonymous) finished
// sessions, oldest first.
type learnerQueue struct {
	key     queueKey
	items   deque[finished]
	inRing  bool // waiting in fairQueue.ring for its turn
	inBatch bool // a user queue with a session in the batch being formed
}

// fairQueue holds the finished sessions waiting for an update, in one
// queue per user (anonymous sessions: per connection), and the ring of
// queues whose turn is coming. Pushing is O(1) and forming a batch is O(1)
// per session taken, whatever the number of sessions waiting: a batch takes
// the head of each queue in ring order, and a user queue whose session
// joined the batch leaves the ring until the batch is released.
//
// Bounds: a user queue holds at most perUser sessions, an anonymous queue
// perAnon (K: one connection's anonymous sessions may fill a batch, after
// every other queue had its turn), all of them together max; a session
// beyond a bound is set aside at End with the bound as its reason.
type fairQueue struct {
	mu                    sync.Mutex
	queues                map[queueKey]*learnerQueue
	ring                  deque[*learnerQueue]
	n                     int // sessions queued
	max, perUser, perAnon int
	// wake has room for one signal: a push sends one unless one is
	// pending; the updater then takes everything that is ready.
	wake  chan struct{}
	gauge prometheus.Gauge // sessions queued
}

func (q *fairQueue) init(max, perUser, perAnon int, gauge prometheus.Gauge) {
	q.gauge = gauge
	q.queues = make(map[queueKey]*learnerQueue)
	q.max, q.perUser, q.perAnon = max, perUser, perAnon
	q.wake = make(chan struct{}, 1)
}

// push queues a finished session, or says why not.
func (q *fairQueue) push(f finished) (bool, discardReason) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n >= q.max {
		return false, reasonLearnerQueueFull
	}
	lq := q.queues[f.key]
	limit, why := q.perUser, reasonUserQueueFull
	if !f.key.hasUser {
		limit, why = q.perAnon, reasonConnectionQueueFull
	}
	if lq != nil && lq.items.len() >= limit {
		return false, why
	}
	if lq == nil {
		lq = &learnerQueue{key: f.key}
		q.queues[f.key] = lq
	}
	lq.items.pushBack(f)
	q.n++
	q.gauge.Set(float64(q.n))
	if !lq.inRing && !lq.inBatch {
		q.ring.pushBack(lq)
		lq.inRing = true
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true, 0
}

// len is the number of sessions queued.
// popAll removes every queued session (a replica publishes them all) and
// appends them to dst.
func (q *fairQueue) popAll(dst []finished) []finished {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.ring.len() > 0 {
		lq := q.ring.popFront()
		lq.inRing = false
		for lq.items.len() > 0 {
			dst = append(dst, lq.items.popFront())
			q.n--
		}
		if !lq.inBatch {
			delete(q.queues, lq.key)
		}
	}
	q.gauge.Set(float64(q.n))
	return dst
}

// room is how many more sessions the queue takes.
func (q *fairQueue) room() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.max - q.n
}

func (q *fairQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// Queued is the number of finished sessions waiting in the learner queue
// for an update (operational, as the learner-queue gauge; 0 with a fixed
// policy).
func (a *Agent) Queued() int { return a.queue.len() }

// fill moves queued sessions into the batch being formed, round-robin over
// the queues in the ring, until the batch has K sessions or the ring is
// empty; sessions too stale to use, and sessions of users now at a cap, are
// set aside on the way. Each step removes one session from the queues.
func (u *updater) fill(cur *version) {
	a := u.a
	K := a.K()
	q := &a.queue
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(u.batch) < K && q.ring.len() > 0 {
		lq := q.ring.popFront()
		lq.inRing = false
		f := lq.items.popFront()
		q.n--
		ok := true
		if cur.num-f.ver > a.cfg.MaxStaleness {
			a.setAside(&f, reasonStale)
			ok = false
		} else if f.q != nil && u.sessionTaken(f.q.sess) {
			a.setAside(&f, reasonSessionUsed)
			ok = false
		} else if f.key.hasUser {
			if eligible, why := a.userEligible(f.key.user, cur.num+1); !eligible {
				a.setAside(&f, why)
				ok = false
			}
		}
		if ok {
			u.batch = append(u.batch, f)
			if f.key.hasUser {
				// One session per user and update: the queue waits for
				// the next batch.
				lq.inBatch = true
				u.held = append(u.held, lq)
				continue
			}
		}
		if lq.items.len() > 0 {
			q.ring.pushBack(lq)
			lq.inRing = true
		} else if !lq.inBatch {
			delete(q.queues, lq.key)
		}
	}
	q.gauge.Set(float64(q.n))
}

// step takes what is queued and releases the batch if it is full.
func (u *updater) step() error {
	if !u.resumeIfWritable() {
		return nil
	}
	cur := u.a.current.Load()
	u.fill(cur)
	if len(u.batch) < u.a.K() || !u.canRelease(cur.num+1) {
		return nil
	}
	return u.release(cur)
}

// flush releases the batch being formed, even short of K (the update is
// still divided by K), once its oldest session has waited FlushTimeout.
func (u *updater) flush() error {
	a := u.a
	if !u.resumeIfWritable() {
		return nil
	}
	cur := a.current.Load()
	u.fill(cur)
	if len(u.batch) == 0 {
		return nil
	}
	oldest := u.batch[0].at
	for _, f := range u.batch[1:] {
		if f.at.Before(oldest) {
			oldest = f.at
		}
	}
	if len(u.batch) < a.K() && a.now().Sub(oldest) < a.cfg.FlushTimeout || !u.canRelease(cur.num+1) {
		return nil
	}
	return u.release(cur)
}

// release runs the update on the batch, then empties the batch: its
// sessions' memory goes back to the budget and its users' queues take
// their turn again. It then signals wake, so that Run forms the next batch
// from what waits, between its other duties (shutdown, flush, sweep).
func (u *updater) release(cur *version) error {
	err := u.update(cur)
	a := u.a
	q := &a.queue
	q.mu.Lock()
	for _, lq := range u.held {
		lq.inBatch = false
		switch {
		case lq.items.len() == 0:
			delete(q.queues, lq.key)
		case !lq.inRing:
			q.ring.pushBack(lq)
			lq.inRing = true
		}
	}
	q.mu.Unlock()
	clear(u.held)
	u.held = u.held[:0]
	for i := range u.batch {
		a.uncharge(u.batch[i].bytes)
	}
	clear(u.batch) // drop the trajectories
	u.batch = u.batch[:0]
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return err
}

// deque is a FIFO ring buffer.
type deque[T any] struct {
	buf     []T
	head, n int
}

func (d *deque[T]) len() int { return d.n }

func (d *deque[T]) pushBack(x T) {
	if d.n == len(d.buf) {
		nb := make([]T, max(4, 2*len(d.buf)))
		for i := 0; i < d.n; i++ {
			nb[i] = d.buf[(d.head+i)%len(d.buf)]
		}
		d.buf, d.head = nb, 0
	}
	d.buf[(d.head+d.n)%len(d.buf)] = x
	d.n++
}

// popFront removes and returns the oldest element; the deque must not be
// empty.
func (d *deque[T]) popFront() T {
	x := d.buf[d.head]
	var zero T
	d.buf[d.head] = zero
	d.head = (d.head + 1) % len(d.buf)
	d.n--
	return x
}

// update runs the batch's round (policy.Round: the local updates on the
// worker pool, session i on worker i mod W, and their clipped mean with the
// fixed denominator K plus noise), computes the new parameters and
// releases: snapshot, ledger entry and user counters in one synced batch,
// then the learners' moment reset (Round.Commit), the serving swap and the
// announcement. A failed release leaves the serving policy and the
// learners' moments unchanged.
//
// Every session of the batch takes part: one whose local update fails (an
// empty trajectory, a non-finite value such as an overflowed return or an
// underflowed action probability) contributes the zero vector and keeps its
// place among the K (Round's one rule), which is within the sensitivity
// bound. Such a failure is a function of the session's content, so it is
// neither logged nor counted, and it changes neither the participant count,
// nor the users charged, nor anything else released.
func (u *updater) update(cur *version) error {
	a := u.a
	n := len(u.batch)
	var users []ledger.UserKey
	for i := 0; i < n; i++ {
		if k := u.batch[i].key; k.hasUser {
			users = append(users, k.user)
		}
	}
	participants := n
	newVer := cur.num + 1
	var (
		theta, gTilde []float64
		entry         ledger.Entry
		st            policy.CarriedNoise
		start         uint64
		lin           *lincb.Model
		err           error
	)
	if u.lin != nil {
		theta, entry, lin, err = u.lin.release(u.a, cur, u.batch)
		if err != nil {
			return err
		}
	} else {
		u.cur = cur
		gTilde, err = u.round.Run(n, u.local)
		u.cur = nil
		if err != nil {
			return fmt.Errorf("agent: aggregate: %w", err)
		}
		theta = append([]float64(nil), cur.theta...)
		policy.ApplyUpdate(theta, gTilde, a.cfg.Policy.PPO.ServerLR)
		dp := a.cfg.Policy.DP
		// The stream of a carried noise state starts at its first release.
		start = u.streamStart
		st = u.round.CarriedNoise()
		if st != nil && start == 0 {
			start = newVer
		}
		en, err := u.mech.Entry(dp, a.cfg.MaxUpdatesPerUser, start)
		if err != nil {
			return fmt.Errorf("agent: %v noise: %w", dp.Noise, err)
		}
		entry = ledger.Entry{
			Unit:      ledger.UnitSession,
			Mechanism: "dppg: mean of K clipped local PPO updates (policy and value) + " + en.Text,
			Events:    []accountant.Event{accountant.Gaussian(dp.NoiseMultiplier)},
			Method:    accountant.MethodAnalytic, Epsilon: a.epsilon, Delta: a.cfg.Delta,
			Z: dp.NoiseMultiplier, S: dp.ClipNorm, K: dp.UsersPerUpdate, Participants: participants, Seeded: a.seeded,
			Correlation: en.Correlation, Sampler: noise.SamplerGaussianTable,
		}
	}
	entry.Participants = participants
	avg := nextAverage(a.cfg.AverageDecay, cur.avg, theta)
	snap, err := encodeSnapshot(a.cfg, newVer, theta, avg)
	if err != nil {
		return err
	}
	dp := a.cfg.Policy.DP
	rel := ledger.Release{Version: newVer, Snapshot: snap, Entry: entry, Users: users}
	for _, f := range u.batch {
		if f.q != nil {
			rel.Sessions = append(rel.Sessions, f.q.sess)
		}
	}
	if st != nil {
		x, g, ok := st.Pending()
		if !ok {
			return fmt.Errorf("agent: %v noise: no pending release after a round", dp.Noise)
		}
		rel.Noise = &ledger.NoiseStep{X: x, G: g}
	}
	if a.opt.BeforeRelease != nil {
		a.opt.BeforeRelease()
	}
	var before func(ledger.Entry) error
	if l := a.opt.Learner; l != nil {
		before = func(e ledger.Entry) error { return l.Log.AppendEntry(context.Background(), e, snap, gTilde) }
	}
	if _, err := a.store.ReleaseWith(rel, before); err != nil {
		a.m.ReleaseErrors.Inc()
		switch {
		case errors.Is(err, ledger.ErrClosed):
			return err
		case errors.Is(err, record.ErrFenced):
			a.m.Cluster.AppendsFenced.Inc()
			// Another writer appended: this process is no longer the
			// learner. Nothing was written; its batch stays in the queue.
			a.log.Error().Err(err).Uint64("version", newVer).Msg("learner: the ledger of record refused the release; stopping")
			return fmt.Errorf("agent: release of version %d: %w", newVer, err)
		case errors.Is(err, ledger.ErrNeedsRestart):
			// A full disk stopped the store's writes for this process:
			// stop, as for damage; the ledger is intact and a restart
			// with space resumes.
			a.log.Error().Err(err).Uint64("version", newVer).Msg("release failed: the disk is full; stopping (the ledger is intact: free space and restart)")
			return fmt.Errorf("agent: release of version %d: %w", newVer, err)
		case errors.Is(err, ledger.ErrDiskFull):
			if !u.pauseDiskFull(err, newVer) {
				return nil
			}
			// Committed before its head record failed: publish it.
		case errors.Is(err, ledger.ErrCorrupt):
			// The store found damage and refuses writes: no later release
			// can be recorded, so stop (Run returns the error) rather than
			// retry and serve on without a durable ledger.
			a.log.Error().Err(err).Uint64("version", newVer).Msg("release failed: the ledger is damaged; stopping")
			return fmt.Errorf("agent: release of version %d: %w", newVer, err)
		default:
			a.log.Error().Err(err).Uint64("version", newVer).Msg("release failed; serving the previous version")
			return nil
		}
	}
	if u.lin == nil {
		u.round.Commit() // published: the next round's local updates start from g~, the noise stream moves on
	}
	if a.opt.Learner != nil {
		u.ackBatch()
		a.m.Cluster.LogReleases.Inc()
		a.noteLog()
	}
	if rel.Noise != nil {
		u.streamStart = start
	}
	a.storeVersion(&version{num: newVer, theta: theta, avg: avg, lin: lin})
	a.updates.Add(1)
	a.m.Releases.Inc()
	a.m.PolicyVersion.Set(float64(newVer))
	a.m.LedgerReleases.Set(float64(newVer))
	a.noteUsers(users)
	a.m.SessionsUsed.Add(float64(participants))
	a.logRelease(newVer)
	if a.opt.OnRelease != nil {
		a.opt.OnRelease(Release{Version: newVer, Epsilon: a.epsilon, Delta: a.cfg.Delta, Participants: participants})
	}
	return nil
}

// linUpdater is the linear contextual bandit's update (Config.LinCB): the
// batch's block of sufficient statistics, noised and added to the released
// ones (docs/privacy.md, section 16).
type linUpdater struct {
	cfg    lincb.Config
	noise  *noise.Gaussian
	block  []float64 // the batch's sum, Actions x Stride
	u, phi []float64 // one contribution, its features
}

// release computes the next version's statistics from the batch: each
// session contributes its first decision (observation, action, reward),
// a session without one or with an invalid one the zero vector in its
// place (it still takes part); the block's sum gets N(0, (z Delta)^2) per
// coordinate from the exact sampler. It returns the new statistics, the
// ledger entry (participants set by the caller) and the model fitted from
// them.
func (l *linUpdater) release(a *Agent, cur *version, batch []finished) ([]float64, ledger.Entry, *lincb.Model, error) {
	c := l.cfg
	clear(l.block)
	st := c.Stride()
	for i := range batch {
		tr := &batch[i].tr
		if tr.Len() == 0 || len(tr.Actions) == 0 || len(tr.Obs) < c.Dim {
			continue
		}
		act := tr.Actions[0]
		if !c.Contribution(l.u, tr.Obs[:c.Dim], act, tr.Rewards[0], l.phi) {
			continue
		}
		for j, v := range l.u {
			l.block[act*st+j] += v
		}
	}
	l.noise.Add(l.block, c.Sigma())
	theta := append([]float64(nil), cur.theta...)
	for i, v := range l.block {
		theta[i] += v
	}
	lin, err := linModel(a.cfg, cur.num+1, theta)
	if err != nil {
		return nil, ledger.Entry{}, nil, fmt.Errorf("agent: the linear contextual bandit's model: %w", err)
	}
	dp := a.cfg.Policy.DP
	entry := ledger.Entry{
		Unit: ledger.UnitSession,
		Mechanism: fmt.Sprintf("lincb: sum of a block of K sessions' sufficient statistics of their first decision "+
			"[vech(g phi phi^T), r phi] (g = %g, phi the observation clipped to L2 norm %g and scaled by 1/%g, r the reward centred and scaled to [-1, 1]; L2 norm <= S) "+
			"+ N(0, (z S)^2) per coordinate (exact); the model is post-processing", c.GramWeight, c.FeatureClip, c.FeatureClip),
		Events: []accountant.Event{accountant.Gaussian(dp.NoiseMultiplier)},
		Method: accountant.MethodAnalytic, Epsilon: a.epsilon, Delta: a.cfg.Delta,
		Z: dp.NoiseMultiplier, S: c.Sensitivity(), K: c.BlockSize(int(cur.num)), Seeded: a.seeded, Sampler: l.noise.Sampler(),
	}
	return theta, entry, lin, nil
}
