package agent

import (
	"math/rand/v2"
	"testing"

	"dprl/ledger"
	"dprl/offline/qlearn"
	"dprl/profile"
)

// qSnapshot returns a small BCQ policy for CartPole's spaces (4
// observation values, 2 actions), as dprl offline learn --out writes one,
// after a few plain steps on random transitions so that its parameters
// are not the initialisation's.
func qSnapshot(t testing.TB) []byte { return qSnapshotWith(t, privateProv) }

// qSnapshotWith is qSnapshot with the provenance p.
func qSnapshotWith(t testing.TB, p ledger.Provenance) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 8))
	cfg := qlearn.DefaultConfig()
	cfg.Algo, cfg.Hidden, cfg.Batch = qlearn.BCQ, []int{8}, 16
	l, err := qlearn.New(cfg, 4, 2, rng)
	if err != nil {
		t.Fatal(err)
	}
	d := &qlearn.Data{ObsDim: 4, NumActions: 2, Start: []int{0, 32}}
	for range 32 {
		for range 4 {
			d.Obs, d.Next = append(d.Obs, rng.NormFloat64()), append(d.Next, rng.NormFloat64())
		}
		d.Actions, d.Rewards, d.Terminal = append(d.Actions, rng.IntN(2)), append(d.Rewards, 1), append(d.Terminal, false)
	}
	for range 20 {
		l.Step(d, rng)
	}
	snap := l.Snapshot()
	snap.Env = "cartpole"
	snap.SetProvenance(p)
	b, err := snap.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFixedQActAllocatesNothing: serving a step from a Q-network policy
// allocates nothing.
func TestFixedQActAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops serving contexts at random")
	}
	spec, pc, err := profile.AgentDefaults("cartpole")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseFixedPolicy(qSnapshot(t), "q.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig(spec, pc)
	cfg.Fixed = f
	a, _, stop := startAgent(t, cfg, t.TempDir())
	defer stop()
	obs := []float64{0.1, -0.2, 0.03, 0.4}
	if _, err := a.Act("s", "u", obs, 0, false); err != nil {
		t.Fatal(err)
	}
	for range 300 {
		if _, err := a.Act("s", "u", obs, 1, true); err != nil {
			t.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := a.Act("s", "u", obs, 1, true); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a Q-network policy's act allocates %v times", n)
	}
}
