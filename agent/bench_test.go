package agent

import (
	"fmt"
	"testing"

	"dprl/agent/internal/agenttest"
)

// BenchmarkAct measures serving one action inside the agent (no transport):
// sessions of 200 steps, whose storage grows by amortised appends.
// The second case is the deployed CartPole learner (dprl agent --env
// cartpole): 16x16 networks and public observation/value scales. The
// third serves a fixed SAC actor (dprl agent --env pendulum
// --serve-policy, 8x8 hidden layers): no learner, sessions not queued;
// it allocates only a session's storage, as the others.
func BenchmarkAct(b *testing.B) {
	deployed := cartpoleConfig(1 << 12)
	deployed.Policy.PPO.Hidden = []int{16, 16}
	deployed.Policy.PPO.ObsScale = []float64{1, 1, 10, 1}
	deployed.Policy.PPO.ValueScale = 10
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"table3-64x64", cartpoleConfig(1 << 12)},
		{"deployed-16x16-scaled", deployed},
		{"fixed-sac-pendulum-8x8", pendulumFixed(b)},
	} {
		b.Run(c.name, func(b *testing.B) { benchmarkAct(b, c.cfg) })
	}
}

func benchmarkAct(b *testing.B, cfg Config) {
	store := agenttest.OpenStore(b, b.TempDir())
	defer store.Close()
	a, err := New(cfg, store, Options{})
	if err != nil {
		b.Fatal(err)
	}
	obs := []float64{0.01, 0.02, -0.01, 0.03}[:cfg.Spec.ObsDim]
	ids := make([]string, 1024)
	for i := range ids {
		ids[i] = fmt.Sprintf("bench-%d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, step := i/200, i%200
		if _, err := a.Act(ids[s%len(ids)], "", obs, 1, step != 0); err != nil {
			b.Fatal(err)
		}
		if step == 199 {
			if _, err := a.End(ids[s%len(ids)], "", 1, true); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkBatchFormation measures what the learner spends on one user's
// flood of finished sessions: each session is queued and the updater takes
// what it can (as Run does on every finished session), with K = 32 and
// one user, so that no batch fills. The queues are unbounded here (the
// agent bounds them: MaxQueuedPerUser, 4K + 1024 in all) to show the cost
// per session does not grow with the number waiting. Before the per-user
// queues, the updater rescanned every pending session on each finished
// one: quadratic in the flood.
func BenchmarkBatchFormation(b *testing.B) {
	for _, n := range []int{1000, 10000, 50000} {
		b.Run(fmt.Sprintf("flood=%d", n), func(b *testing.B) {
			cfg := cartpoleConfig(32)
			store := agenttest.OpenStore(b, b.TempDir())
			defer store.Close()
			a, err := New(cfg, store, Options{})
			if err != nil {
				b.Fatal(err)
			}
			u, err := newUpdater(a, 1)
			if err != nil {
				b.Fatal(err)
			}
			f := finished{key: queueKey{user: store.User("flood"), hasUser: true}}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				a.queue.init(1<<30, 1<<30, cfg.Policy.DP.UsersPerUpdate, a.m.LearnerQueue)
				u.batch, u.held = u.batch[:0], u.held[:0]
				b.StartTimer()
				for j := 0; j < n; j++ {
					a.queue.push(f)
					if err := u.step(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/session")
		})
	}
}
