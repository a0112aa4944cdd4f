package experiment

import (
	"math"
	"testing"

	"dprl/profile"
)

// TestEpisodeAccount: CartPole's former default run (episodes of at most
// 500 steps in segments of 64, K = 8, sqrt noise) splits an episode over 8 users in 8
// releases with sensitivity 6.968 segments'; a run of fewer releases caps
// it, and fresh episodes make every user one episode.
func TestEpisodeAccount(t *testing.T) {
	cfg, err := profile.TrainConfig("cartpole", true, 10000, sqrtCartPole())
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewEpisodeAccount(cfg, 10000, false, 500)
	if err != nil {
		t.Fatal(err)
	}
	if a.Segments != 8 || a.EpisodeReleases != 8 || math.Abs(a.Sensitivity-6.968) > 1e-3 || a.SegmentSteps != 64 || a.MaxEpisodeSteps != 500 || a.Privacy().Releases != 8 {
		t.Fatalf("account %+v", *a)
	}
	ep, seg, err := a.At(1, 1e-5)
	if err != nil || math.Abs(ep.Epsilon-53.21) > 0.01 || math.Abs(seg.Epsilon-4.377) > 1e-3 || a.EpsilonPerSegment != seg.Epsilon {
		t.Errorf("at z = 1: %v per episode, %v per segment (%v recorded), %v", ep.Epsilon, seg.Epsilon, a.EpsilonPerSegment, err)
	}
	if want := "an episode of at most 500 steps is up to 8 segments (users) of at most 64 steps in 8 consecutive releases, sensitivity 6.968 segments'; per segment: epsilon = 4.378"; a.Text() != want {
		t.Errorf("text %q", a.Text())
	}
	if z, err := a.Calibrate(ep.Epsilon, 1e-5); err != nil || math.Abs(z-1) > 1e-6 {
		t.Errorf("calibrated z %v for the epsilon of z = 1 (%v)", z, err)
	}
	cfg24, _ := profile.TrainConfig("cartpole", true, 24, sqrtCartPole()) // 3 releases of K = 8, one horizon
	short, err := NewEpisodeAccount(cfg24, 24, false, 500)
	if err != nil || short.EpisodeReleases != 3 || short.Structure() != "an episode of at most 500 steps is up to 8 segments (users) of at most 64 steps in 3 consecutive releases (the run has only 3), sensitivity 2.206 segments'" {
		t.Errorf("24 users: %+v %q %v", short, short.Structure(), err)
	}
	fresh, err := NewEpisodeAccount(cfg, 10000, true, 500)
	if err != nil || fresh.Segments != 1 || fresh.Text() != "every user plays a fresh episode, truncated after 64 steps: per episode = per user" {
		t.Errorf("fresh: %+v %v", fresh, err)
	}
	if _, err := NewEpisodeAccount(cfg, 10000, false, 0); err == nil {
		t.Error("continuing episodes without a step limit: no error")
	}
}
