package policy

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSamplerRoundingPrecondition checks that every noise refuses a
// configuration outside the exact sampler's floating-point precondition
// (docs/privacy.md, section 2): K above 2^15 for any noise, a tree or a
// square-root horizon whose sums' rounding could pass the margin, and an
// aggregator whose grid rounding, over the rows one update enters, could.
func TestSamplerRoundingPrecondition(t *testing.T) {
	base := DefaultControlConfig().DP
	for _, tc := range []struct {
		name    string
		noise   Noise
		k, n, b int
		want    string // "" for valid
	}{
		{"independent K = 2^15", NoiseIndependent, 1 << 15, 0, 0, ""},
		{"independent K = 2^15 + 1", NoiseIndependent, 1<<15 + 1, 0, 0, "at most 32768"},
		{"independent K = 2^20", NoiseIndependent, 1 << 20, 0, 0, "at most 32768"},
		{"tree K = 8, N = 2^20", NoiseTree, 8, 1 << 20, 0, ""},
		{"tree K = 2^15, N = 2^20", NoiseTree, 1 << 15, 1 << 20, 0, "rounding"},
		{"sqrt K = 8, N = 4096", NoiseSqrt, 8, 4096, 0, ""},
		{"sqrt K = 8, N = 2^20", NoiseSqrt, 8, 1 << 20, 0, "rounding"},
		{"bandmf K = 2^15 + 1", NoiseBandedSqrt, 1<<15 + 1, 0, 1, "at most 32768"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.Noise, c.UsersPerUpdate, c.Horizon, c.Band = tc.noise, tc.k, tc.n, tc.b
			err := c.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("validate: %v, want %q", err, tc.want)
			}
		})
	}
	// Condition (2) over the rows an update enters: z sqrt(d rows) <= 2^38.
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name  string
		noise Noise
		z     float64
		n, b  int
		want  string
	}{
		{"independent, small z", NoiseIndependent, 1, 0, 0, ""},
		{"independent, z = 2^37", NoiseIndependent, 1 << 37, 0, 0, "2^38"},
		{"sqrt, z = 2^31 over 4096 rows", NoiseSqrt, 1 << 31, 4096, 0, "2^38"},
		{"bandmf, z = 2^34 over 64 rows", NoiseBandedSqrt, 1 << 34, 0, 64, "2^38"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.Noise, c.UsersPerUpdate, c.Horizon, c.Band, c.NoiseMultiplier = tc.noise, 8, tc.n, tc.b, tc.z
			_, err := NewAggregator(c, 8, 8, rng)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("aggregator: %v, want %q", err, tc.want)
			}
		})
	}
}

// TestDPSGDRoundingPrecondition: the DP-SGD baselines refuse a clipped sum
// of more than 2^15 units (REINFORCE's episodes per update; DQN's Poisson
// minibatch, at most min(buffer, steps) transitions).
func TestDPSGDRoundingPrecondition(t *testing.T) {
	r := DefaultReinforceConfig()
	r.EpisodesPerUpdate = 1<<15 + 1
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "2^15") {
		t.Fatalf("reinforce with 2^15 + 1 episodes per update: %v", err)
	}
	d := DefaultDQNConfig()
	d.BufferSize, d.Steps = 1<<16, 1<<16
	if err := d.Validate(); err == nil || !strings.Contains(err.Error(), "2^15") {
		t.Fatalf("dqn with a buffer of 2^16: %v", err)
	}
	d.Steps = 1 << 15 // the buffer never holds more
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
}
