// Package record is the ledger of record on NATS JetStream: an append-only
// log of ledger entries in a replicated stream, where a writer appends at
// a position it names and at most one append lands per position.
//
// Positions are the stream's sequence numbers: the stream has one subject,
// refuses deletes and purges, and keeps every message, so entry n is
// message n. Append publishes with the expected last sequence of the
// subject (Nats-Expected-Last-Subject-Sequence: the fence) and a message id
// (Nats-Msg-Id: a retry of the same append within the stream's duplicate
// window is answered with the original position rather than stored
// twice). Two processes that both believe they may write — two learners
// after a lease expired under one of them — can therefore never both
// append at one position: the later one gets ErrFenced and must re-read
// the log before it writes again.
//
// An acknowledged append is on a majority of the stream's replicas; it is
// on their disks only if the servers fsync every write (the embedded
// server's JetStreamOptions.SyncAlways; sync_interval: always in a
// server's configuration). Without it nats-server syncs every two minutes,
// and losing a majority of the machines at once could lose the last
// acknowledged entries.
package record

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrFenced is returned by Append when another entry holds the position:
// the writer's view of the log is stale.
var ErrFenced = errors.New("record: another entry holds the position")

// Config describes a ledger's stream.
type Config struct {
	// Name names the ledger: its stream is "DPRL_LEDGER_" + Name and its
	// subject "dprl.ledger." + Name (letters, digits, '-' and '_').
	Name string
	// Replicas is the stream's replication factor: 3 survives the loss of
	// any one server, 1 is a single server's (tests, one machine).
	Replicas int
	// DuplicateWindow is how long the stream remembers message ids; 0 is
	// two minutes.
	DuplicateWindow time.Duration
}

// namePattern is what Config.Name may hold: a stream name and a subject
// token at once.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Log is a ledger's stream. It is safe for concurrent use, but a ledger
// has one writer at a time (the fence refuses the others).
type Log struct {
	js            jetstream.JetStream
	name, subject string

	mu       sync.Mutex
	stream   jetstream.Stream // nil until bound (OpenReader, before the stream exists)
	bindWait time.Duration    // how long the next bind attempt waits (bound)

	// The blob stream (blob.go): nil until bound.
	blobName, blobSubject string
	blobs                 jetstream.Stream
}

