package stream

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// DefaultPrefix is the subject prefix used when none is configured.
const DefaultPrefix = "dprl"

// QueueGroup is the queue group of the act subscription.
const QueueGroup = "dprl"

// Subjects of protocol v1 under a prefix.
func actSubject(prefix string) string    { return prefix + ".v1.act" }
func endSubject(prefix string) string    { return prefix + ".v1.end" }
func policySubject(prefix string) string { return prefix + ".v1.policy" }

// protocolSubject reports whether subj is under prefix: one of the
// protocol's subjects, never a reply inbox. A request whose reply subject is
// one (e.g. <p>.v1.policy) is neither handled nor answered: the answer would
// be published there under the agent's identity, which alone may publish
// policy announcements.
func protocolSubject(prefix, subj string) bool {
	return strings.HasPrefix(subj, prefix+".") || subj == prefix
}

// Handler is what a server serves: the agent implements it. Requests are
// already validated. A returned *Error is sent with its code and message;
// any other error is sent as internal with a generic message (and logged),
// so internal details never reach clients. A panic is recovered, logged and
// answered with ErrInternal. The request (its Obs and Reward included) is the
// handler's to keep; the reply is encoded before the next request is read.
type Handler interface {
	Act(ctx context.Context, req ActRequest) (ActReply, error)
	End(ctx context.Context, req EndRequest) (EndReply, error)
}

// HandlerFuncs adapts two functions to a Handler (the HandlerFunc pattern for
// a two-method interface). A nil function answers with ErrInternal.
type HandlerFuncs struct {
	ActFunc func(ctx context.Context, req ActRequest) (ActReply, error)
	EndFunc func(ctx context.Context, req EndRequest) (EndReply, error)
}

// Act calls ActFunc.
func (h HandlerFuncs) Act(ctx context.Context, req ActRequest) (ActReply, error) {
	if h.ActFunc == nil {
		return ActReply{}, ErrInternal
	}
	return h.ActFunc(ctx, req)
}

// End calls EndFunc.
func (h HandlerFuncs) End(ctx context.Context, req EndRequest) (EndReply, error) {
	if h.EndFunc == nil {
		return EndReply{}, ErrInternal
	}
	return h.EndFunc(ctx, req)
}

// ServerConfig describes a server.
type ServerConfig struct {
	// Prefix is the subject prefix. The default is DefaultPrefix.
	Prefix string
	// ObsDim is the exact observation length the agent accepts; required (> 0).
	ObsDim int
	// Limits bound the accepted messages; zero fields take their defaults.
	Limits Limits
	// ActWorkers is the number of act subscriptions in the queue group on
	// this connection; each is served serially on its own goroutine, so
	// this many act requests are handled at once. 0 means 1. The handler
	// must be safe for concurrent use when it is above 1.
	ActWorkers int
	// Logger receives handler failures and panics. The zero value, like
	// zerolog.Nop(), logs nothing. Ids, observations and rewards are never
	// logged. Lines caused by requests are rate-limited (a burst of
	// LogBurst per LogPeriod, the rest dropped), so that a client cannot
	// flood the log; count with OnErrorReply and OnNoReply instead.
	Logger zerolog.Logger
	// OnErrorReply, when set, is called once for every error reply the
	// server sends or, for a request without a reply subject, would have
	// sent: decoding failures and handler errors alike. op is "act" or
	// "end". It must be fast and safe for concurrent use (a metrics
	// counter).
	OnErrorReply func(op string, code Code)
	// Partitions, when > 0, is the partition count of a cluster's session
	// subjects (PartitionMappings): the server then serves only the
	// partitions added with AddPartition, and nothing else. 0 serves
	// <prefix>.v1.act and .end and their session forms.
	Partitions int
	// OnNoReply, when set, is called for every request that arrives
	// without a reply subject. Such an act request is dropped unhandled
	// (nobody would receive its action, which the session would record as
	// taken); such an end request is handled (it closes the session) and
	// not answered. Neither is logged.
	OnNoReply func(op string)
}

// Request-caused log lines: at most LogBurst per LogPeriod per server.
const (
	LogBurst  = 10
	LogPeriod = time.Minute
)

