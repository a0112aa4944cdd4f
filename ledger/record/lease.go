package record

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrHeld is returned by Lease.Acquire when another candidate holds the
// lease.
var ErrHeld = errors.New("record: the lease is held by another candidate")

// ErrLost is returned by Lease.Renew when the lease moved on (it expired
// and another candidate took it, or it was released).
var ErrLost = errors.New("record: the lease was lost")

// Lease elects one holder among candidates (one learner among several)
// through a key of a replicated JetStream key-value bucket with a per-key
// TTL: Acquire creates the key only if it is absent or expired, Renew
// rewrites it only at the revision the holder last wrote (and restores its
// TTL, which the bucket's Update would drop), and an unrenewed key expires
// after the TTL, letting another candidate take it.
//
// A lease is advisory: a holder paused past its TTL (a stop signal, a
// long garbage collection) still believes it holds it until its next
// Renew. What makes two holders harmless is the Log's fence: a new holder
// appends an entry (its takeover) before anything else, so every append
// the old holder prepared against the earlier tail is refused.
type Lease struct {
	kv      jetstream.KeyValue
	js      jetstream.JetStream
	bucket  string
	key     string
	subject string
	ttl     time.Duration
	holder  string
	token   string // the key's value while this lease holds it (newToken)
	rev     uint64
}

// LeaseConfig names a lease.
type LeaseConfig struct {
	// Name names the ledger whose writer the lease elects: the bucket is
	// "DPRL_LEASE_" + Name (the rules of Config.Name).
	Name string
	// Replicas is the bucket's replication factor.
	Replicas int
	// TTL is how long the lease outlives its last renewal: whole seconds,
	// at least 1 s (JetStream's message TTL). Renew well within it.
	TTL time.Duration
	// Holder names this candidate (written as the key's value, for
	// operators).
	Holder string
	// Bucket and Key name another lease than the writer's ("" and "":
	// bucket "DPRL_LEASE_" + Name, key "writer"): a serving replica's
	// partitions are keys of bucket "DPRL_PARTS_" + Name. Key is a
	// key-value key (letters, digits, '-', '_', '/', '=', '.').
	Bucket, Key string
	// Description describes the bucket ("": the writer lease's).
	Description string
	// BindOnly binds to the bucket, waiting until it exists (ctx bounds
	// the wait), and never creates or updates it: a serving replica may
	// not create streams (stream.ReplicaPermissions); a learner creates
	// its partition bucket.
	BindOnly bool
}

