package agent

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// shutdownNotice tracks, once Shutdown has begun, which of the sessions
// open at that moment have been told of it. A session is told when a
// request answered ErrShuttingDown names it or comes from the connection
// that opened it (stream.ReplyOrigin): the notice reaches the client, which
// then knows for all of its sessions. The service keeps its subscriptions
// answering until all were told (or its grace period ends), so that clients
// learn of the shutdown from a coded reply rather than from "no
// responders". (A client can claim another connection's identity and so
// end the wait early for it; that costs the other client its coded reply,
// nothing else.)
type shutdownNotice struct {
	once    sync.Once
	mu      sync.Mutex
	untold  map[string]map[*session]struct{} // by the opening connection ("" in-process)
	n       int                              // sessions in untold
	allTold chan struct{}                    // closed when n reaches 0
	start   time.Time                        // when Shutdown began (monotonic clock)
	last    atomic.Int64                     // the last refused request, in nanoseconds after start
}

// Shutdown stops accepting work: from now on every act and end request is
// answered ErrShuttingDown (wire code shutting_down), and the sessions open
// now are recorded so that AwaitShutdownNotice can tell when each of them
// has been told so. Open sessions are neither learned from nor logged.
// Call it before draining the transport, then cancel Run's context. It is
// idempotent.
func (a *Agent) Shutdown() {
	n := &a.notice
	n.once.Do(func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.start = time.Now()
		n.allTold = make(chan struct{})
		a.closing.Store(true)
		n.untold = make(map[string]map[*session]struct{})
		// Every session: none was seen after the largest time.
		for _, s := range a.table.expired(math.MaxInt64, 0) {
			g := n.untold[s.origin]
			if g == nil {
				g = make(map[*session]struct{})
				n.untold[s.origin] = g
			}
			g[s] = struct{}{}
			n.n++
		}
		if n.n == 0 {
			close(n.allTold)
		}
	})
}

// refused records a request answered ErrShuttingDown: from origin (""
// in-process), naming session s (nil for none: a new session, or one the
// table does not hold).
func (a *Agent) refused(origin string, s *session) {
	n := &a.notice
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.untold == nil {
		return // Shutdown has not finished recording: it holds n.mu
	}
	n.last.Store(int64(time.Since(n.start)))
	if n.n == 0 {
		return
	}
	if s != nil {
		if g := n.untold[s.origin]; g != nil {
			if _, ok := g[s]; ok {
				delete(g, s)
				n.n--
			}
		}
	}
	if origin != "" { // the client of this connection knows
		n.n -= len(n.untold[origin])
		delete(n.untold, origin)
	}
	if n.n == 0 {
		close(n.allTold)
	}
}

// AwaitShutdownNotice waits, after Shutdown, until every session open at
// Shutdown has been told (see shutdownNotice) and then no request has
// arrived for quiet, or until ctx is done; it reports whether the first
// happened. A session closed meanwhile (by the idle sweeper) whose client
// was not told, and a client that never sends again, keep it waiting until
// ctx is done. Before Shutdown it returns false at once.
func (a *Agent) AwaitShutdownNotice(ctx context.Context, quiet time.Duration) bool {
	n := &a.notice
	n.mu.Lock()
	told := n.allTold
	n.mu.Unlock()
	if told == nil {
		return false
	}
	select {
	case <-told:
	case <-ctx.Done():
		return false
	}
	for {
		idle := time.Since(n.start) - time.Duration(n.last.Load())
		if idle >= quiet {
			return true
		}
		t := time.NewTimer(quiet - idle)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
}

// Untold is the number of sessions open at Shutdown that have not yet been
// told of it (0 before Shutdown).
func (a *Agent) Untold() int {
	n := &a.notice
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.n
}