// ReplyOrigin returns the identity of the connection that sent a request,
// as far as the request's reply subject shows it: the reply subject
// without its last token ("_INBOX.<nuid>" for nats.go's default request
// style, whose reply subjects are "_INBOX.<nuid>.<token>" with one <nuid>
// per connection, kept across reconnects; "<prefix>.<nuid>" with a custom
// inbox prefix), or its first two tokens for a reply rewritten by a NATS
// service import ("_R_.<account prefix>.<token>..."; one identity per
// importing account). "" when there is no reply subject.
//
// Limits: the reply subject is chosen by the client, so a client can
// claim any identity — a fresh one per request, or another client's. The
// identity is fit for limits against accidental or naive floods (an agent
// also bounds what all clients together may hold), not for authorization.
// Clients using the old request style (a new "_INBOX.<nuid>" subscription
// per request) all show the identity "_INBOX" and share its limits.
func ReplyOrigin(reply string) string {
	if strings.HasPrefix(reply, "_R_.") {
		rest := reply[len("_R_."):]
		if i := strings.IndexByte(rest, '.'); i >= 0 {
			return reply[:len("_R_.")+i]
		}
		return reply
	}
	if i := strings.LastIndexByte(reply, '.'); i >= 0 {
		return reply[:i]
	}
	return reply
}

// Server serves protocol v1 on a NATS connection. Create it with Serve.
type Server struct {
	nc     *nats.Conn
	h      Handler
	cfg    ServerConfig
	log    zerolog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	subs   []*nats.Subscription
	closed []chan struct{}

	mu      sync.Mutex                   // guards parts and stopped
	parts   map[int][]*nats.Subscription // partition -> its subscriptions
	stopped bool

	stopOnce sync.Once
	stopErr  error
}

