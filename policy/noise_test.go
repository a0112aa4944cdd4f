package policy

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats"
)

// TestTreeLevelsCoverEveryLeaf checks the count behind the tree's privacy
// argument by brute force: in a tree of N leaves, the most released dyadic
// nodes [k 2^h + 1, (k+1) 2^h] (end <= N) that contain one leaf is
// TreeLevels() = bits.Len(N).
func TestTreeLevelsCoverEveryLeaf(t *testing.T) {
	for N := 1; N <= 300; N++ {
		most := 0
		for leaf := 1; leaf <= N; leaf++ {
			c := 0
			for h := 0; 1<<h <= N; h++ {
				k := (leaf - 1) >> h
				if end := (k + 1) << h; end <= N {
					c++
				}
			}
			most = max(most, c)
		}
		if got := treeLevels(N); got != most {
			t.Fatalf("N = %d: treeLevels %d, brute force %d", N, got, most)
		}
		if f := (DPConfig{Noise: NoiseTree, Horizon: N}).NoiseFactor(); math.Abs(f*f-float64(most)) > 1e-12 {
			t.Fatalf("N = %d: tree noise factor^2 %v, want %d", N, f*f, most)
		}
	}
	if f := (DPConfig{}).NoiseFactor(); f != 1 {
		t.Fatalf("independent noise factor %v, want 1", f)
	}
}

// TestSqrtFactor checks the square-root factorization against independent
// formulas: c_k = binom(2k, k) / 4^k (from log-gamma), C C = A (the
// lower-triangular ones matrix) as power series, and NoiseFactor = the
// largest column norm of C.
func TestSqrtFactor(t *testing.T) {
	const N = 60
	cfg := DPConfig{Mode: ModeDP, NoiseMultiplier: 1, ClipNorm: 1, UsersPerUpdate: 1, PolicyClipShare: 0.5, Noise: NoiseSqrt, Horizon: N}
	a, err := NewAggregator(cfg, 1, 1, testRNG(t))
	if err != nil {
		t.Fatal(err)
	}
	c := make([]float64, N)
	for k := range N {
		c[k] = a.coef[k]
		if k > 0 {
			c[k] += c[k-1]
		}
		lg := func(x float64) float64 { v, _ := math.Lgamma(x); return v }
		want := math.Exp(lg(float64(2*k+1)) - 2*lg(float64(k+1)) - float64(k)*math.Ln2*2)
		if math.Abs(c[k]-want) > 1e-12*want {
			t.Fatalf("c_%d = %v, want binom(2k, k)/4^k = %v", k, c[k], want)
		}
	}
	for n := range N {
		sum := 0.0
		for k := 0; k <= n; k++ {
			sum += c[k] * c[n-k]
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Fatalf("(C C)[n, 0] = %v at n = %d, want 1", sum, n)
		}
	}
	// Column j of C holds c_0 .. c_{N-1-j}: the first is the longest.
	ss := 0.0
	for _, v := range c {
		ss += v * v
	}
	if f := cfg.NoiseFactor(); math.Abs(f*f-ss) > 1e-12 {
		t.Fatalf("noise factor^2 %v, want sum c_k^2 = %v", f*f, ss)
	}
	if big := (DPConfig{Noise: NoiseSqrt, Horizon: 1250}).NoiseFactor(); math.Abs(big-1.8264850920827) > 1e-9 {
		t.Fatalf("noise factor at N = 1250: %v, want 1.82649", big)
	}
}

// treeStep adds one update x (the leaf is then x/K) and releases.
func treeStep(t *testing.T, a *Aggregator, x, out []float64) {
	t.Helper()
	if err := a.Add(x); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(out); err != nil {
		t.Fatal(err)
	}
}

