package agent

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"dprl/ledger"
	"dprl/ledger/record"
	"dprl/stream/updateq"
)

// Learner is the learner role of a cluster (Options.Learner): instead of
// the sessions it serves, the agent learns from the clipped session updates
// serving replicas publish to the update queue, writes every entry through
// the ledger of record before its own ledger, and releases only while it
// holds the writer lease.
//
// The flow (docs/privacy.md, section 13): wait for the lease while
// following the log; once it holds it, catch up, append a writer entry
// (the fence against any earlier writer), then form batches of K updates
// of distinct users from the queue (caps checked against the ledger, which
// is the record's copy; a session a release already used is dropped) and
// release each through the log. An update is acknowledged, and so leaves
// the queue, only once the release that used it is in the log, or when it
// is dropped. A lost lease or a refused append stops the learner (Run
// returns the error): its process restarts as a candidate and catches up
// before it writes again.
type Learner struct {
	// Log is the ledger of record; Lease elects its writer.
	Log   *record.Log
	Lease *record.Lease
	// Updates is the update queue's consumer.
	Updates *updateq.Consumer
	// Holder names this process in its writer entry.
	Holder string
	// RenewEvery is how often the lease is renewed (and, while another
	// process holds it, how often it is tried): a third of its TTL. A
	// renewal that fails for a reason other than the lease being taken (a
	// leader election, a server down) is retried every 250 ms, until
	// nine periods (three TTLs) passed without one; a lease whose key
	// expired meanwhile is taken again if no other candidate took it
	// (keepLease).
	RenewEvery time.Duration
}

// queued is a learner's session update: the clipped update a replica
// computed, the key of its session, and the queue message to acknowledge.
type queued struct {
	gu   []float64
	sess ledger.SessionKey
	msg  *updateq.Msg
}

// runLearner is Run for the learner role.
func (a *Agent) runLearner(ctx context.Context) error {
	l := a.opt.Learner
	if l.Log == nil || l.Lease == nil || l.Updates == nil || l.Holder == "" || l.RenewEvery <= 0 {
		return errors.New("agent: learner: a log, a lease, an update consumer, a holder name and a renewal period are required")
	}
	if a.cfg.Policy.DP.Noise != 0 {
		return fmt.Errorf("agent: learner: %v noise is not supported in a cluster yet (its noise state stays with its writer)", a.cfg.Policy.DP.Noise)
	}
	rev, err := a.awaitLease(ctx)
	if ctx.Err() != nil {
		return nil // stopped while waiting or catching up
	}
	if err != nil || rev == 0 {
		return err
	}
	defer a.setLease(false, "")
	lost := make(chan error, 1)
	// The lease is given up last, once the renewal has stopped (defers
	// run in reverse: this one after wg.Wait).
	defer func() { _ = l.Lease.Release(context.Background()) }()
	var wg sync.WaitGroup
	defer wg.Wait()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel() // before wg.Wait: the renewal and the consumer stop on it
	wg.Add(2)
	go func() {
		defer wg.Done()
		a.keepLease(rctx, lost)
	}()
	go func() {
		defer wg.Done()
		a.consume(rctx)
	}()
	return a.runUpdater(rctx, lost)
}

// leaseRetry is how often a learner tries again to renew its lease after a
// renewal failed for a reason other than the lease being taken.
const leaseRetry = 250 * time.Millisecond

// keepLease renews the writer lease every RenewEvery until ctx ends, and
// sends on lost when it is lost. A renewal that fails because the lease's
// bucket cannot answer (its stream electing a leader after a server died:
// nats-server's elections take 4-9 s, close to a 10 s TTL) is retried every
// leaseRetry, for up to nine periods. If the key expired meanwhile, the
// learner takes it again unless another candidate took it first (those
// try once per period, so the holder, retrying faster, usually wins).
// Holding on past an expiry is safe: the fence is the ledger of record's
// expected sequence, not the lease; a candidate that took the key appends
// its writer entry first, and this learner's next append is refused.
func (a *Agent) keepLease(ctx context.Context, lost chan<- error) {
	l := a.opt.Learner
	t := time.NewTimer(l.RenewEvery)
	defer t.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, err := l.Lease.Renew(ctx)
		if errors.Is(err, record.ErrLost) {
			// The key may have expired during an outage rather than been
			// taken: take it again if it is free.
			if _, aerr := l.Lease.Acquire(ctx); aerr == nil {
				a.log.Info().Dur("unrenewed", time.Since(lastOK)).Msg("learner: took the writer lease again after its key expired while the bucket could not answer")
				a.m.Cluster.LeaseAcquisitions.Inc()
				err = nil
			}
		}
		if err != nil && ctx.Err() == nil {
			a.m.Cluster.LeaseRenewFailures.Inc()
		}
		switch {
		case err == nil:
			lastOK = time.Now()
			t.Reset(l.RenewEvery)
		case ctx.Err() != nil:
			return
		case errors.Is(err, record.ErrLost) || time.Since(lastOK) >= 9*l.RenewEvery:
			// Taken by another, or not renewed for three TTLs.
			lost <- fmt.Errorf("agent: learner: the writer lease: %w", err)
			return
		default:
			a.log.Warn().Err(err).Msg("learner: renew the writer lease (retrying)")
			t.Reset(leaseRetry)
		}
	}
}

