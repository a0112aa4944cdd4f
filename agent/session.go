package agent

import (
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"dprl/ledger"
)

// session is one open user session. Its fields are guarded by mu, except
// lastSeen, which the idle sweeper reads without the lock.
type session struct {
	mu      sync.Mutex
	id      string
	user    string
	userKey ledger.UserKey
	hasUser bool
	ver     *version
	obs     []float64 // steps x ObsDim (plus the final observation at the step limit)
	actions []int
	cont    []float64
	logp    []float64
	rewards []float64 // one per action whose reward arrived
	closed  bool

	lastSeen atomic.Int64
}

func (s *session) steps() int          { return len(s.logp) }
func (s *session) touch(now time.Time) { s.lastSeen.Store(now.UnixNano()) }

const shards = 64

// sessionTable is a sharded map of open sessions.
type sessionTable struct {
	seed   maphash.Seed
	shards [shards]struct {
		mu sync.Mutex
		m  map[string]*session
	}
	open atomic.Int64
}

func (t *sessionTable) init() {
	t.seed = maphash.MakeSeed()
	for i := range t.shards {
		t.shards[i].m = make(map[string]*session)
	}
}

func (t *sessionTable) shard(id string) int {
	return int(maphash.String(t.seed, id) % shards)
}

// getOrCreate returns the session, creating it unless hasReward (a
// continuing request for a session we do not know) or the table is full.
func (t *sessionTable) getOrCreate(id string, hasReward bool, limit int, mk func() *session) (*session, bool, error) {
	sh := &t.shards[t.shard(id)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if s, ok := sh.m[id]; ok {
		return s, false, nil
	}
	if hasReward {
		return nil, false, fmt.Errorf("%w: %q (expired, ended or never started; a new session sends no reward)", ErrUnknownSession, id)
	}
	if t.open.Load() >= int64(limit) {
		return nil, false, fmt.Errorf("%w: %d open", ErrSessionLimit, limit)
	}
	s := mk()
	sh.m[id] = s
	t.open.Add(1)
	return s, true, nil
}

func (t *sessionTable) get(id string) *session {
	sh := &t.shards[t.shard(id)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.m[id]
}

// remove deletes the session if the table still maps id to it.
func (t *sessionTable) remove(id string, s *session) {
	sh := &t.shards[t.shard(id)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m[id] == s {
		delete(sh.m, id)
		t.open.Add(-1)
	}
}

// idle returns the sessions last seen before cutoff (unix nanoseconds).
func (t *sessionTable) idle(cutoff int64) []*session {
	var out []*session
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		for _, s := range sh.m {
			if s.lastSeen.Load() < cutoff {
				out = append(out, s)
			}
		}
		sh.mu.Unlock()
	}
	return out
}
