package sac

import (
	"errors"
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
