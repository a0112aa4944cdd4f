package policy

import (
	"math"
	"strings"
	"testing"

	"dprl/ledger/accountant/bandsens"
	"dprl/noise"
	"dprl/policy/bandmf"
)

// TestBandedConfig checks NoiseBandedSqrt's validation, name and factor.
func TestBandedConfig(t *testing.T) {
	base := DPConfig{Mode: ModeDP, NoiseMultiplier: 1, ClipNorm: 1, UsersPerUpdate: 8, PolicyClipShare: 0.5}
	for _, c := range []struct {
		noise         Noise
		horizon, band int
		want          string // "" for valid
	}{
		{NoiseBandedSqrt, 0, 1, ""},
		{NoiseBandedSqrt, 0, 64, ""},
		{NoiseBandedSqrt, 0, bandsens.MaxBand, ""},
		{NoiseBandedSqrt, 0, 0, "Band 0: Noise bandmf needs 1 to"},
		{NoiseBandedSqrt, 0, bandsens.MaxBand + 1, "Band 4097: Noise bandmf needs"},
		{NoiseBandedSqrt, 10, 4, "Horizon 10 with bandmf noise: must be 0"},
		{NoiseIndependent, 0, 4, "Band 4: bands are a setting of Noise bandmf, not independent"},
		{NoiseSqrt, 10, 4, "Band 4: bands are a setting of Noise bandmf, not sqrt"},
	} {
		cfg := base
		cfg.Noise, cfg.Horizon, cfg.Band = c.noise, c.horizon, c.band
		err := cfg.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v horizon %d band %d: %v, want %q", c.noise, c.horizon, c.band, err, c.want)
		}
	}
	// The rounding bound: many bands and a large K are refused.
	big := base
	big.Noise, big.Band, big.UsersPerUpdate = NoiseBandedSqrt, bandsens.MaxBand, 1<<15
	if err := big.Validate(); err == nil || !strings.Contains(err.Error(), "rounding") {
		t.Errorf("4096 bands, K = 2^15: %v", err)
	}
	if n, err := ParseNoise("bandmf"); err != nil || n != NoiseBandedSqrt {
		t.Errorf("ParseNoise(bandmf) = %v, %v", n, err)
	}
	cfg := base
	cfg.Noise, cfg.Band = NoiseBandedSqrt, 5
	c := bandsens.SqrtCoefficients(5)
	ss := 0.0
	for _, v := range c {
		ss += v * v
	}
	if f := cfg.NoiseFactor(); math.Abs(f-math.Sqrt(ss)) > 1e-15 {
		t.Errorf("noise factor %v, want %v", f, math.Sqrt(ss))
	}
	cfg.Band = 1
	if f := cfg.NoiseFactor(); f != 1 {
		t.Errorf("one band: noise factor %v, want 1", f)
	}
}

// TestBandedWindowSensitivity checks WindowSensitivity for NoiseBandedSqrt
// against the sum of M consecutive columns built explicitly, and its
// limits: 1 for one release, sqrt(M) for one band.
func TestBandedWindowSensitivity(t *testing.T) {
	for _, b := range []int{1, 2, 5, 17} {
		c := bandsens.SqrtCoefficients(b)
		for _, M := range []int{1, 2, 3, 10, 40} {
			cfg := DPConfig{Noise: NoiseBandedSqrt, Band: b}
			got, err := cfg.WindowSensitivity(M, 1000)
			if err != nil {
				t.Fatal(err)
			}
			v := make([]float64, M+b)
			for col := range M {
				for j, cj := range c {
					v[col+j] += cj
				}
			}
			ss := 0.0
			for _, x := range v {
				ss += x * x
			}
			want := math.Sqrt(ss) / bandsens.ColumnNorm(c)
			if got < want || got > want*(1+1e-8) {
				t.Errorf("b = %d, M = %d: %v, want %v", b, M, got, want)
			}
			if b == 1 && math.Abs(got-math.Sqrt(float64(M))) > 1e-8 {
				t.Errorf("one band, M = %d: %v, want sqrt(M)", M, got)
			}
		}
	}
}

// TestBandedAggregator checks the aggregator's banded releases: without
// noise (clip-only) g~ is the clipped mean; with noise, over many
// parameters and zero updates, the parameters' noise after T releases has
// the per-coordinate variance (z f S/K)'^2 PrefixNoise(c, T)^2; Round.Commit
// commits each release to the stream and a release not committed is not.
func TestBandedAggregator(t *testing.T) {
	const nPi, nV = 3, 1
	cfg := DPConfig{Mode: ModeClipOnly, ClipNorm: 1, UsersPerUpdate: 2, PolicyClipShare: 0.5, Noise: NoiseBandedSqrt, Band: 4}
	a, err := NewAggregator(cfg, nPi, nV, testRNG(t))
	if err != nil {
		t.Fatal(err)
	}
	g := make([]float64, nPi+nV)
	for r := range 6 {
		u := []float64{0.1 * float64(r), 0, 0, 0.2}
		a.Add(u)
		a.Add(u)
		if err := a.Release(g); err != nil {
			t.Fatal(err)
		}
		a.Commit()
		for i := range u {
			if math.Abs(g[i]-u[i]) > 1e-15 {
				t.Fatalf("clip-only release %d: %v, want %v", r, g, u)
			}
		}
	}
	if a.CarriedNoise().(*bandmf.Stream).Releases() != 6 {
		t.Fatalf("%d releases committed, want 6", a.CarriedNoise().(*bandmf.Stream).Releases())
	}

	const n, T = 4000, 12
	cfg = DPConfig{Mode: ModeDP, NoiseMultiplier: 0.8, ClipNorm: 2, UsersPerUpdate: 4, PolicyClipShare: 0.5, Noise: NoiseBandedSqrt, Band: 6}
	a, err = NewAggregator(cfg, n/2, n/2, testRNG(t))
	if err != nil {
		t.Fatal(err)
	}
	if want := 0.8 * cfg.NoiseFactor() * 2 / 4; math.Abs(a.NoiseStd()-want) > 1e-15 {
		t.Fatalf("noise std %v, want z f S / K = %v", a.NoiseStd(), want)
	}
	zero := make([]float64, n)
	sum := make([]float64, n)
	g = make([]float64, n)
	for range T {
		a.Add(zero)
		if err := a.Release(g); err != nil {
			t.Fatal(err)
		}
		a.Commit()
		for i, v := range g {
			sum[i] += v
		}
	}
	v := 0.0
	for _, x := range sum {
		v += x * x
	}
	v /= n
	sp := noise.Std(a.NoiseStd())
	pn := bandmf.PrefixNoise(bandsens.SqrtCoefficients(6), T)
	if want := sp * sp * pn * pn; math.Abs(v/want-1) > 5*math.Sqrt(2.0/n) {
		t.Errorf("parameters' noise variance after %d releases %v, want %v", T, v, want)
	}
	// A release not committed (its publication failed) leaves the stream.
	before := a.CarriedNoise().(*bandmf.Stream).Releases()
	a.Add(zero)
	a.Release(g)
	if a.CarriedNoise().(*bandmf.Stream).Releases() != before {
		t.Fatal("an uncommitted release was counted")
	}
}