// Serve validates cfg, subscribes to <prefix>.v1.act (queue group "dprl") and
// <prefix>.v1.end on nc, and to their session forms <prefix>.v1.act.* and
// <prefix>.v1.end.* (queue group "dprl"; see SessionToken), and serves h
// until Stop is called or ctx is done. With cfg.Partitions > 0 it
// subscribes to nothing until AddPartition.
// ctx is also the parent of the context handlers receive.
//
// Messages of one subject are handled one at a time, in the order they
// arrive (NATS delivers each subscription's messages on one goroutine); run
// several servers in the queue group for parallel act serving.
func Serve(ctx context.Context, nc *nats.Conn, h Handler, cfg ServerConfig) (*Server, error) {
	if nc == nil || h == nil {
		return nil, errors.New("stream: serve: nil connection or handler")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.ObsDim <= 0 {
		return nil, fmt.Errorf("stream: serve: ObsDim %d must be > 0", cfg.ObsDim)
	}
	if cfg.Partitions < 0 || cfg.Partitions > MaxPartitions {
		return nil, fmt.Errorf("stream: serve: %d partitions, want 0 to %d", cfg.Partitions, MaxPartitions)
	}
	cfg.Limits = cfg.Limits.withDefaults()
	s := &Server{nc: nc, h: h, cfg: cfg, log: cfg.Logger.With().Str("component", "stream").Logger(), parts: map[int][]*nats.Subscription{}}
	s.log = s.log.Sample(&zerolog.BurstSampler{Burst: LogBurst, Period: LogPeriod})
	s.ctx, s.cancel = context.WithCancel(ctx)
	if cfg.Partitions == 0 {
		subs, err := s.subscribe(actSubject(cfg.Prefix), actSubject(cfg.Prefix)+".*", endSubject(cfg.Prefix), endSubject(cfg.Prefix)+".*")
		s.subs = subs
		if err != nil {
			s.Stop()
			return nil, err
		}
	}
	if err := nc.Flush(); err != nil {
		s.Stop()
		return nil, fmt.Errorf("stream: serve: %w", err)
	}
	go func() {
		<-s.ctx.Done()
		s.Stop()
	}()
	return s, nil
}

// subscribe subscribes the act subjects (ActWorkers times each, in the
// queue group) and the end subjects (once each, in the queue group when
// they are session subjects) given as act..., end... (half of subjs each),
// returning what it subscribed, up to the first error.
func (s *Server) subscribe(subjs ...string) ([]*nats.Subscription, error) {
	var subs []*nats.Subscription
	acts, ends := subjs[:len(subjs)/2], subjs[len(subjs)/2:]
	for _, subj := range acts {
		for w := 0; w < max(s.cfg.ActWorkers, 1); w++ {
			var buf []byte // act replies are encoded here: each act callback is serial
			var req ActRequest
			sub, err := s.sub(subj, QueueGroup, func(m *nats.Msg) { buf = s.handleAct(m, &req, buf) })
			if err != nil {
				return subs, err
			}
			subs = append(subs, sub)
		}
	}
	for _, subj := range ends {
		queue := QueueGroup
		if subj == endSubject(s.cfg.Prefix) {
			queue = "" // as ever: every agent on the prefix sees every plain end
		}
		sub, err := s.sub(subj, queue, s.handleEnd)
		if err != nil {
			return subs, err
		}
		subs = append(subs, sub)
	}
	return subs, nil
}

func (s *Server) sub(subj, queue string, cb nats.MsgHandler) (*nats.Subscription, error) {
	sub, err := s.nc.QueueSubscribe(subj, queue, cb)
	if err != nil {
		return nil, fmt.Errorf("stream: subscribe %s: %w", subj, err)
	}
	done := make(chan struct{})
	sub.SetClosedHandler(func(string) { close(done) })
	s.mu.Lock()
	s.closed = append(s.closed, done)
	s.mu.Unlock()
	return sub, nil
}

// AddPartition starts serving partition i of the session subjects
// (ServerConfig.Partitions > 0): its holder calls it once it holds i.
// Adding a partition served already does nothing.
func (s *Server) AddPartition(i int) error {
	if s.cfg.Partitions == 0 || i < 0 || i >= s.cfg.Partitions {
		return fmt.Errorf("stream: partition %d of %d", i, s.cfg.Partitions)
	}
	s.mu.Lock()
	_, held := s.parts[i]
	stopped := s.stopped
	s.mu.Unlock()
	if held || stopped {
		return nil
	}
	p := s.cfg.Prefix
	subs, err := s.subscribe(partitionSubject(p, i, "act"), partitionSubject(p, i, "end"))
	if err == nil {
		err = s.nc.Flush()
	}
	if err != nil {
		for _, sub := range subs {
			_ = sub.Unsubscribe()
		}
		return fmt.Errorf("stream: partition %d: %w", i, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		for _, sub := range subs {
			_ = sub.Unsubscribe()
		}
		return nil
	}
	s.parts[i] = subs
	return nil
}

// RemovePartition stops serving partition i: no request of it sent after
// it returns reaches this server, those received are answered. Its holder calls it before it gives
// the partition up (or when it lost it).
func (s *Server) RemovePartition(i int) error {
	s.mu.Lock()
	subs := s.parts[i]
	delete(s.parts, i)
	s.mu.Unlock()
	var errs []error
	for _, sub := range subs {
		if err := sub.Drain(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(subs) > 0 {
		// The server has processed the unsubscriptions once it answers
		// a flush: no request of the partition reaches this server after
		// RemovePartition returns.
		errs = append(errs, s.nc.Flush())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stream: partition %d: %w", i, err)
	}
	return nil
}

// ServedPartitions returns the partitions served, in increasing order.
func (s *Server) ServedPartitions() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int, 0, len(s.parts))
	for i := range s.parts {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// Stop drains the subscriptions: no new requests are taken, requests already
// received are handled and answered, then it returns. It is idempotent and
// safe for concurrent use; it does not close the connection. Handler
// contexts are cancelled after the drain. Calling Stop from inside a
// handler deadlocks (the drain waits for that handler); cancel the Serve
// context instead, which stops the server asynchronously.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.stopped = true
		subs := slices.Clone(s.subs)
		for _, ps := range s.parts {
			subs = append(subs, ps...)
		}
		s.parts = map[int][]*nats.Subscription{}
		closed := slices.Clone(s.closed)
		s.mu.Unlock()
		for _, sub := range subs {
			if err := sub.Drain(); err != nil && s.stopErr == nil {
				s.stopErr = fmt.Errorf("stream: drain: %w", err)
			}
		}
		if s.stopErr == nil {
			for _, c := range closed {
				<-c
			}
		}
		s.cancel()
	})
	return s.stopErr
}

func (s *Server) respond(m *nats.Msg, body []byte) {
	if m.Reply == "" {
		return // counted on arrival (OnNoReply)
	}
	if err := m.Respond(body); err != nil {
		s.log.Error().Err(err).Str("subject", m.Subject).Msg("reply failed")
	}
}

// replyErr sends err as an error body, turning non-protocol errors into
// internal, and counts it.
func (s *Server) replyErr(m *nats.Msg, op string, buf []byte, err error) []byte {
	var e *Error
	if !errors.As(err, &e) {
		s.log.Error().Err(err).Str("subject", m.Subject).Msg("handler failed")
		e = ErrInternal
	}
	if s.cfg.OnErrorReply != nil {
		s.cfg.OnErrorReply(op, e.Code)
	}
	buf = AppendError(buf[:0], e)
	s.respond(m, buf)
	return buf
}

// recoverTo turns a handler panic into an internal error reply.
func (s *Server) recoverTo(m *nats.Msg, op string) {
	if p := recover(); p != nil {
		s.log.Error().Str("subject", m.Subject).Str("panic", fmt.Sprint(p)).Bytes("stack", debug.Stack()).Msg("handler panicked")
		s.replyErr(m, op, nil, ErrInternal)
	}
}

func (s *Server) handleAct(m *nats.Msg, req *ActRequest, buf []byte) (out []byte) {
	out = buf
	if protocolSubject(s.cfg.Prefix, m.Reply) {
		return out
	}
	if m.Reply == "" {
		if s.cfg.OnNoReply != nil {
			s.cfg.OnNoReply("act")
		}
		return out
	}
	defer s.recoverTo(m, "act")
	if err := DecodeActInto(req, m.Data, s.cfg.Limits, s.cfg.ObsDim); err != nil {
		return s.replyErr(m, "act", buf, err)
	}
	if err := s.checkSubject(m.Subject, req.Session); err != nil {
		return s.replyErr(m, "act", buf, err)
	}
	// The handler gets its own copy of the observation: req.Obs is reused.
	r := *req
	r.Obs = append([]float64(nil), req.Obs...)
	if req.Reward != nil {
		v := *req.Reward
		r.Reward = &v
	}
	r.Origin = ReplyOrigin(m.Reply)
	rep, err := s.h.Act(s.ctx, r)
	if err != nil {
		return s.replyErr(m, "act", buf, err)
	}
	out, err = AppendActReply(buf[:0], rep)
	if err != nil {
		// A handler bug, not the client's fault: internal, not non_finite.
		s.log.Error().Err(err).Msg("handler returned an unencodable act reply")
		return s.replyErr(m, "act", out, ErrInternal)
	}
	s.respond(m, out)
	return out
}

func (s *Server) handleEnd(m *nats.Msg) {
	if protocolSubject(s.cfg.Prefix, m.Reply) {
		return
	}
	if m.Reply == "" && s.cfg.OnNoReply != nil {
		s.cfg.OnNoReply("end")
	}
	defer s.recoverTo(m, "end")
	req, err := DecodeEnd(m.Data, s.cfg.Limits)
	if err == nil {
		if e := s.checkSubject(m.Subject, req.Session); e != nil {
			err = e
		}
	}
	if err != nil {
		s.replyErr(m, "end", nil, err)
		return
	}
	req.Origin = ReplyOrigin(m.Reply)
	rep, err := s.h.End(s.ctx, req)
	if err != nil {
		s.replyErr(m, "end", nil, err)
		return
	}
	s.respond(m, AppendEndReply(nil, rep))
}

// AppendEndReply appends the JSON encoding of r to dst; reason is omitted
// when empty.
func AppendEndReply(dst []byte, r EndReply) []byte {
	dst = append(dst, `{"ok":`...)
	dst = strconv.AppendBool(dst, r.OK)
	dst = append(dst, `,"used":`...)
	dst = strconv.AppendBool(dst, r.Used)
	if r.Reason != "" {
		dst = append(dst, `,"reason":`...)
		dst = appendString(dst, r.Reason)
	}
	return append(dst, '}')
}

// PublishPolicy publishes a policy announcement on <prefix>.v1.policy
// (prefix "" means DefaultPrefix).
func PublishPolicy(nc *nats.Conn, prefix string, p PolicyAnnouncement) error {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	b, err := EncodePolicy(p)
	if err != nil {
		return err
	}
	if err := nc.Publish(policySubject(prefix), b); err != nil {
		return fmt.Errorf("stream: publish policy: %w", err)
	}
	return nil
}
