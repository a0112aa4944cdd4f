package agent

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"dprl/internal/testutil"
	"dprl/ledger"
	"dprl/policy"
)

// hugeReward is finite and accepted on the wire, but a few of them overflow
// a return to +Inf: the session's local update is then non-finite.
const hugeReward = math.MaxFloat64 / 2

// TestEverySessionTakesItsPlace: a session whose local update fails (its
// return overflows) and a session truncated after one step (nothing to
// learn from) still take their place in the batch: the release has K
// participants and charges every user, exactly as if their content had been
// ordinary. Before the fix both were set aside, so the batch, the
// participant count and the users charged depended on session content.
func TestEverySessionTakesItsPlace(t *testing.T) {
	cfg := cartpoleConfig(3)
	// The huge-reward trajectory really makes the local update fail.
	l, err := policy.NewLearner(cfg.Spec, cfg.Policy)
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float64, l.NumParams())
	rng := rand.New(rand.NewPCG(1, 1))
	l.Init(theta, rng)
	tr := policy.Trajectory{Obs: make([]float64, 4*6), Actions: make([]int, 6), LogProbs: []float64{-0.7, -0.7, -0.7, -0.7, -0.7, -0.7},
		Rewards: []float64{hugeReward, hugeReward, hugeReward, hugeReward, hugeReward, hugeReward}, FinalObs: make([]float64, 4), Terminal: true}
	if err := l.LocalUpdate(make([]float64, l.NumParams()), theta, &tr, rng); err == nil {
		t.Fatal("a huge-reward trajectory gave a finite local update: the test would not exercise the failure")
	}

	a, store, stop := startAgent(t, cfg, t.TempDir())
	defer stop()
	obs := []float64{0.01, 0, 0, 0}
	// Session 1: truncated after one step.
	if _, err := a.Act("short", "u-short", obs, 0, false); err != nil {
		t.Fatal(err)
	}
	if r, err := a.End("short", "u-short", 1, false); err != nil || !r.Used {
		t.Fatalf("one-step truncated session: %+v %v, want used", r, err)
	}
	// Session 2: its return overflows.
	for step := range 6 {
		if _, err := a.Act("huge", "u-huge", obs, hugeReward, step > 0); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := a.End("huge", "u-huge", hugeReward, true); err != nil || !r.Used {
		t.Fatalf("huge session: %+v %v, want used", r, err)
	}
	// Session 3: ordinary.
	playEpisode(t, a, "ok", "u-ok", rand.New(rand.NewPCG(2, 2)), 30)
	testutil.EventuallyTrue(t, 20*time.Second, "version 1", func() bool { return a.Version() == 1 })
	var entries []ledger.Entry
	if err := store.Entries(func(e ledger.Entry) error { entries = append(entries, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Participants != 3 {
		t.Fatalf("entries %+v, want one release with 3 participants", entries)
	}
	for _, u := range []string{"u-short", "u-huge", "u-ok"} {
		st, err := store.UserState(store.User(u))
		if err != nil || st.Updates != 1 {
			t.Errorf("user %s: %+v %v, want charged for 1 update", u, st, err)
		}
	}
	// The released policy is finite.
	b, err := store.Snapshot(1)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := policy.UnmarshalSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range snap.Theta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("theta[%d] = %v", i, v)
		}
	}
}
