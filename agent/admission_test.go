package agent

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"dprl/agent/internal/agenttest"
	"dprl/internal/testutil"
	"dprl/policy"
)

var obs4 = []float64{0.01, -0.02, 0.03, 0.04}

// TestAnotherUserCannotStep: in process too, another user's steps do not
// reach a session, whose step count goes on undisturbed.
func TestAnotherUserCannotStep(t *testing.T) {
	cfg := cartpoleConfig(8)
	store := agenttest.OpenStore(t, t.TempDir())
	defer store.Close()
	a, err := New(cfg, store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for step := 1; step <= 3; step++ {
		r, err := a.Act("s", "alice", obs4, 1, step > 1)
		if err != nil || r.Step != step {
			t.Fatalf("alice step %d: %+v %v", step, r, err)
		}
		if _, err := a.Act("s", "bob", obs4, 1, true); !errors.Is(err, ErrUnknownSession) {
			t.Fatalf("bob on alice's session: %v", err)
		}
	}
}

// TestLearnerQueueFairness: one user's finished sessions take one place per
// update and at most MaxQueuedPerUser wait; other users fill the batch.
func TestLearnerQueueFairness(t *testing.T) {
	cfg := cartpoleConfig(3)
	cfg.MaxQueuedPerUser = 2
	a, store, stop := startAgent(t, cfg, t.TempDir())
	defer stop()
	end := func(id, user string) EndResult {
		t.Helper()
		if _, err := a.Act(id, user, obs4, 0, false); err != nil {
			t.Fatal(err)
		}
		r, err := a.End(id, user, 1, true)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// The flood user: the first session joins the batch being formed,
	// two wait in the user's queue, the rest are set aside.
	if r := end("f0", "flood"); !r.Used {
		t.Fatalf("first flood session: %+v", r)
	}
	testutil.EventuallyTrue(t, 20*time.Second, "the first session in the batch", func() bool { return a.Queued() == 0 })
	for i := 1; i < 6; i++ {
		r := end(fmt.Sprintf("f%d", i), "flood")
		if want := i <= cfg.MaxQueuedPerUser; r.Used != want || (!want && r.Reason != "user queue full") {
			t.Fatalf("flood session %d: %+v", i, r)
		}
	}
	// Two other users complete a batch: one flood session per update.
	end("b", "bob")
	end("c", "carol")
	testutil.EventuallyTrue(t, 20*time.Second, "version 1", func() bool { return a.Version() == 1 })
	for _, c := range []struct {
		user string
		want int
	}{{"flood", 1}, {"bob", 1}, {"carol", 1}} {
		if st, _ := store.UserState(store.User(c.user)); st.Updates != c.want {
			t.Errorf("%s took part in %d updates, want %d", c.user, st.Updates, c.want)
		}
	}
	if got := testutil.MetricValue(t, a.m.SessionsDiscarded.WithLabelValues("user_queue_full")); got != 3 {
		t.Errorf("sessions set aside as user_queue_full: %v, want 3", got)
	}
	// The flood's waiting sessions take one place in each next update.
	end("d", "dave")
	end("e", "erin")
	testutil.EventuallyTrue(t, 20*time.Second, "version 2", func() bool { return a.Version() == 2 })
	if st, _ := store.UserState(store.User("flood")); st.Updates != 2 {
		t.Errorf("flood took part in %d updates, want 2", st.Updates)
	}
}

// TestMemoryPerStep measures the heap a session's steps take against what
// the budget charges for them: the charge must not undercount.
func TestMemoryPerStep(t *testing.T) {
	cfg := cartpoleConfig(1 << 12) // no update: the sessions stay open
	cfg.MaxSessionsPerUser = 1 << 20
	cfg.Policy.PPO.Hidden = []int{8} // a faster forward pass; storage is the same
	store := agenttest.OpenStore(t, t.TempDir())
	defer store.Close()
	for _, c := range []struct{ sessions, steps int }{{2000, 1}, {40, 600}} {
		a, err := New(cfg, store, Options{})
		if err != nil {
			t.Fatal(err)
		}
		heap0 := heapBytes()
		for i := range c.sessions {
			id := fmt.Sprintf("mem-%d", i)
			for step := range c.steps {
				if _, err := a.Act(id, "u", obs4, 1, step > 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		heap := int64(heapBytes()) - int64(heap0)
		charged := a.mem.Load()
		steps := float64(c.sessions * c.steps)
		t.Logf("%d sessions x %d steps: heap %.0f bytes per step, charged %.0f per step (%.0f per session)",
			c.sessions, c.steps, float64(heap)/steps, float64(charged)/steps, float64(charged)/float64(c.sessions))
		if heap > charged {
			t.Errorf("heap %d bytes > the %d bytes charged", heap, charged)
		}
		if a.table.open.Load() != int64(c.sessions) {
			t.Fatal("sessions lost")
		}
		runtime.KeepAlive(a)
	}
}

func heapBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestConfigValidatesLimits: every new limit is validated.
func TestConfigValidatesLimits(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"per user", func(c *Config) { c.MaxSessionsPerUser = 0 }, "per user"},
		{"per connection", func(c *Config) { c.MaxSessionsPerConnection = -1 }, "per connection"},
		{"memory", func(c *Config) { c.SessionMemoryBytes = 1000 }, "memory budget"},
		{"queued", func(c *Config) { c.MaxQueuedPerUser = 0 }, "queued"},
		{"lifetime", func(c *Config) { c.MaxSessionLifetime = 0 }, "lifetime"},
		{"reward order", func(c *Config) { c.RewardLow, c.RewardHigh = 1, 0 }, "reward bound"},
		{"reward NaN", func(c *Config) { c.RewardHigh = math.NaN() }, "reward bound"},
		{"reward Inf", func(c *Config) { c.RewardLow = math.Inf(-1) }, "reward bound"},
		{"reward overflow", func(c *Config) { c.RewardHigh = 1e300 }, "overflow"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := cartpoleConfig(4)
			c.mod(&cfg)
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v, want an error naming %q", err, c.want)
			}
		})
	}
	if err := DefaultConfig(policy.Spec{ObsDim: 4, Kind: policy.ActionDiscrete, NumActions: 2}, cartpoleConfig(4).Policy).Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
