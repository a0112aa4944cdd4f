package updateq

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Config describes a model's update queue.
type Config struct {
	// Name names the model: the stream is "DPRL_UPDATES_" + Name, the
	// subject "dprl.updates." + Name (letters, digits, '-' and '_').
	Name string
	// Replicas is the stream's replication factor (1 to 5).
	Replicas int
	// MaxAge drops an update not consumed within it (0: ten minutes); by
	// then the policy it was computed at is long replaced.
	MaxAge time.Duration
	// MaxValues bounds an update's values (the model's parameters).
	MaxValues int
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Queue is a model's update queue.
type Queue struct {
	js        jetstream.JetStream
	stream    jetstream.Stream // nil for a publisher (OpenPublisher)
	subject   string
	maxValues int
	buf       []byte
}

// attemptTimeout bounds one request.
const attemptTimeout = 2 * time.Second

// Open creates the queue's stream or binds to it, retrying through
// leader elections until ctx ends.
func Open(ctx context.Context, js jetstream.JetStream, cfg Config) (*Queue, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	maxAge := cfg.MaxAge
	if maxAge == 0 {
		maxAge = 10 * time.Minute
	}
	sc := jetstream.StreamConfig{
		Name:        "DPRL_UPDATES_" + cfg.Name,
		Description: "dprl clipped per-session updates of model " + cfg.Name + " (un-noised: learner role only)",
		Subjects:    []string{"dprl.updates." + cfg.Name},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.MemoryStorage,
		Replicas:    cfg.Replicas,
		MaxAge:      maxAge,
		MaxMsgSize:  int32(headerLen + MaxSessionID + 8*cfg.MaxValues),
		Discard:     jetstream.DiscardNew,
	}
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		st, err := js.CreateOrUpdateStream(actx, sc)
		cancel()
		if err == nil {
			return &Queue{js: js, stream: st, subject: sc.Subjects[0], maxValues: cfg.MaxValues}, nil
		}
		if !retryable(err) {
			return nil, fmt.Errorf("updateq: open %s: %w", sc.Name, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("updateq: open %s: %w (last: %v)", sc.Name, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// check reports what is wrong with cfg.
func (cfg Config) check() error {
	switch {
	case !namePattern.MatchString(cfg.Name):
		return fmt.Errorf("updateq: name %q: want 1 to 64 letters, digits, '-' or '_'", cfg.Name)
	case cfg.Replicas < 1 || cfg.Replicas > 5:
		return fmt.Errorf("updateq: %d replicas, want 1 to 5", cfg.Replicas)
	case cfg.MaxAge < 0:
		return fmt.Errorf("updateq: max age %v, want >= 0", cfg.MaxAge)
	case cfg.MaxValues < 1:
		return fmt.Errorf("updateq: at most %d values, want >= 1", cfg.MaxValues)
	}
	return nil
}

// OpenPublisher returns the queue of a process that only publishes to it
// (a serving replica), without asking the server anything: a replica's
// NATS permissions let it publish on the queue's subject and nothing else
// of the queue (stream.ReplicaPermissions), since the updates it holds are
// clipped but un-noised and only the learner role may read them. Its
// Consumer fails; Publish retries until a learner has created the stream
// (Open). cfg.Replicas and MaxAge are not used.
func OpenPublisher(js jetstream.JetStream, cfg Config) (*Queue, error) {
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return &Queue{js: js, subject: "dprl.updates." + cfg.Name, maxValues: cfg.MaxValues}, nil
}

// retryable reports an error a cluster gives while it elects leaders.
func retryable(err error) bool {
	var api *jetstream.APIError
	if errors.As(err, &api) {
		// 10005: no suitable peers for placement (a peer not yet seen, or
		// offline); 10008, 10009: temporarily unavailable; 10158: an id
		// still in process.
		return api.ErrorCode == 10005 || api.ErrorCode == 10008 || api.ErrorCode == 10009 || api.ErrorCode == 10158
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrConnectionReconnecting)
}

// Publish queues u under its session id, retrying until ctx ends; a
// session already queued within the duplicate window is not queued again.
// It is not safe for concurrent use (it reuses a buffer).
func (q *Queue) Publish(ctx context.Context, u *Update) error {
	if err := u.Check(q.maxValues); err != nil {
		return err
	}
	q.buf = u.AppendBinary(q.buf[:0])
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		_, err := q.js.Publish(actx, q.subject, q.buf, jetstream.WithMsgID(u.Session))
		cancel()
		if err == nil {
			return nil
		}
		if !retryable(err) {
			return fmt.Errorf("updateq: publish session %q: %w", u.Session, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("updateq: publish session %q: %w (last: %v)", u.Session, ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Consumer is the learner's durable pull consumer of the queue: every
// update is delivered to one learner at a time and redelivered after
// AckWait unless acknowledged.
type Consumer struct {
	q    *Queue
	cons jetstream.Consumer
}

// Consumer creates or binds the durable consumer name, with redelivery
// after ackWait.
func (q *Queue) Consumer(ctx context.Context, name string, ackWait time.Duration) (*Consumer, error) {
	if !namePattern.MatchString(name) || ackWait <= 0 {
		return nil, fmt.Errorf("updateq: consumer %q with ack wait %v", name, ackWait)
	}
	if q.stream == nil {
		return nil, errors.New("updateq: a publisher's queue has no consumer (Open it)")
	}
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		c, err := q.stream.CreateOrUpdateConsumer(actx, jetstream.ConsumerConfig{
			Durable: name, AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxAckPending: -1,
			DeliverPolicy: jetstream.DeliverAllPolicy,
		})
		cancel()
		if err == nil {
			return &Consumer{q: q, cons: c}, nil
		}
		if !retryable(err) {
			return nil, fmt.Errorf("updateq: consumer %s: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("updateq: consumer %s: %w (last: %v)", name, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Msg is one delivered update and its acknowledgement.
type Msg struct {
	Update Update
	msg    jetstream.Msg
}

// Ack removes the update from the queue: call it once the release that
// used it is in the ledger of record, or to drop it (a stale version).
func (m *Msg) Ack(ctx context.Context) error {
	actx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	return m.msg.DoubleAck(actx)
}

// AckAsync is Ack without waiting for the server's confirmation: an
// acknowledgement lost on the way leaves the update to be redelivered
// after the ack wait, which a learner drops as a session already used.
// It costs no round trip, so a batch is acknowledged at once.
func (m *Msg) AckAsync() error { return m.msg.Ack() }

// Nak returns the update to the queue, to be redelivered after delay
// (the learner had no room for it).
func (m *Msg) Nak(ctx context.Context, delay time.Duration) error {
	return m.msg.NakWithDelay(delay)
}

// Fetch returns up to max updates, waiting at most wait for the first.
// A malformed message is removed from the queue (it can never be used)
// and reported in bad.
func (c *Consumer) Fetch(max int, wait time.Duration) (msgs []*Msg, bad []error, err error) {
	batch, err := c.cons.Fetch(max, jetstream.FetchMaxWait(wait))
	if err != nil {
		return nil, nil, fmt.Errorf("updateq: fetch: %w", err)
	}
	for m := range batch.Messages() {
		u := &Msg{msg: m}
		if err := Decode(m.Data(), &u.Update, c.q.maxValues); err != nil {
			bad = append(bad, err)
			_ = m.Term()
			continue
		}
		msgs = append(msgs, u)
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		return msgs, bad, fmt.Errorf("updateq: fetch: %w", err)
	}
	return msgs, bad, nil
}
