package agent

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// TestSeededServingPerSession: a seeded agent draws each session's actions
// from the session's own stream, so two runs with the same seed serve every
// session the same actions however the sessions interleave (here 16
// sessions from 4 goroutines, no release in between). Before, sessions
// drew from pooled serving contexts, and which one served a session
// depended on scheduling.
func TestSeededServingPerSession(t *testing.T) {
	run := func() map[string]float64 {
		cfg := cartpoleConfig(64)
		a, _, stop := startAgent(t, cfg, t.TempDir())
		defer stop()
		var mu sync.Mutex
		out := map[string]float64{}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 4 {
					id := fmt.Sprintf("s%d-%d", g, i)
					ret, _ := playEpisode(t, a, id, "u"+id, rand.New(rand.NewPCG(uint64(g), uint64(i))), 60)
					mu.Lock()
					out[id] = ret
					mu.Unlock()
					time.Sleep(time.Millisecond)
				}
			}()
		}
		wg.Wait()
		return out
	}
	first, second := run(), run()
	for id, r := range first {
		if second[id] != r {
			t.Errorf("session %s: return %v, then %v with the same seed", id, r, second[id])
		}
	}
}

// TestSeededReleaseIndependentOfWorkers: a seeded agent's local updates
// draw from a stream per release and batch slot, so the released policy
// does not depend on how many workers compute them.
func TestSeededReleaseIndependentOfWorkers(t *testing.T) {
	snap := func(workers int) []byte {
		cfg := cartpoleConfig(4)
		cfg.Workers = workers
		cfg.FlushTimeout = time.Hour
		a, store, stop := startAgent(t, cfg, t.TempDir())
		defer stop()
		for i := range 4 {
			playEpisode(t, a, fmt.Sprint("s", i), fmt.Sprint("u", i), rand.New(rand.NewPCG(1, uint64(i))), 40)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			h, _ := store.Head()
			if h.Version == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no release")
			}
			time.Sleep(10 * time.Millisecond)
		}
		b, err := store.Snapshot(1)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	one, three := snap(1), snap(3)
	if string(one) != string(three) {
		t.Fatal("the release with 1 worker differs from the release with 3 workers under the same seed")
	}
}