// Without noise correlated noise releases exactly the averaged clipped
// updates, and a horizon of one release is Algorithm 2 draw for draw.
func TestCorrelatedExactAndHorizonOne(t *testing.T) {
	const n = 3
	for _, shape := range []Noise{NoiseTree, NoiseSqrt} {
		cfg := DPConfig{Mode: ModeClipOnly, ClipNorm: 100, UsersPerUpdate: 2, PolicyClipShare: 0.5, Noise: shape, Horizon: 5}
		a, err := NewAggregator(cfg, 2, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		g := make([]float64, n)
		for i := range 23 {
			x := []float64{float64(i), -1, 0.5 * float64(i%3)}
			treeStep(t, a, x, g)
			for j := range x {
				if want := x[j] / 2; math.Abs(g[j]-want) > 1e-12 {
					t.Fatalf("%v release %d: g~ = %v, want %v", shape, i, g, want)
				}
			}
		}

		base := DPConfig{Mode: ModeDP, NoiseMultiplier: 1.3, ClipNorm: 1, UsersPerUpdate: 3, PolicyClipShare: 0.8}
		one := base
		one.Noise, one.Horizon = shape, 1
		a2, _ := NewAggregator(base, 2, 1, rand.New(rand.NewPCG(7, 1)))
		a1, _ := NewAggregator(one, 2, 1, rand.New(rand.NewPCG(7, 1)))
		g1, g2 := make([]float64, n), make([]float64, n)
		for i := range 10 {
			x := []float64{0.1 * float64(i), 0.2, -0.3}
			treeStep(t, a1, x, g1)
			treeStep(t, a2, x, g2)
			if !floats.Equal(g1, g2) {
				t.Fatalf("%v release %d: horizon 1 %v, Algorithm 2 %v", shape, i, g1, g2)
			}
		}
	}
}

// TestCorrelatedNoiseStructure measures the noise over many coordinates
// against the formulas, in units of one draw's variance sigma^2 (sigma = z f
// S / K): after t releases of a horizon the tree's prefix carries
// popcount(t) node draws and one release tz(t) + 1 of them; the
// factorization's prefix carries sum_{k<t} c_k w_{t-k} (variance sum c_k^2)
// and one release sum_{k<t} (c_k - c_{k-1}) w_{t-k}. A new horizon starts
// from zero noise.
func TestCorrelatedNoiseStructure(t *testing.T) {
	const n = 20000
	c := make([]float64, 12)
	c[0] = 1
	for k := 1; k < len(c); k++ {
		c[k] = c[k-1] * float64(2*k-1) / float64(2*k)
	}
	for _, tc := range []struct {
		shape   Noise
		horizon int
		f       float64                               // noise factor
		want    func(t int) (prefix, release float64) // variances in sigma^2
	}{
		{NoiseTree, 12, 2, func(t int) (float64, float64) { // L = 4
			return float64(bits.OnesCount(uint(t))), float64(bits.TrailingZeros(uint(t)) + 1)
		}},
		{NoiseSqrt, 10, 0, func(t int) (pre, rel float64) {
			for k := range t {
				d := c[k]
				if k > 0 {
					d -= c[k-1]
				}
				pre, rel = pre+c[k]*c[k], rel+d*d
			}
			return pre, rel
		}},
	} {
		cfg := DPConfig{Mode: ModeDP, NoiseMultiplier: 0.7, ClipNorm: 2, UsersPerUpdate: 4, PolicyClipShare: 0.5, Noise: tc.shape, Horizon: tc.horizon}
		a, err := NewAggregator(cfg, n/2, n/2, testRNG(t))
		if err != nil {
			t.Fatal(err)
		}
		f := cfg.NoiseFactor()
		if tc.f != 0 && math.Abs(f-tc.f) > 1e-15 {
			t.Fatalf("%v: noise factor %v, want %v", tc.shape, f, tc.f)
		}
		sigma := 0.7 * f * 2 / 4
		if math.Abs(a.NoiseStd()-sigma) > 1e-15 {
			t.Fatalf("%v: NoiseStd %v, want %v", tc.shape, a.NoiseStd(), sigma)
		}
		zero, g, prefix := make([]float64, n), make([]float64, n), make([]float64, n)
		sd := func(v []float64) float64 { return math.Sqrt(floats.Dot(v, v) / n) }
		// The sample std of n normals has relative std 1/sqrt(2n) = 0.5%.
		check := func(what string, s int, got, variance float64) {
			t.Helper()
			if want := sigma * math.Sqrt(variance); math.Abs(got-want)/want > 0.03 {
				t.Fatalf("%v release %d: %s std %.5g, want %.5g", tc.shape, s, what, got, want)
			}
		}
		for s := 1; s <= 2*tc.horizon+3; s++ {
			treeStep(t, a, zero, g)
			tt := (s-1)%tc.horizon + 1 // release within its horizon
			if tt == 1 {
				clear(prefix)
			}
			floats.Add(prefix, g)
			pre, rel := tc.want(tt)
			check("prefix", s, sd(prefix), pre)
			check("release", s, sd(g), rel)
		}
	}
}

// TestCorrelatedReleaseAllocs: a release allocates nothing.
func TestCorrelatedReleaseAllocs(t *testing.T) {
	for _, shape := range []Noise{NoiseTree, NoiseSqrt} {
		cfg := DPConfig{Mode: ModeDP, NoiseMultiplier: 1, ClipNorm: 1, UsersPerUpdate: 2, PolicyClipShare: 0.5, Noise: shape, Horizon: 64}
		a, err := NewAggregator(cfg, 50, 50, testRNG(t))
		if err != nil {
			t.Fatal(err)
		}
		x, g := make([]float64, 100), make([]float64, 100)
		if allocs := testing.AllocsPerRun(200, func() {
			_ = a.Add(x)
			_ = a.Release(g)
		}); allocs != 0 {
			t.Fatalf("%v: %v allocs per release, want 0", shape, allocs)
		}
	}
}

// TestNoiseConfig: bad shapes and horizons are rejected, ParseNoise
// inverts String.
func TestNoiseConfig(t *testing.T) {
	base := DPConfig{Mode: ModeDP, NoiseMultiplier: 1, ClipNorm: 1, UsersPerUpdate: 2, PolicyClipShare: 0.5}
	for _, c := range []struct {
		noise   Noise
		horizon int
		ok      bool
	}{
		{NoiseIndependent, 0, true}, {NoiseIndependent, 5, false}, {NoiseTree, 0, false}, {NoiseTree, 1, true},
		{NoiseSqrt, -1, false}, {NoiseSqrt, 1 << 21, false}, {Noise(7), 3, false},
	} {
		cfg := base
		cfg.Noise, cfg.Horizon = c.noise, c.horizon
		if err := cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("%v horizon %d: %v", c.noise, c.horizon, err)
		}
	}
	for _, n := range []Noise{NoiseIndependent, NoiseTree, NoiseSqrt} {
		if got, err := ParseNoise(n.String()); err != nil || got != n {
			t.Errorf("ParseNoise(%q) = %v, %v", n, got, err)
		}
	}
	if _, err := ParseNoise("gaussian"); err == nil {
		t.Error("ParseNoise accepted gaussian")
	}
	big := base
	big.Noise, big.Horizon = NoiseSqrt, 1<<20
	if _, err := NewAggregator(big, 1<<10, 0, testRNG(t)); err == nil {
		t.Error("a sqrt aggregator of 2^30 draws was built")
	}
}