// awaitLease follows the log until this process takes the writer lease,
// then catches up, reloads the policy the log's last release holds, and
// appends its writer entry; it returns the lease revision (0 when ctx
// ended first).
func (a *Agent) awaitLease(ctx context.Context) (uint64, error) {
	l := a.opt.Learner
	for {
		if _, err := record.Sync(ctx, l.Log, a.store, nil); err != nil {
			switch {
			case ctx.Err() != nil:
				return 0, nil // stopped
			case diverged(err):
				return 0, fmt.Errorf("agent: learner: follow the log: %w", err)
			}
			a.log.Warn().Err(err).Msg("learner: follow the log (retrying)")
		}
		a.noteLog()
		rev, err := l.Lease.Acquire(ctx)
		switch {
		case err == nil:
			if _, err := record.Sync(ctx, l.Log, a.store, nil); err != nil {
				return 0, fmt.Errorf("agent: learner: catch up: %w", err)
			}
			if err := a.loadPolicy(); err != nil {
				return 0, err
			}
			if err := a.adoptFirstPolicy(ctx); err != nil {
				return 0, err
			}
			cur := a.current.Load()
			snap, err := encodeSnapshot(a.cfg, cur.num, cur.theta, cur.avg)
			if err != nil {
				return 0, err
			}
			_, err = a.store.AppendWriter(l.Holder, rev, func(e ledger.Entry) error {
				return l.Log.AppendEntry(ctx, e, snap, nil)
			})
			if errors.Is(err, record.ErrFenced) {
				a.m.Cluster.AppendsFenced.Inc()
				continue // a write landed since the catch-up: follow again
			}
			if err != nil {
				return 0, fmt.Errorf("agent: learner: writer entry: %w", err)
			}
			a.log.Info().Str("holder", l.Holder).Uint64("lease", rev).Uint64("version", cur.num).Msg("learner: took the writer lease")
			a.m.Cluster.LeaseAcquisitions.Inc()
			a.setLease(true, l.Holder)
			a.noteLog()
			return rev, nil
		case ctx.Err() != nil:
			return 0, nil
		case errors.Is(err, record.ErrHeld):
			if h, _, err := l.Lease.Holder(ctx); err == nil {
				a.setLease(false, h) // for /status: who writes
			}
		default:
			a.log.Warn().Err(err).Msg("learner: lease")
		}
		select {
		case <-ctx.Done():
			return 0, nil
		case <-time.After(l.RenewEvery):
		}
	}
}

