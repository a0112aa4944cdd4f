package agent

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"dprl/ledger"
	"dprl/sessionlog"

	"github.com/prometheus/client_golang/prometheus"
)

// session is one open user session. Its fields are guarded by mu, except
// lastSeen, which the idle sweeper reads without the lock, and the fields
// fixed at creation (id, user, origin, userKey, hasUser, ver, opened).
type session struct {
	mu      sync.Mutex
	id      string
	user    string
	origin  string // the opening connection (stream.ReplyOrigin), "" in-process
	userKey ledger.UserKey
	hasUser bool
	ver     *version
	opened  int64     // unix nanoseconds
	obs     []float64 // steps x ObsDim (plus the final observation at the step limit)
	actions []int
	cont    []float64
	logp    []float64
	rewards []float64 // one per action whose reward arrived
	// capSteps is the capacity of the step arrays in steps: obs holds
	// capSteps+1 observations, the others capSteps entries. Storage grows
	// only through Agent.growLocked, which charges the memory budget
	// first.
	capSteps int
	bytes    int64 // charged to the memory budget
	closed   bool
	// rng is the session's action stream when the agent is seeded (nil:
	// the serving context's generator).
	rng *rand.Rand

	lastSeen atomic.Int64
}

func (s *session) steps() int          { return len(s.logp) }
func (s *session) touch(now time.Time) { s.lastSeen.Store(now.UnixNano()) }

// sessionKey names a session in the table: session ids are per user, so a
// session is reachable only with the user id that opened it, and another
// user's request for the same id finds nothing (or opens its own session)
// — it learns nothing of the first.
type sessionKey struct{ user, id string }

// sessionOverhead is the memory charged for a session besides its steps:
// the struct, its entries in the table, the admission counters and the
// origin index (measured: see TestMemoryPerStep), and its ids.
// seededSessionBytes is what a seeded agent's session adds: its own action
// generator (ChaCha8 and its rand.Rand), with the allocator's rounding.
const seededSessionBytes = int64(unsafe.Sizeof(rand.ChaCha8{})+unsafe.Sizeof(rand.Rand{})) + 64

func sessionOverhead(id, user, origin string) int64 {
	return int64(unsafe.Sizeof(session{})) + 256 + int64(2*len(id)+2*len(user)+2*len(origin))
}

const shards = 64

// sessionTable is a sharded map of open sessions plus the admission state
// (open counts per user and per connection), which a session enters and
// leaves with its table entry.
type sessionTable struct {
	seed   maphash.Seed
	shards [shards]struct {
		mu sync.Mutex
		m  map[sessionKey]*session
	}
	open atomic.Int64
	adm  admission
}

// limits are the admission limits of the table.
type limits struct {
	open, perUser, perConn int
}

// admission counts open sessions per user and per connection. Its mutex is
// taken after a shard's (lock order: session, shard, admission).
type admission struct {
	mu      sync.Mutex
	perUser map[string]int
	perConn map[string]*connSessions
}

// connSessions is one connection's open sessions: their number, and those
// opened with a user id by session id, so that an end request of protocol
// v1 clients, which does not repeat the user id, can still find its session
// when it comes from the connection that opened it.
type connSessions struct {
	open int
	byID map[string][]*session
}

// admissionError says which limit refused a session; the agent counts it
// by limit and the wire carries its code.
type admissionError struct {
	limit string // "open_sessions", "user", "connection" or "memory"
	err   error
}

func (e *admissionError) Error() string { return e.err.Error() }
func (e *admissionError) Unwrap() error { return e.err }

func (t *sessionTable) init() {
	t.seed = maphash.MakeSeed()
	for i := range t.shards {
		t.shards[i].m = make(map[sessionKey]*session)
	}
	t.adm.perUser = make(map[string]int)
	t.adm.perConn = make(map[string]*connSessions)
}

func (t *sessionTable) shard(id string) int {
	return int(maphash.String(t.seed, id) % shards)
}

