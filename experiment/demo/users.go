package demo

import (
	"context"
	"slices"
	"sync"
	"time"

	"dprl/sims"
)

// latencyWindow is the number of latest act latencies kept for the
// quantiles.
const latencyWindow = 20000

// latencies keeps the last latencyWindow client-side act latencies and
// counts all of them.
type latencies struct {
	mu  sync.Mutex
	buf []time.Duration
	i   int
	n   int64
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	if len(l.buf) < latencyWindow {
		l.buf = append(l.buf, d)
	} else {
		l.buf[l.i] = d
		l.i = (l.i + 1) % len(l.buf)
	}
	l.n++
	l.mu.Unlock()
}

// count is the number of latencies recorded.
func (l *latencies) count() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// quantiles returns the qs-quantiles of the kept latencies in milliseconds,
// at microsecond resolution (all 0 before the first one).
func (l *latencies) quantiles(qs ...float64) []float64 {
	l.mu.Lock()
	s := slices.Clone(l.buf)
	l.mu.Unlock()
	out := make([]float64, len(qs))
	if len(s) == 0 {
		return out
	}
	slices.Sort(s)
	for i, q := range qs {
		out[i] = float64(s[min(len(s)-1, int(q*float64(len(s))))].Microseconds()) / 1000
	}
	return out
}

// timedAgent is the sims.Agent of simulated users: the agent's NATS client
// (wire protocol v1), which satisfies sims.Agent itself, with every
// successful act timed as the client sees it.
type timedAgent struct {
	sims.Agent
	lat *latencies
}

// Act asks the agent for the action of one step and records its latency.
func (u timedAgent) Act(ctx context.Context, session, user string, obs []float64, reward float64, first bool) (sims.Action, error) {
	t0 := time.Now()
	act, err := u.Agent.Act(ctx, session, user, obs, reward, first)
	if err != nil {
		return act, err
	}
	u.lat.add(time.Since(t0))
	return act, nil
}

// simReturns keeps the simulated users' last 100 session returns, as the
// users measured them (simulation-only).
type simReturns struct {
	mu  sync.Mutex
	buf [100]float64
	i   int
	n   int
}

func (r *simReturns) add(x float64) {
	r.mu.Lock()
	r.buf[r.i] = x
	r.i = (r.i + 1) % len(r.buf)
	r.n = min(r.n+1, len(r.buf))
	r.mu.Unlock()
}

// mean returns the mean of the kept returns and their number.
func (r *simReturns) mean() (float64, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		return 0, 0
	}
	s := 0.0
	for _, x := range r.buf[:r.n] {
		s += x
	}
	return s / float64(r.n), r.n
}

// releaseSignal wakes waiters at every policy release announcement: the
// demo waits for releases without polling.
type releaseSignal struct {
	mu sync.Mutex
	ch chan struct{} // closed and replaced at each release
}

func newReleaseSignal() *releaseSignal { return &releaseSignal{ch: make(chan struct{})} }

// notify wakes every current waiter.
func (r *releaseSignal) notify() {
	r.mu.Lock()
	close(r.ch)
	r.ch = make(chan struct{})
	r.mu.Unlock()
}

// wait blocks until cond holds, checking it at every release, or until
// ctx is done (then it returns ctx.Err()).
func (r *releaseSignal) wait(ctx context.Context, cond func() bool) error {
	for {
		r.mu.Lock()
		ch := r.ch // taken before cond: a release after the check still wakes us
		r.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