// OpenReader binds to ledger name's stream for reading only (Last, Read,
// Entry, Sync, Check), without creating or updating it: a serving
// replica's NATS permissions allow no more (stream.ReplicaPermissions). A
// log whose stream does not exist yet (no learner has opened it) reads as
// empty until it does. It tries to bind once, retrying through leader
// elections until ctx ends, so that a refusal (a permission) is reported
// now.
func OpenReader(ctx context.Context, js jetstream.JetStream, name string) (*Log, error) {
	if !namePattern.MatchString(name) {
		return nil, fmt.Errorf("record: ledger name %q: want 1 to 64 letters, digits, '-' or '_'", name)
	}
	l := &Log{js: js, name: "DPRL_LEDGER_" + name, subject: "dprl.ledger." + name, blobName: "DPRL_BLOBS_" + name, blobSubject: "dprl.blobs." + name}
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		_, err := l.bound(actx)
		cancel()
		if err == nil || errors.Is(err, jetstream.ErrStreamNotFound) {
			return l, nil
		}
		if !retryable(err) {
			return nil, fmt.Errorf("record: open %s for reading: %w", l.name, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("record: open %s for reading: %w (last: %v)", l.name, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// bound returns the log's stream, binding to it (its info) the first
// time; jetstream.ErrStreamNotFound while it does not exist. A request
// made while the stream is being created, or before the cluster has
// elected its leaders, gets no answer at all: an attempt waits 250 ms at
// first, then 500 ms (not a request's 2 s), so that a reader binds soon
// after the stream is up.
func (l *Log) bound(ctx context.Context) (jetstream.Stream, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stream != nil {
		return l.stream, nil
	}
	wait := max(l.bindWait, 250*time.Millisecond)
	bctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	st, err := l.js.Stream(bctx, l.name)
	if err != nil {
		if bctx.Err() != nil && ctx.Err() == nil {
			l.bindWait = min(2*wait, 500*time.Millisecond)
		}
		return nil, err
	}
	l.stream = st
	return st, nil
}

// Open creates the ledger's stream and its blob stream (blob.go), or binds
// to them if they exist with the same configuration, retrying while the cluster elects its leaders until
// ctx ends.
func Open(ctx context.Context, js jetstream.JetStream, cfg Config) (*Log, error) {
	if !namePattern.MatchString(cfg.Name) {
		return nil, fmt.Errorf("record: ledger name %q: want 1 to 64 letters, digits, '-' or '_'", cfg.Name)
	}
	if cfg.Replicas < 1 || cfg.Replicas > 5 {
		return nil, fmt.Errorf("record: %d replicas, want 1 to 5", cfg.Replicas)
	}
	if cfg.DuplicateWindow < 0 {
		return nil, fmt.Errorf("record: duplicate window %v, want >= 0", cfg.DuplicateWindow)
	}
	sc := jetstream.StreamConfig{
		Name:        "DPRL_LEDGER_" + cfg.Name,
		Description: "dprl ledger of record " + cfg.Name,
		Subjects:    []string{"dprl.ledger." + cfg.Name},
		Retention:   jetstream.LimitsPolicy,
		MaxMsgs:     -1,
		MaxBytes:    -1,
		MaxAge:      0,
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
		Duplicates:  cfg.DuplicateWindow,
		Discard:     jetstream.DiscardNew,
		DenyDelete:  true,
		DenyPurge:   true,
	}
	bc := blobStreamConfig(cfg)
	var last error
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		st, err := js.CreateOrUpdateStream(actx, sc)
		var blobs jetstream.Stream
		if err == nil {
			blobs, err = js.CreateOrUpdateStream(actx, bc)
		}
		cancel()
		if err == nil {
			return &Log{stream: st, js: js, name: sc.Name, subject: sc.Subjects[0], blobs: blobs, blobName: bc.Name, blobSubject: bc.Subjects[0]}, nil
		}
		last = err
		if !retryable(err) {
			return nil, fmt.Errorf("record: open %s: %w", sc.Name, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("record: open %s: %w (last: %v)", sc.Name, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// attemptTimeout bounds one request: a request lost while the cluster
// elects a leader is sent again rather than waited on until ctx ends.
const attemptTimeout = 2 * time.Second

// retryable reports an error a cluster gives while it elects leaders or
// a server restarts: the operation may succeed if tried again.
func retryable(err error) bool {
	var api *jetstream.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode {
		case 10005, // no suitable peers for placement (a peer not yet seen, or offline)
			10008, // JetStream cluster temporarily unavailable
			10009, // JetStream system temporarily unavailable
			10158: // duplicate message id is in process
			return true
		}
		return false
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled) || isTimeout(err)
}

// isTimeout reports a request that got no answer in time or found no
// server to answer it (a server restarting).
func isTimeout(err error) bool {
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrConnectionReconnecting)
}

// fenced reports the refusal of an expected-sequence header: code 10071,
// or 10164 on a replicated stream.
func fenced(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && (api.ErrorCode == 10071 || api.ErrorCode == 10164)
}

// Append writes data at position after+1, after being the position of the
// last entry the writer has read (0 for an empty log), with id naming
// this append (the same id for every retry of the same entry; an entry's
// digest is a good id). It returns the entry's position.
//
// It retries, with the same id, what may not have reached the stream
// (timeouts, leader elections, an id still in process) until ctx ends. A
// refusal of the position is checked against the log: if the entry at
// after+1 carries id, it is this append's own earlier attempt and Append
// returns its position; if no entry is there yet (a replicated stream's
// occasional spurious refusal) it tries again; otherwise it returns
// ErrFenced.
func (l *Log) Append(ctx context.Context, after uint64, id string, data []byte) (uint64, error) {
	if id == "" {
		return 0, errors.New("record: append without an id")
	}
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		ack, err := l.js.Publish(actx, l.subject, data, jetstream.WithExpectLastSequencePerSubject(after), jetstream.WithMsgID(id))
		cancel()
		if err == nil {
			if ack.Sequence != after+1 {
				// A duplicate of an append that landed elsewhere: the id
				// was reused for a different position.
				return ack.Sequence, fmt.Errorf("record: id %q already holds position %d, not %d", id, ack.Sequence, after+1)
			}
			return ack.Sequence, nil
		}
		switch {
		case fenced(err):
			actx, cancel := context.WithTimeout(ctx, attemptTimeout)
			m, gerr := l.getMsg(actx, after+1)
			cancel()
			switch {
			case gerr == nil && m.Header.Get(jetstream.MsgIDHeader) == id:
				return after + 1, nil
			case gerr == nil:
				return 0, fmt.Errorf("%w: position %d", ErrFenced, after+1)
			case !errors.Is(gerr, jetstream.ErrMsgNotFound) && !retryable(gerr):
				return 0, fmt.Errorf("record: read position %d after a refusal: %w", after+1, gerr)
			}
			// Nothing at after+1 (yet): retry.
		case !retryable(err):
			return 0, fmt.Errorf("record: append at %d: %w", after+1, err)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("record: append at %d: %w (last: %v)", after+1, ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Last returns the position of the last entry (0 for an empty log),
// retrying through leader elections until ctx ends.
func (l *Log) Last(ctx context.Context) (uint64, error) {
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		var info *jetstream.StreamInfo
		st, err := l.bound(actx)
		if err == nil {
			info, err = st.Info(actx)
		}
		cancel()
		if err == nil {
			return info.State.LastSeq, nil
		}
		if st == nil && errors.Is(err, jetstream.ErrStreamNotFound) {
			return 0, nil // a reader's log no learner has created yet: empty
		}
		if !retryable(err) {
			return 0, fmt.Errorf("record: stream info: %w", err)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("record: stream info: %w (last: %v)", ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Entry is one entry of the log.
type Entry struct {
	Position uint64
	ID       string
	Data     []byte
}

// Read calls fn with the entries from position from (>= 1) to the last
// one at the time of the call, in order, stopping at fn's first error. It
// fetches one entry per request, retrying through leader elections until
// ctx ends.
func (l *Log) Read(ctx context.Context, from uint64, fn func(Entry) error) error {
	if from < 1 {
		return fmt.Errorf("record: read from position %d, want >= 1", from)
	}
	last, err := l.Last(ctx)
	if err != nil {
		return err
	}
	return l.readTo(ctx, from, last, fn)
}

// readTo is Read up to position last.
func (l *Log) readTo(ctx context.Context, from, last uint64, fn func(Entry) error) error {
	for p := from; p <= last; p++ {
		m, err := l.get(ctx, p)
		if err != nil {
			return err
		}
		if err := fn(Entry{Position: p, ID: m.Header.Get(jetstream.MsgIDHeader), Data: m.Data}); err != nil {
			return err
		}
	}
	return nil
}

// get returns the message at position p, retrying what may succeed.
func (l *Log) get(ctx context.Context, p uint64) (*jetstream.RawStreamMsg, error) {
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		m, err := l.getMsg(actx, p)
		cancel()
		switch {
		case err == nil:
			return m, nil
		case errors.Is(err, jetstream.ErrMsgNotFound):
			return nil, fmt.Errorf("record: position %d is missing (the log has a gap)", p)
		case !retryable(err):
			return nil, fmt.Errorf("record: read position %d: %w", p, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("record: read position %d: %w (last: %v)", p, ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// getMsg returns the message at position p (one request).
func (l *Log) getMsg(ctx context.Context, p uint64) (*jetstream.RawStreamMsg, error) {
	st, err := l.bound(ctx)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, jetstream.ErrMsgNotFound
	}
	if err != nil {
		return nil, err
	}
	return st.GetMsg(ctx, p)
}