// OpenLease creates or binds the lease's bucket, retrying through leader
// elections until ctx ends.
func OpenLease(ctx context.Context, js jetstream.JetStream, cfg LeaseConfig) (*Lease, error) {
	switch {
	case !namePattern.MatchString(cfg.Name):
		return nil, fmt.Errorf("record: lease name %q: want 1 to 64 letters, digits, '-' or '_'", cfg.Name)
	case cfg.Replicas < 1 || cfg.Replicas > 5:
		return nil, fmt.Errorf("record: lease: %d replicas, want 1 to 5", cfg.Replicas)
	case cfg.TTL < time.Second || cfg.TTL%time.Second != 0:
		return nil, fmt.Errorf("record: lease TTL %v: want whole seconds, at least 1s", cfg.TTL)
	case cfg.Holder == "":
		return nil, errors.New("record: lease without a holder name")
	}
	bucket := cmp.Or(cfg.Bucket, "DPRL_LEASE_"+cfg.Name)
	key := cmp.Or(cfg.Key, "writer")
	if !keyPattern.MatchString(key) || !namePattern.MatchString(strings.TrimPrefix(bucket, "DPRL_")) {
		return nil, fmt.Errorf("record: lease bucket %q key %q: want a bucket of letters, digits, '-' or '_', and a key-value key", bucket, key)
	}
	var last error
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		var kv jetstream.KeyValue
		var err error
		if cfg.BindOnly {
			kv, err = js.KeyValue(actx, bucket)
		} else {
			kv, err = js.CreateOrUpdateKeyValue(actx, jetstream.KeyValueConfig{
				Bucket: bucket, Description: cmp.Or(cfg.Description, "dprl writer lease of ledger "+cfg.Name),
				History: 1, Storage: jetstream.FileStorage, Replicas: cfg.Replicas,
				LimitMarkerTTL: cfg.TTL,
			})
		}
		cancel()
		if err == nil {
			return &Lease{kv: kv, js: js, bucket: bucket, key: key, subject: "$KV." + bucket + "." + key, ttl: cfg.TTL, holder: cfg.Holder, token: newToken(cfg.Holder)}, nil
		}
		last = err
		if !retryable(err) && !(cfg.BindOnly && errors.Is(err, jetstream.ErrBucketNotFound)) {
			return nil, fmt.Errorf("record: open lease %s: %w", bucket, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("record: open lease %s: %w (last: %v)", bucket, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Acquire takes the lease if no candidate holds it, returning its
// revision (a number that grows with every acquisition and renewal, which
// a holder can write into its entries); ErrHeld if another does.
//
// The key is held when it exists, with two exceptions. It holds this
// lease's own token: an earlier attempt whose answer was lost (a leader
// election) took it, and Acquire adopts it. Or it was last written more
// than twice the TTL ago: its TTL should have removed it, but a server
// that restarted may keep it; Acquire then takes it over at its revision,
// so that a holder renewing at the same moment makes one of the two fail.
func (l *Lease) Acquire(ctx context.Context) (uint64, error) {
	actx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	rev, err := l.kv.Create(actx, l.key, []byte(l.token), jetstream.KeyTTL(l.ttl))
	if err == nil {
		l.rev = rev
		return rev, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return 0, fmt.Errorf("record: acquire lease: %w", err)
	}
	// Create read the key through a direct get, which a replica that
	// lags the leader may answer (one that has not yet applied a release
	// shows the key held): decide on the leader's copy.
	var at uint64 // the subject's last sequence to write after (0: none)
	switch m, gerr := l.leaderLast(actx); {
	case errors.Is(gerr, nats.ErrMsgNotFound):
	case gerr != nil:
		return 0, ErrHeld
	case !liveKey(m):
		at = m.Sequence
	case string(m.Data) == l.token:
		l.rev = m.Sequence
		return l.rev, nil
	case time.Since(m.Time) > 2*l.ttl:
		at = m.Sequence
	default:
		return 0, ErrHeld
	}
	msg := &nats.Msg{Subject: l.subject, Data: []byte(l.token)}
	ack, err := l.js.PublishMsg(actx, msg, jetstream.WithExpectLastSequencePerSubject(at), jetstream.WithMsgTTL(l.ttl))
	if err != nil {
		return 0, ErrHeld
	}
	l.rev = ack.Sequence
	return l.rev, nil
}

// leaderLast returns the key's last message as the bucket stream's
// leader holds it (nats.ErrMsgNotFound when there is none). The bucket
// allows direct gets (kv.Get), which any replica may answer from a state
// that lags the leader; a lease decides only on the leader's copy.
func (l *Lease) leaderLast(ctx context.Context) (*nats.RawStreamMsg, error) {
	js, err := l.js.Conn().JetStream()
	if err != nil {
		return nil, err
	}
	return js.GetLastMsg("KV_"+l.bucket, l.subject, nats.Context(ctx))
}

// liveKey reports whether m holds a value: not a delete or purge marker
// (a release) and not a marker the server wrote when the key's TTL ran
// out.
func liveKey(m *nats.RawStreamMsg) bool {
	return m.Header.Get("KV-Operation") == "" && m.Header.Get(jetstream.MarkerReasonHeader) == ""
}

// Renew extends the lease by its TTL from now, if this candidate still
// holds it at the revision it last wrote; ErrLost if it does not.
func (l *Lease) Renew(ctx context.Context) (uint64, error) {
	if l.rev == 0 {
		return 0, ErrLost
	}
	actx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	m := &nats.Msg{Subject: l.subject, Data: []byte(l.token)}
	ack, err := l.js.PublishMsg(actx, m, jetstream.WithExpectLastSequencePerSubject(l.rev), jetstream.WithMsgTTL(l.ttl))
	if fenced(err) {
		// An earlier renewal whose answer was lost may have moved the
		// key on: it is still ours if it holds our token.
		if m, gerr := l.leaderLast(actx); gerr == nil && liveKey(m) && string(m.Data) == l.token && m.Sequence > l.rev {
			l.rev = m.Sequence
			return l.Renew(ctx) // from now, at the revision it holds
		}
		l.rev = 0
		return 0, ErrLost
	}
	if err != nil {
		return 0, fmt.Errorf("record: renew lease: %w", err)
	}
	l.rev = ack.Sequence
	return l.rev, nil
}

// Release gives the lease up (if still held at the revision last
// written), so another candidate need not wait for the TTL.
func (l *Lease) Release(ctx context.Context) error {
	if l.rev == 0 {
		return nil
	}
	actx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	err := l.kv.Delete(actx, l.key, jetstream.LastRevision(l.rev))
	l.rev = 0
	if err != nil && !isWrongLastSeq(err) {
		return fmt.Errorf("record: release lease: %w", err)
	}
	return nil
}

// Holder returns the current holder's name and revision ("" when none).
func (l *Lease) Holder(ctx context.Context) (string, uint64, error) {
	actx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	e, err := l.kv.Get(actx, l.key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, fmt.Errorf("record: lease holder: %w", err)
	}
	holder, _, _ := strings.Cut(string(e.Value()), "\n")
	return holder, e.Revision(), nil
}

// newToken is what a lease writes as its key's value: the holder's name,
// a line break and a random nonce, so that a lease recognises its own
// writes (two processes may share a holder name).
func newToken(holder string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return holder + "\n" + hex.EncodeToString(b[:])
}

// isWrongLastSeq is fenced for errors that may have been wrapped.
func isWrongLastSeq(err error) bool {
	return fenced(err) || errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}

// keyPattern is what a key-value key may be.
var keyPattern = regexp.MustCompile(`^[-/_=.a-zA-Z0-9]+$`)

// For returns a lease on another key of l's bucket, with l's holder and
// TTL, not held.
func (l *Lease) For(key string) (*Lease, error) {
	if !keyPattern.MatchString(key) || strings.HasPrefix(key, ".") || strings.HasSuffix(key, ".") {
		return nil, fmt.Errorf("record: lease key %q: want letters, digits, '-', '_', '/', '=' or inner '.'", key)
	}
	return &Lease{kv: l.kv, js: l.js, bucket: l.bucket, key: key, subject: "$KV." + l.bucket + "." + key, ttl: l.ttl, holder: l.holder, token: newToken(l.holder)}, nil
}

// Count returns how many keys of l's bucket under prefix ("m" counts
// "m.<anything>") are held: written within twice the TTL and neither
// deleted nor expired. A key written longer ago is not counted, whether
// or not its TTL removed it: a server that restarted may keep expired
// keys (see Acquire).
func (l *Lease) Count(ctx context.Context, prefix string) (int, error) {
	actx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	w, err := l.kv.WatchFiltered(actx, []string{prefix + ".>"}, jetstream.IgnoreDeletes())
	if err != nil {
		return 0, fmt.Errorf("record: count leases: %w", err)
	}
	defer w.Stop()
	n := 0
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return 0, fmt.Errorf("record: count leases: the watch ended")
			}
			if e == nil { // every current value was delivered
				return n, nil
			}
			if time.Since(e.Created()) <= 2*l.ttl {
				n++
			}
		case <-actx.Done():
			return 0, fmt.Errorf("record: count leases: %w", actx.Err())
		}
	}
}

// Held reports whether l was held at its last Acquire or Renew.
func (l *Lease) Held() bool { return l.rev != 0 }
