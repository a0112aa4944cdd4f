package sac

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func TestActorSnapshotRoundTrip(t *testing.T) {
	a := smallAgent(t, 4)
	b := a.MarshalActor()
	act, err := LoadActor(b)
	if err != nil {
		t.Fatal(err)
	}
	obs := []float64{0.1, -0.4, 0.9}
	want, got := make([]float64, 2), make([]float64, 2)
	a.ActDeterministic(want, obs)
	act.ActDeterministic(got, obs)
	if want[0] != got[0] || want[1] != got[1] {
		t.Fatalf("loaded actor acts %v, the agent %v", got, want)
	}
	lpA := a.Act(want, rand.New(rand.NewPCG(1, 1)), obs) - a.LogScale()
	lpB := act.Act(got, rand.New(rand.NewPCG(1, 1)), obs)
	if want[0] != got[0] || want[1] != got[1] || lpA-lpB > 1e-12 || lpB-lpA > 1e-12 {
		t.Fatalf("sampled %v (%v), agent %v (%v)", got, lpB, want, lpA)
	}
	// Every corruption is refused with ErrSnapshot.
	for i := range b {
		c := append([]byte(nil), b...)
		c[i] ^= 0x10
		if _, err := LoadActor(c); !errors.Is(err, ErrSnapshot) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	for _, n := range []int{0, 5, len(b) - 1} {
		if _, err := LoadActor(b[:n]); !errors.Is(err, ErrSnapshot) {
			t.Fatalf("truncated to %d bytes: %v", n, err)
		}
	}
}

func FuzzLoadActor(f *testing.F) {
	f.Add(smallAgent(f, 4).MarshalActor())
	f.Add([]byte("DPRLSACA\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := LoadActor(data)
		if err != nil {
			if !errors.Is(err, ErrSnapshot) {
				t.Fatalf("error %v does not wrap ErrSnapshot", err)
			}
			return
		}
		dst := make([]float64, a.ActDim())
		a.ActDeterministic(dst, make([]float64, a.ObsDim()))
	})
}

// TestActorClone checks that a clone acts as the original, on workspaces
// of its own (so that two goroutines may act at once), allocating nothing,
// and that Box is the box the agent was created with.
func TestActorClone(t *testing.T) {
	act, err := LoadActor(smallAgent(t, 4).MarshalActor())
	if err != nil {
		t.Fatal(err)
	}
	c := act.Clone()
	if c.net == act.net || &c.out[0] == &act.out[0] {
		t.Fatal("the clone shares the actor's workspaces")
	}
	obs := []float64{0.3, 0.2, -0.7}
	want, got := make([]float64, 2), make([]float64, 2)
	act.ActDeterministic(want, obs)
	c.ActDeterministic(got, obs)
	if want[0] != got[0] || want[1] != got[1] {
		t.Fatalf("clone acts %v, the actor %v", got, want)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	if n := testing.AllocsPerRun(100, func() { c.Act(got, rng, obs) }); n != 0 {
		t.Fatalf("Act allocates %v times", n)
	}
	// LogDensity gives back the log-density Act returned.
	for i := range 20 {
		obs[0] = float64(i) / 10
		lp := c.Act(got, rng, obs)
		if d := act.LogDensity(obs, got); math.Abs(d-lp) > 1e-9*max(1, math.Abs(lp)) {
			t.Fatalf("LogDensity %v, Act returned %v for %v", d, lp, got)
		}
	}
	if d := act.LogDensity(obs, []float64{2, 0.5}); !math.IsInf(d, -1) {
		t.Fatalf("an action on the box's boundary: log-density %v, want -Inf", d)
	}
	low, high := act.Box()
	if low[0] != -2 || low[1] != 0 || high[0] != 2 || high[1] != 1 {
		t.Fatalf("box [%v, %v], want [-2 0] to [2 1]", low, high)
	}
}