// consume moves the queue's updates into the learner queue until ctx ends:
// each one as a finished session of its user (anonymous ones per
// session), charged to the memory budget. It fetches no more than the
// learner queue has room for; an update that does not fit after all
// (memory, a user's queue) goes back to the queue for a second.
func (a *Agent) consume(ctx context.Context) {
	for ctx.Err() == nil {
		room := min(2*a.K(), a.queue.room())
		if room <= 0 {
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		msgs, bad, err := a.opt.Learner.Updates.Fetch(room, 50*time.Millisecond)
		if err != nil {
			a.noisy.Warn().Err(err).Msg("learner: fetch updates")
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		a.m.Cluster.UpdatesConsumed.Add(float64(len(msgs) + len(bad)))
		for _, e := range bad {
			a.m.Cluster.UpdatesDropped.WithLabelValues("malformed").Inc()
			a.noisy.Warn().Err(e).Msg("learner: a malformed update was dropped")
		}
		for _, m := range msgs {
			a.queueUpdate(ctx, m)
		}
	}
}

// queueUpdate queues one update, or leaves it for later.
func (a *Agent) queueUpdate(ctx context.Context, m *updateq.Msg) {
	u := &m.Update
	var sess ledger.SessionKey
	if len(u.Session) != 2*len(sess) {
		a.noisy.Warn().Msg("learner: an update whose session is not a session key was dropped")
		a.m.Cluster.UpdatesDropped.WithLabelValues("malformed").Inc()
		_ = m.Ack(ctx)
		return
	}
	if _, err := hex.Decode(sess[:], []byte(u.Session)); err != nil {
		a.m.Cluster.UpdatesDropped.WithLabelValues("malformed").Inc()
		_ = m.Ack(ctx)
		return
	}
	bytes := int64(8*len(u.Values)) + 256
	if !a.charge(bytes) {
		_ = m.Nak(ctx, time.Second)
		return
	}
	f := finished{ver: u.Version, at: a.now(), bytes: bytes, q: &queued{gu: u.Values, sess: sess, msg: m}}
	if u.HasUser {
		f.key = queueKey{user: ledger.UserKey(u.User), hasUser: true}
	} else {
		f.key = queueKey{origin: "session " + u.Session}
	}
	if ok, _ := a.queue.push(f); !ok {
		a.uncharge(bytes)
		_ = m.Nak(ctx, time.Second)
	}
}

// diverged reports an error of following the log that a retry cannot
// cure: this ledger disagrees with the ledger of record, or is damaged.
func diverged(err error) bool {
	return errors.Is(err, ledger.ErrInvalid) || errors.Is(err, ledger.ErrCorrupt) || errors.Is(err, record.ErrDiverged)
}

// sessionTaken reports whether a learner's session is already in the batch
// being formed or in a release (a redelivered update).
func (u *updater) sessionTaken(k ledger.SessionKey) bool {
	for _, f := range u.batch {
		if f.q != nil && f.q.sess == k {
			return true
		}
	}
	_, used, err := u.a.store.SessionUsed(k)
	return used || err != nil
}

// ackBatch acknowledges the batch's updates once their release is in the
// ledger of record: they leave the queue.
func (u *updater) ackBatch() {
	for _, f := range u.batch {
		if f.q != nil {
			if err := f.q.msg.AckAsync(); err != nil {
				// Redelivered later, then dropped as used (sessionTaken).
				u.a.noisy.Warn().Err(err).Msg("learner: acknowledge an update")
			}
		}
	}
}

// adoptFirstPolicy makes a learner that takes over before any release
// continue from the policy the first writer started from (the snapshot of
// the log's first entry), not from its own initialisation: the replicas
// computed their updates at it.
func (a *Agent) adoptFirstPolicy(ctx context.Context) error {
	h, err := a.store.Head()
	if err != nil || h.Version != 0 || h.Seq == 0 {
		return err
	}
	r, err := a.opt.Learner.Log.Entry(ctx, 1)
	if err != nil {
		return fmt.Errorf("agent: learner: the first writer's policy: %w", err)
	}
	v, theta, _, err := decodeSnapshot(a.cfg, r.Snapshot)
	if err != nil || v != 0 {
		return fmt.Errorf("agent: learner: the first writer's policy (version %d): %v", v, err)
	}
	a.storeVersion(&version{num: 0, theta: theta})
	return nil
}

// clusterState is what a cluster role shows in /status (ClusterState).
type clusterState struct {
	leaseHeld atomic.Bool
	holder    atomic.Pointer[string]
	logSeq    atomic.Uint64
	following atomic.Bool // a replica serves a version of the log
}

// ClusterState is a cluster role's state for /status: public values that
// depend on which processes are up, never on users' data.
type ClusterState struct {
	// LeaseHeld is true while this learner holds the writer lease.
	LeaseHeld bool
	// LeaseHolder names the lease's holder as this learner last saw it:
	// itself while it holds the lease, the holder it found taken while it
	// waits ("" when none seen).
	LeaseHolder string
	// LogSeq is the position of the ledger of record this process's
	// ledger holds up to: the log position it follows.
	LogSeq uint64
	// Following is true once a replica serves a version of the log (the
	// log holds a writer entry and the replica applied it): before, it
	// must serve no session, since its own initial policy is in no
	// ledger.
	Following bool
}

// ClusterState returns the cluster role's state (the zero value for role
// all).
func (a *Agent) ClusterState() ClusterState {
	st := ClusterState{LeaseHeld: a.cl.leaseHeld.Load(), LogSeq: a.cl.logSeq.Load(), Following: a.cl.following.Load()}
	if h := a.cl.holder.Load(); h != nil {
		st.LeaseHolder = *h
	}
	return st
}

// setLease records whether this learner holds the lease and who does.
func (a *Agent) setLease(held bool, holder string) {
	a.cl.leaseHeld.Store(held)
	a.cl.holder.Store(&holder)
	if held {
		a.m.Cluster.LeaseHeld.Set(1)
	} else {
		a.m.Cluster.LeaseHeld.Set(0)
	}
}

// noteLog records the log position this process's ledger holds up to.
func (a *Agent) noteLog() {
	if h, err := a.store.Head(); err == nil {
		a.cl.logSeq.Store(h.Seq)
		a.m.Cluster.LogSeq.Set(float64(h.Seq))
	}
}
