package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"dprl/agent"
	"dprl/ledger/record"
	"dprl/stream"
)

// DefaultPartitions is a cluster's default partition count (dprl nats
// --partitions, dprl agent --partitions): several per serving replica, so
// that a replica's share moves in small steps when replicas come and go.
const DefaultPartitions = 16

// partitioner holds a serving replica's share of the session partitions
// (stream.PartitionMappings): each partition is a lease (a key of bucket
// DPRL_PARTS_<cluster>) and the replica serves a partition's subjects only
// while it holds it, so every request of a session reaches one replica.
// Each replica also holds a membership key; with m members, each takes up
// to ceil(n/m) partitions, so they share the n partitions evenly, and a
// dead replica's partitions are taken over once their leases expire.
//
// A replica that gives a partition up (to a replica that joined) stops
// serving it first: the sessions it had open there get unknown_session on
// their next request and close as truncated on the old holder at the idle
// timeout, as abandoned sessions do. Two replicas serve one partition only
// while a paused holder has not yet seen its lease expire; they are in one
// queue group, so each request is answered once, and a session split
// between them ends as above.
type partitioner struct {
	srv    *stream.Server
	n      int
	ttl    time.Duration
	member *record.Lease
	parts  []*record.Lease
	held   map[int]time.Time // partition -> last successful acquisition or renewal
	// following reports whether the replica serves a version of the log
	// (agent.ClusterState.Following).
	following func() bool
	members   int         // the live replicas at the last count
	rng       *mrand.Rand // the order free partitions are tried in
	log       zerolog.Logger
	m         *agent.ClusterMetrics
	// settled says the last tick left this replica serving at least one
	// partition and no more than its fair share (it is not about to give
	// partitions up), with every partition held by some replica: /readyz
	// (Service.partitionsServed).
	settled atomic.Bool
}

// newPartitioner opens the partition bucket of cluster c for a replica
// serving srv, counting in m.
func newPartitioner(ctx context.Context, js jetstream.JetStream, c *Cluster, srv *stream.Server, following func() bool, log zerolog.Logger, m *agent.ClusterMetrics) (*partitioner, error) {
	// A membership key per process start: two replicas may share a
	// holder name (one host and pid in two containers).
	var id [8]byte
	_, _ = rand.Read(id[:])
	cfg := partsBucket(c)
	cfg.Key, cfg.BindOnly = "m."+hex.EncodeToString(id[:]), true
	member, err := record.OpenLease(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	p := &partitioner{srv: srv, n: c.Partitions, ttl: c.LeaseTTL, member: member, held: map[int]time.Time{}, following: following, members: 1, log: log, m: m}
	for i := range c.Partitions {
		l, err := member.For(fmt.Sprintf("p.%d", i))
		if err != nil {
			return nil, err
		}
		p.parts = append(p.parts, l)
	}
	var seed [16]byte
	_, _ = rand.Read(seed[:]) // the order is not secret: it only spreads the replicas' first tries
	p.rng = mrand.New(mrand.NewPCG(uint64(seed[0])|uint64(seed[1])<<8|uint64(seed[2])<<16|uint64(seed[3])<<24, uint64(seed[8])))
	return p, nil
}

// partsBucket is the lease configuration of cluster c's partition
// bucket, which a learner creates (it may create streams; a replica may
// only bind to it).
func partsBucket(c *Cluster) record.LeaseConfig {
	return record.LeaseConfig{Name: c.Name, Replicas: c.Replicas, TTL: c.LeaseTTL, Holder: c.Holder, Bucket: "DPRL_PARTS_" + c.Name,
		Description: "dprl session partitions of cluster " + c.Name + " (p.<i>: the replica serving partition i; m.<id>: a live replica)"}
}

// run holds a share of the partitions until ctx ends, then gives them up.
// It ticks every third of the TTL, and every 250 ms while it holds less
// than its share: a replica giving partitions up to a newcomer does so at
// its own tick, and the newcomer takes them within 250 ms, which bounds
// the time their sessions get "no responders".
func (p *partitioner) run(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			p.releaseAll()
			return
		case <-t.C:
			if p.tick(ctx) {
				t.Reset(p.ttl / 3)
			} else {
				t.Reset(250 * time.Millisecond)
			}
		}
	}
}

