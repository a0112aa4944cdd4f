package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"dprl/ledger"
	"dprl/ledger/record"
	"dprl/policy"
	"dprl/stream/updateq"
)

// Replica is the serving role of a cluster (Options.Replica): the agent
// serves sessions as ever, but instead of forming batches it computes each
// finished session's local update where the session's data is, clips it
// (policy.DPConfig.ClipUpdate) and publishes it to the update queue under
// the session's key; and it serves the versions the ledger of record
// holds, following the log. It never writes to the log.
//
// Until the log holds a writer entry (the first learner's, with the policy
// it starts from) the replica serves its own initial policy and publishes
// nothing: its sessions are set aside as stale, since no learner would
// start from its parameters.
type Replica struct {
	// Log is the ledger of record, followed for policy versions.
	Log *record.Log
	// Updates is the update queue.
	Updates *updateq.Queue
	// Follow is how often the log is read (0: 200 ms).
	Follow time.Duration
}

// runReplica is Run for the serving role.
func (a *Agent) runReplica(ctx context.Context) error {
	r := a.opt.Replica
	if r.Log == nil || r.Updates == nil {
		return errors.New("agent: replica: a log and an update queue are required")
	}
	follow := r.Follow
	if follow <= 0 {
		follow = 200 * time.Millisecond
	}
	l, err := policy.NewLearner(a.cfg.Spec, a.cfg.Policy)
	if err != nil {
		return err
	}
	p := &publisher{a: a, learner: l, gu: make([]float64, l.NumParams()), every: follow}
	if err := p.resume(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if err := p.follow(ctx); err != nil {
		return err
	}
	tick := time.NewTicker(follow)
	defer tick.Stop()
	sweep := time.NewTicker(max(min(a.cfg.IdleTimeout, a.cfg.MaxSessionLifetime)/4, 10*time.Millisecond))
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if err := p.follow(ctx); err != nil {
				return err
			}
		case <-a.queue.wake:
			if err := p.publishAll(ctx); err != nil {
				return err
			}
		case <-sweep.C:
			a.sweep()
		}
	}
}

// publisher is a replica's state: the learner computing local updates
// (its moments reset from each release's update, as the learner's workers
// are) and whether a writer has given the policy to start from.
type publisher struct {
	a       *Agent
	learner *policy.Learner
	gu      []float64
	started bool // the log holds a writer entry: versions are the writer's
	batch   []finished
	rng     randWrap
	// every is how often the log is read (Replica.Follow), also between
	// the publications of a long batch; followed is when it last was.
	every    time.Duration
	followed time.Time
}

// resume restores what a restarted replica's ledger holds of the log: the
// last entry it applied, read back from the log, gives the version to
// serve (a writer entry's snapshot: the version 0 its writer started from)
// and the moments (a release's update).
func (p *publisher) resume(ctx context.Context) error {
	a := p.a
	h, err := a.store.Head()
	if err != nil || h.Seq == 0 {
		return err
	}
	r, err := a.opt.Replica.Log.Entry(ctx, h.Seq)
	if err != nil {
		return fmt.Errorf("agent: replica: the log's entry %d: %w", h.Seq, err)
	}
	p.apply(r)
	a.noteLog()
	return nil
}

// apply serves r's version and resets the moments from its update.
func (p *publisher) apply(r record.Release) {
	a := p.a
	if len(r.Snapshot) == 0 {
		return
	}
	v, theta, avg, err := decodeSnapshot(a.cfg, r.Snapshot)
	if err != nil {
		a.log.Error().Err(err).Uint64("seq", r.Entry.Seq).Msg("replica: a snapshot of the log does not decode")
		return
	}
	if r.Entry.Kind == ledger.KindRelease && len(r.Update) == len(theta) {
		p.learner.ResetMoments(r.Update)
	}
	p.started = true
	a.cl.following.Store(true)
	if v >= a.current.Load().num {
		a.storeVersion(&version{num: v, theta: theta, avg: avg})
		a.m.PolicyVersion.Set(float64(v))
	}
}

// follow applies the log's new entries to the replica's ledger and serves
// the last version they hold.
func (p *publisher) follow(ctx context.Context) error {
	a := p.a
	p.followed = time.Now()
	// A read of the log retries through leader elections: bound it, so
	// that the replica goes on publishing and sweeping meanwhile.
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := record.Sync(fctx, a.opt.Replica.Log, a.store, p.apply); err != nil && ctx.Err() == nil {
		if diverged(err) {
			return fmt.Errorf("agent: replica: follow the log: %w", err)
		}
		// The cluster is electing leaders or a server is down: serve on
		// and read again at the next tick.
		a.noisy.Warn().Err(err).Msg("replica: follow the log (retrying)")
	}
	a.noteLog()
	return nil
}

// publishAll computes and publishes the local update of every finished
// session waiting, at the version being served. Each publication waits
// for the queue's acknowledgement, so a long batch takes a while: the log
// is read between publications as often as between batches, so that the
// replica keeps serving the learner's latest version and its updates are
// not set aside as stale. (Before, a replica whose sessions ended faster
// than it could publish read the log only between batches, fell behind
// the learner, and everything it published was stale: the learner
// stalled.) It returns only follow's errors.
func (p *publisher) publishAll(ctx context.Context) error {
	a := p.a
	p.batch = a.queue.popAll(p.batch[:0])
	defer clear(p.batch)
	for i := range p.batch {
		f := &p.batch[i]
		if time.Since(p.followed) >= p.every {
			if err := p.follow(ctx); err != nil {
				return err
			}
		}
		cur := a.current.Load()
		switch {
		case !p.started, cur.num-f.ver > a.cfg.MaxStaleness:
			a.setAside(f, reasonStale)
			continue
		}
		if p.rng.r == nil {
			p.rng.r = a.newRand("local-update")
		}
		clear(p.gu)
		if f.tr.Len() == 0 || p.learner.LocalUpdate(p.gu, cur.theta, &f.tr, p.rng.r) != nil {
			clear(p.gu) // a failed update is the zero vector, as in a round
		}
		a.cfg.Policy.DP.ClipUpdate(p.gu, p.learner.NumPolicyParams())
		u := &updateq.Update{Session: f.sess.String(), HasUser: f.key.hasUser, User: f.key.user, Version: cur.num, Values: p.gu}
		if err := a.opt.Replica.Updates.Publish(ctx, u); err != nil {
			a.m.Cluster.PublishErrors.Inc()
			a.noisy.Warn().Err(err).Msg("replica: publish an update")
		} else {
			a.m.Cluster.UpdatesPublished.Inc()
		}
		a.uncharge(f.bytes)
		f.bytes = 0
	}
	return nil
}
