package agent

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"dprl/internal/testutil"
	"dprl/policy"
)

// TestAverageServed: with AverageDecay the agent serves the moving average
// of its iterates, stores both in each version's snapshot (the iterate is
// what updates start from), resumes both after a restart, and serves the
// iterate again when started without averaging.
func TestAverageServed(t *testing.T) {
	const decay = 0.5
	dir := t.TempDir()
	cfg := cartpoleConfig(4)
	cfg.AverageDecay = decay
	a, store, stop := startAgent(t, cfg, dir)
	if v := a.current.Load(); v.avg != nil || &v.served()[0] != &v.theta[0] {
		t.Fatal("version 0 has an average")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 12; i++ {
		if _, end := playEpisode(t, a, fmt.Sprintf("s%d", i), fmt.Sprintf("u%d", i), rng, 64); !end.Used {
			t.Fatalf("session %d not used: %s", i, end.Reason)
		}
		if i%4 == 3 {
			want := uint64(i/4 + 1)
			testutil.EventuallyTrue(t, 20*time.Second, fmt.Sprintf("version %d", want), func() bool { return a.Version() >= want })
		}
	}
	var prev []float64
	for v := uint64(1); v <= 3; v++ {
		b, err := store.Snapshot(v)
		if err != nil {
			t.Fatal(err)
		}
		s, err := policy.UnmarshalSnapshot(b)
		if err != nil {
			t.Fatal(err)
		}
		if s.AverageDecay != decay || len(s.Average) != len(s.Theta) {
			t.Fatalf("version %d: decay %v, %d averaged of %d", v, s.AverageDecay, len(s.Average), len(s.Theta))
		}
		for i, x := range s.Theta {
			want := x
			if prev != nil {
				want = decay*prev[i] + (1-decay)*x
			}
			if s.Average[i] != want {
				t.Fatalf("version %d: average[%d] = %v, want %v", v, i, s.Average[i], want)
			}
		}
		if v > 1 && slices.Equal(s.Average, s.Theta) {
			t.Fatalf("version %d serves its iterate", v)
		}
		prev = s.Average
	}
	cur := a.current.Load()
	if !slices.Equal(cur.served(), prev) || slices.Equal(cur.served(), cur.theta) {
		t.Fatal("the agent does not serve the stored average")
	}
	theta := slices.Clone(cur.theta)
	if r, err := store.Verify(); err != nil || !r.OK() || r.Releases != 3 {
		t.Fatalf("verify %+v %v", r, err)
	}
	stop()

	a2, _, stop2 := startAgent(t, cfg, dir)
	if c := a2.current.Load(); c.num != 3 || !slices.Equal(c.avg, prev) || !slices.Equal(c.theta, theta) {
		t.Errorf("resumed version %d does not hold the stored iterate and average", c.num)
	}
	stop2()
	plain := cfg
	plain.AverageDecay = 0
	a3, _, stop3 := startAgent(t, plain, dir)
	if c := a3.current.Load(); c.avg != nil || !slices.Equal(c.served(), theta) {
		t.Error("without averaging the resumed agent does not serve the iterate")
	}
	stop3()
}

// TestAverageRefused: a decay outside [0, 1), or averaging with the linear
// contextual bandit, is refused.
func TestAverageRefused(t *testing.T) {
	for _, d := range []float64{-0.1, 1, 2} {
		cfg := cartpoleConfig(4)
		cfg.AverageDecay = d
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "average decay") {
			t.Errorf("decay %v: %v", d, err)
		}
	}
	cfg := cartpoleConfig(4)
	cfg.AverageDecay = 0.99
	if d := cfg.Describe(); !strings.Contains(d, "serving the moving average of the releases (decay 0.99, post-processing)") {
		t.Errorf("configuration line %q does not name the served average", d)
	}
	lin := linConfig(t, 100)
	lin.AverageDecay = 0.9
	if err := lin.Validate(); err == nil || !strings.Contains(err.Error(), "linear contextual bandit") {
		t.Errorf("lincb with an average: %v", err)
	}
}