// BenchmarkRelease measures one release (K = 8 adds and the release) of
// CartPole's default network (755 parameters) over a horizon of 1,250
// releases for each noise shape; independent noise is the baseline measured
// in the same run. The factorization's cost grows with the release's index
// t in the horizon (t draws are combined), so the benchmark cycles through
// whole horizons.
func BenchmarkRelease(b *testing.B) {
	const n, horizon, K = 755, 1250, 8
	for _, shape := range []Noise{NoiseIndependent, NoiseTree, NoiseSqrt} {
		b.Run(shape.String(), func(b *testing.B) {
			cfg := DPConfig{Mode: ModeDP, NoiseMultiplier: 1, ClipNorm: 0.2, UsersPerUpdate: K, PolicyClipShare: 0.8, Noise: shape}
			if shape != NoiseIndependent {
				cfg.Horizon = horizon
			}
			a, err := NewAggregator(cfg, 611, n-611, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				b.Fatal(err)
			}
			x, g := make([]float64, n), make([]float64, n)
			for i := range x {
				x[i] = 1e-3 * float64(i%7)
			}
			b.ReportAllocs()
			for b.Loop() {
				for range K {
					if err := a.Add(x); err != nil {
						b.Fatal(err)
					}
				}
				if err := a.Release(g); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