// tick renews what the replica holds, drops what it lost or could not
// renew for two thirds of a TTL (another replica may take it a third of a
// TTL later), then moves towards its fair share. It reports whether the
// replica holds its share (or could not tell).
func (p *partitioner) tick(ctx context.Context) bool {
	now := time.Now()
	if _, err := p.member.Renew(ctx); err != nil {
		if _, err := p.member.Acquire(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn().Err(err).Msg("partitions: membership (retrying)")
		}
	}
	for i, last := range p.held {
		_, err := p.parts[i].Renew(ctx)
		switch {
		case err == nil:
			p.held[i] = now
		case errors.Is(err, record.ErrLost):
			p.log.Warn().Int("partition", i).Msg("partitions: lost a partition's lease")
			p.drop(i, "lost")
		case now.Sub(last) > 2*p.ttl/3:
			p.log.Warn().Err(err).Int("partition", i).Msg("partitions: no renewal for 2/3 of the TTL: stop serving the partition")
			p.drop(i, "lost")
		}
	}
	if ctx.Err() != nil {
		return true
	}
	members, err := p.member.Count(ctx, "m")
	switch {
	case ctx.Err() != nil:
		return true
	case err != nil:
		// Share as at the last count: a replica that cannot count still
		// takes free partitions (a dead replica's), and gives extra ones
		// back once it can count again.
		p.log.Warn().Err(err).Msg("partitions: count the replicas (retrying)")
		members = p.members
	case members == 0:
		members = 1 // this replica's own key is not written yet
	}
	p.members = members
	fair := (p.n + members - 1) / members
	if !p.following() {
		// The replica serves no version of the log yet: its own initial
		// policy is in no ledger, so it takes no partition (and serves
		// no session) until it does; look again in 250 ms.
		p.settled.Store(false)
		return false
	}
	// Settled: this replica serves at least one partition and no more
	// than its share, and every partition is held by some replica. A
	// replica that took only some of the partitions another just gave up
	// (their releases raced its acquisitions) is not settled until the
	// rest are taken, since their sessions meanwhile get no responders.
	// The share is counted again at the end: a replica that joined during
	// this tick lowers it, and a replica that took partitions on the
	// earlier count gives the extra ones up at its next tick, so it is
	// not settled meanwhile.
	defer func() {
		ok := len(p.held) > 0 && len(p.held) <= fair
		if ok {
			m, err := p.member.Count(ctx, "m")
			ok = err == nil && len(p.held) <= (p.n+max(m, 1)-1)/max(m, 1)
		}
		if ok {
			all, err := p.member.Count(ctx, "p")
			ok = err == nil && all >= p.n
		}
		p.settled.Store(ok)
	}()
	for i := range p.held {
		if len(p.held) <= fair {
			break
		}
		p.drop(i, "rebalance")
		if err := p.parts[i].Release(ctx); err != nil {
			p.log.Warn().Err(err).Int("partition", i).Msg("partitions: give a partition up")
		}
	}
	for _, i := range p.rng.Perm(p.n) {
		if len(p.held) >= fair || ctx.Err() != nil {
			break
		}
		if _, ok := p.held[i]; ok {
			continue
		}
		if _, err := p.parts[i].Acquire(ctx); err != nil {
			if !errors.Is(err, record.ErrHeld) && ctx.Err() == nil {
				p.log.Warn().Err(err).Int("partition", i).Msg("partitions: take a partition (retrying)")
			}
			continue
		}
		if err := p.srv.AddPartition(i); err != nil {
			p.log.Error().Err(err).Int("partition", i).Msg("partitions: serve a partition")
			_ = p.parts[i].Release(ctx)
			continue
		}
		p.held[i] = now
		p.m.PartitionsTaken.Inc()
		p.m.PartitionsServed.Set(float64(len(p.held)))
	}
	return len(p.held) >= fair
}

// drop stops serving partition i, counting why.
func (p *partitioner) drop(i int, reason string) {
	delete(p.held, i)
	p.m.PartitionsReleased.WithLabelValues(reason).Inc()
	p.m.PartitionsServed.Set(float64(len(p.held)))
	if err := p.srv.RemovePartition(i); err != nil {
		p.log.Warn().Err(err).Int("partition", i).Msg("partitions: stop serving a partition")
	}
}

// releaseAll stops serving every partition and gives them and the
// membership up, so that the others need not wait for the TTL.
func (p *partitioner) releaseAll() {
	p.settled.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := range p.held {
		p.drop(i, "stopped")
		_ = p.parts[i].Release(ctx)
	}
	_ = p.member.Release(ctx)
}

// probePartitions checks that the NATS server nc is connected to maps the
// session subjects under prefix onto n partitions as stream.SessionPartition
// does: a replica whose --partitions differs from the servers' would
// serve partitions no session is sent to.
func probePartitions(ctx context.Context, nc *nats.Conn, prefix string, n int) error {
	var nonce [6]byte
	_, _ = rand.Read(nonce[:])
	// 16 probes: a count that divides the servers' (or is a multiple of
	// it) agrees on each probe with probability at least 1/2, so a
	// mismatch goes unseen with probability at most 2^-16.
	for k := range 16 {
		tok := fmt.Sprintf("probe-%s-%d", hex.EncodeToString(nonce[:]), k)
		sub, err := nc.SubscribeSync(stream.ProbeReceipt(prefix, tok))
		if err != nil {
			return fmt.Errorf("agent: partitions: probe: %w", err)
		}
		err = nc.Flush()
		if err == nil {
			err = nc.Publish(stream.ProbeSubject(prefix, tok), nil)
		}
		var m *nats.Msg
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			m, err = sub.NextMsgWithContext(pctx)
			cancel()
		}
		_ = sub.Unsubscribe()
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("agent: partitions: the NATS servers do not partition session subjects: start every dprl nats with --partitions %d (or give every server the mappings of stream.PartitionMappings)", n)
		}
		if err != nil {
			return fmt.Errorf("agent: partitions: probe: %w", err)
		}
		got, err := stream.ProbePartition(prefix, m.Subject)
		if err != nil {
			return err
		}
		if want := stream.SessionPartition(tok, n); got != want {
			return fmt.Errorf("agent: partitions: the NATS servers partition session subjects otherwise than --partitions %d (a probe went to partition %d, not %d): give every dprl nats and every replica the same --partitions", n, got, want)
		}
	}
	return nil
}
