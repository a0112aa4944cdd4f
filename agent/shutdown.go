package agent

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// shutdownNotice tracks, once Shutdown has begun, which of the sessions
// open at that moment have been told: a request of theirs answered
// ErrShuttingDown. The service keeps its subscriptions answering until all
// were told (or its grace period ends), so that clients learn of the
// shutdown from a coded reply rather than from "no responders".
type shutdownNotice struct {
	once    sync.Once
	mu      sync.Mutex
	untold  map[*session]struct{}
	allTold chan struct{} // closed when untold empties
	start   time.Time     // when Shutdown began (monotonic clock)
	last    atomic.Int64  // the last refused request, in nanoseconds after start
}

// Shutdown stops accepting work: from now on every act and end request is
// answered ErrShuttingDown (wire code shutting_down), and the sessions open
// now are recorded so that AwaitShutdownNotice can tell when each of them
// has been answered so. Open sessions are neither learned from nor logged.
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
		// Every session: none was seen after the largest time.
		open := a.table.expired(math.MaxInt64, 0)
		n.untold = make(map[*session]struct{}, len(open))
		for _, s := range open {
			n.untold[s] = struct{}{}
		}
		if len(n.untold) == 0 {
			close(n.allTold)
		}
	})
}

// refused records a request answered ErrShuttingDown; s is the session it
// names, nil for none (a new session, or one the table does not hold).
func (a *Agent) refused(s *session) {
	n := &a.notice
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.untold == nil {
		return // Shutdown has not finished recording: it holds n.mu
	}
	n.last.Store(int64(time.Since(n.start)))
	if _, ok := n.untold[s]; ok {
		delete(n.untold, s)
		if len(n.untold) == 0 {
			close(n.allTold)
		}
	}
}

// AwaitShutdownNotice waits, after Shutdown, until every session open at
// Shutdown has had a request answered ErrShuttingDown and then no request
// has arrived for quiet, or until ctx is done; it reports whether the
// first happened. A session closed meanwhile (by the idle sweeper) and a
// client that never sends again keep it waiting until ctx is done. Before
// Shutdown it returns false at once.
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

// Untold is the number of sessions open at Shutdown that have not yet had
// a request answered ErrShuttingDown (0 before Shutdown).
func (a *Agent) Untold() int {
	n := &a.notice
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.untold)
}