// getOrCreate returns the session, creating it unless hasReward (a
// continuing request for a session we do not know) or a limit refuses it.
// reserve charges the new session's memory and reports whether the budget
// allowed it; it is called only once the session limits passed.
func (t *sessionTable) getOrCreate(k sessionKey, origin string, hasReward bool, lim limits, reserve func() bool, mk func() *session) (*session, bool, error) {
	sh := &t.shards[t.shard(k.id)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if s, ok := sh.m[k]; ok {
		return s, false, nil
	}
	if hasReward {
		return nil, false, unknownSession(k.id)
	}
	t.adm.mu.Lock()
	defer t.adm.mu.Unlock()
	cs := t.adm.perConn[origin] // nil for "" (in-process callers: no per-connection limit)
	switch {
	case t.open.Load() >= int64(lim.open):
		return nil, false, &admissionError{"open_sessions", fmt.Errorf("%w: the agent's limit of %d open sessions", ErrSessionLimit, lim.open)}
	case k.user != "" && t.adm.perUser[k.user] >= lim.perUser:
		return nil, false, &admissionError{"user", fmt.Errorf("%w: this user's limit of %d open sessions", ErrSessionLimit, lim.perUser)}
	case cs != nil && cs.open >= lim.perConn:
		return nil, false, &admissionError{"connection", fmt.Errorf("%w: this connection's limit of %d open sessions", ErrSessionLimit, lim.perConn)}
	case !reserve():
		return nil, false, &admissionError{"memory", fmt.Errorf("%w: no new sessions until sessions close", ErrMemoryLimit)}
	}
	s := mk()
	sh.m[k] = s
	t.open.Add(1)
	if k.user != "" {
		t.adm.perUser[k.user]++
	}
	if origin == "" {
		return s, true, nil // in-process: no connection
	}
	if cs == nil {
		cs = &connSessions{}
		t.adm.perConn[origin] = cs
	}
	cs.open++
	if k.user != "" {
		if cs.byID == nil {
			cs.byID = make(map[string][]*session)
		}
		cs.byID[k.id] = append(cs.byID[k.id], s)
	}
	return s, true, nil
}

// unknownSession is the one error for a session that does not exist, was
// closed or belongs to another user: they are not told apart.
func unknownSession(id string) error {
	return fmt.Errorf("%w: %q (expired, ended, never started, or opened with another user id; a new session sends no reward)", ErrUnknownSession, id)
}

func (t *sessionTable) get(k sessionKey) *session {
	sh := &t.shards[t.shard(k.id)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.m[k]
}

// getForEnd finds the session an end request names. An end request that
// names no user finds an anonymous session by id or, failing that, the one
// session with that id that its own connection opened with a user id
// (protocol v1 clients do not repeat the user id on end). Everything else
// finds nothing.
func (t *sessionTable) getForEnd(id, user, origin string) *session {
	if s := t.get(sessionKey{user, id}); s != nil || user != "" || origin == "" {
		return s
	}
	t.adm.mu.Lock()
	defer t.adm.mu.Unlock()
	if cs := t.adm.perConn[origin]; cs != nil {
		if ss := cs.byID[id]; len(ss) == 1 {
			return ss[0]
		}
	}
	return nil
}

// remove deletes the session if the table still maps its key to it.
func (t *sessionTable) remove(s *session) {
	k := sessionKey{s.user, s.id}
	sh := &t.shards[t.shard(k.id)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m[k] != s {
		return
	}
	delete(sh.m, k)
	t.open.Add(-1)
	t.adm.mu.Lock()
	defer t.adm.mu.Unlock()
	if s.user != "" {
		if n := t.adm.perUser[s.user] - 1; n > 0 {
			t.adm.perUser[s.user] = n
		} else {
			delete(t.adm.perUser, s.user)
		}
	}
	cs := t.adm.perConn[s.origin]
	if cs == nil || s.origin == "" {
		return
	}
	if ss := cs.byID[s.id]; len(ss) > 0 {
		if ss = slices.DeleteFunc(ss, func(x *session) bool { return x == s }); len(ss) > 0 {
			cs.byID[s.id] = ss
		} else {
			delete(cs.byID, s.id)
		}
	}
	if cs.open--; cs.open <= 0 {
		delete(t.adm.perConn, s.origin)
	}
}

// expired returns the sessions last seen before idleCutoff or opened before
// lifeCutoff (unix nanoseconds).
func (t *sessionTable) expired(idleCutoff, lifeCutoff int64) []*session {
	var out []*session
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		for _, s := range sh.m {
			if s.lastSeen.Load() < idleCutoff || s.opened < lifeCutoff {
				out = append(out, s)
			}
		}
		sh.mu.Unlock()
	}
	return out
}

// SessionLog receives closed sessions; *sessionlog.RotatingWriter is one
// (dprl.sessions.v1 or, from dsjson.NewRotatingWriter, DSJSON). A Write
// error wrapping sessionlog.ErrUnsupported says the log's format cannot
// hold that session (nothing was written): it is counted as dropped with
// reason "unsupported", any other error with reason "write_failed". The
// agent calls Write from a single goroutine of its own, never on the
// request path.
type SessionLog interface {
	Write(*sessionlog.Session) error
}

// Default bounds of the session-log queue (Options.SessionLogQueue and
// Options.SessionLogQueueBytes).
const (
	DefaultSessionLogQueue      = 4096
	DefaultSessionLogQueueBytes = 64 << 20
)

// logQueue is the bounded queue between the request path and the session
// log: closing a session copies its record into the queue (memory only,
// under the session's mutex) and one writer goroutine drains the queue
// into the log, in the order the sessions were queued.
//
// The request path never waits for the log. When the queue is full (by
// records or by bytes), the record is dropped: the drop is counted on
// /metrics (dprl_session_log_dropped_total{reason="queue_full"}) and a
// rate-limited warning is logged. Blocking instead would let a slow disk
// stall every act and end reply, and an unbounded queue would let it
// exhaust memory; the log is the operator's audit copy, so its losses are
// never silent. A record that failed to write is counted the same way
// (reason "write_failed"), as is a session closed after the log was
// closed (reason "closed").
//
// Its mutex is taken under a session's (in closeLocked) and is never held
// during a write.
type logQueue struct {
	mu       sync.Mutex
	cond     sync.Cond
	items    []logItem
	bytes    int64 // of the queued records and the one being written
	closed   bool
	maxItems int
	maxBytes int64
	gauge    prometheus.Gauge // records waiting
	done     chan struct{}
}

// logItem is one queued record and the bytes it holds.
type logItem struct {
	rec   *sessionlog.Session
	bytes int64
}

func newLogQueue(maxItems int, maxBytes int64, gauge prometheus.Gauge) *logQueue {
	q := &logQueue{maxItems: maxItems, maxBytes: maxBytes, gauge: gauge, done: make(chan struct{})}
	q.cond.L = &q.mu
	return q
}

// push queues a record, or reports why not ("queue_full", "closed")
// without waiting. A record larger than maxBytes is taken only into an
// empty queue.
func (q *logQueue) push(it logItem) (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.closed:
		return "closed", false
	case len(q.items) >= q.maxItems || (q.bytes > 0 && q.bytes+it.bytes > q.maxBytes):
		return "queue_full", false
	}
	q.items = append(q.items, it)
	q.bytes += it.bytes
	q.gauge.Set(float64(len(q.items)))
	q.cond.Signal()
	return "", true
}

// pop waits for the next record; ok is false once the queue is closed and
// empty. written must be called with the item after writing it.
func (q *logQueue) pop() (logItem, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.items) == 0 {
		return logItem{}, false
	}
	it := q.items[0]
	q.items[0] = logItem{}
	q.items = q.items[1:]
	q.gauge.Set(float64(len(q.items)))
	return it, true
}

// written releases the bytes of a record the writer is done with.
func (q *logQueue) written(it logItem) {
	q.mu.Lock()
	q.bytes -= it.bytes
	q.mu.Unlock()
}

// close refuses further records and waits until the writer has written
// every queued one. It is idempotent.
func (q *logQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
	<-q.done
}
