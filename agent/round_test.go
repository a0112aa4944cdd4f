package agent

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"dprl/agent/internal/agenttest"
	"dprl/ledger"
	"dprl/policy"
)

// cartpoleTrajectory returns a cartpole-shaped trajectory of T steps with
// every reward r.
func cartpoleTrajectory(rng *rand.Rand, T int, r float64) policy.Trajectory {
	tr := policy.Trajectory{Obs: make([]float64, 4*T), Actions: make([]int, T), Rewards: make([]float64, T), LogProbs: make([]float64, T), FinalObs: make([]float64, 4)}
	for i := range tr.Obs {
		tr.Obs[i] = 0.1 * rng.NormFloat64()
	}
	for t := range T {
		tr.Actions[t], tr.Rewards[t], tr.LogProbs[t] = rng.IntN(2), r, -math.Ln2
	}
	return tr
}

// TestUpdaterReleasesTheRound gives the agent's updater and the path the
// in-process trainer takes (policy.Round from the same seeded generators,
// then theta + eta g~) the same sessions, and requires the same released
// parameters, bit for bit, in the store and served: for a full batch and
// an early flush, with a session whose local update overflows and one with
// an empty trajectory. The trainer's side feeds the zero vector in place of
// the two failed updates, so the test also checks the agent's rule for a
// failed local update: the zero vector, in its place among the K, and
// counted among the participants.
func TestUpdaterReleasesTheRound(t *testing.T) {
	const K = 4
	rng := rand.New(rand.NewPCG(3, 4))
	trs := []policy.Trajectory{
		cartpoleTrajectory(rng, 9, 1),
		cartpoleTrajectory(rng, 12, 1),
		cartpoleTrajectory(rng, 7, math.MaxFloat64/2), // the return overflows
		{}, // no step
	}
	for _, n := range []int{K, K - 1} {
		t.Run(fmt.Sprintf("sessions=%d", n), func(t *testing.T) {
			cfg := cartpoleConfig(K)
			cfg.Workers = 2

			// The agent's path.
			store := agenttest.OpenStore(t, t.TempDir())
			defer store.Close()
			a, err := New(cfg, store, Options{})
			if err != nil {
				t.Fatal(err)
			}
			u, err := newUpdater(a, cfg.Workers)
			if err != nil {
				t.Fatal(err)
			}
			cur := a.current.Load()
			theta0 := slices.Clone(cur.theta)
			for i := range n {
				u.batch = append(u.batch, finished{ver: cur.num, key: queueKey{user: store.User(fmt.Sprint("user", i)), hasUser: true}, tr: trs[i]})
			}
			if err := u.release(cur); err != nil {
				t.Fatal(err)
			}
			served := a.current.Load()
			if served.num != 1 {
				t.Fatalf("serving version %d, want 1", served.num)
			}
			b, err := store.Snapshot(1)
			if err != nil {
				t.Fatal(err)
			}
			_, stored, _, err := decodeSnapshot(cfg, b)
			if err != nil {
				t.Fatal(err)
			}
			var participants []int
			if err := store.Entries(func(e ledger.Entry) error {
				participants = append(participants, e.Participants)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(participants) == 0 || participants[len(participants)-1] != n {
				t.Errorf("ledger participants %v, want the last %d (failed updates take part)", participants, n)
			}

			// The trainer's path, from an agent with the same seed: the
			// same generators, drawn in newUpdater's order.
			store2 := agenttest.OpenStore(t, t.TempDir())
			defer store2.Close()
			a2, err := New(cfg, store2, Options{})
			if err != nil {
				t.Fatal(err)
			}
			// A seeded agent's local update of slot i draws from the
			// stream of (version 1, slot i).
			var rngs []*rand.Rand
			for i := range n {
				rngs = append(rngs, rand.New(rand.NewChaCha8(a2.localUpdateKey(1, i))))
			}
			var learners []*policy.Learner
			for range cfg.Workers {
				l, err := policy.NewLearner(cfg.Spec, cfg.Policy)
				if err != nil {
					t.Fatal(err)
				}
				learners = append(learners, l)
			}
			round, err := policy.NewRound(cfg.Policy.DP, learners, a2.newRand("noise"))
			if err != nil {
				t.Fatal(err)
			}
			gTilde, err := round.Run(n, func(w, i int, gu []float64) error {
				if i >= 2 {
					// The failed updates: check that they fail, then
					// give the zero vector as a successful update.
					err := learners[w].LocalUpdate(gu, theta0, &trs[i], rngs[i])
					if !errors.Is(err, policy.ErrNonFinite) && !errors.Is(err, policy.ErrTrajectory) {
						t.Errorf("session %d: local update error %v, want a failure", i, err)
					}
					clear(gu)
					return nil
				}
				return learners[w].LocalUpdate(gu, theta0, &trs[i], rngs[i])
			})
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if _, failed := round.Local(i); failed {
					t.Errorf("trainer's path: update %d failed", i)
				}
			}
			want := slices.Clone(theta0)
			policy.ApplyUpdate(want, gTilde, cfg.Policy.PPO.ServerLR)
			round.Commit()
			if slices.Equal(want, theta0) {
				t.Fatal("the release did not move the parameters")
			}
			if !slices.Equal(served.theta, want) || !slices.Equal(stored, want) {
				t.Errorf("agent released %v... (stored %v...), trainer's path %v...", served.theta[:3], stored[:3], want[:3])
			}
		})
	}
}
