package policy

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"dprl/ledger/accountant"
	"dprl/sims"

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
		c[k] = a.noise.(*sqrtState).coef[k]
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

// explicitEncoder builds the matrix B of the released values over a run of R
// releases, block by block (one block per horizon of N releases, the last one
// cut to the releases that happen), straight from the definitions: the
// tree's rows are the released dyadic nodes, 1 on their leaves; the
// factorization's rows are C[i][j] = binom(2(i-j), i-j) / 4^(i-j) from
// log-gamma. Independent noise is the identity.
func explicitEncoder(noise Noise, N, R int) [][]float64 {
	var rows [][]float64
	lg := func(x float64) float64 { v, _ := math.Lgamma(x); return v }
	coef := func(k int) float64 {
		return math.Exp(lg(float64(2*k+1)) - 2*lg(float64(k+1)) - 2*float64(k)*math.Ln2)
	}
	for b0 := 0; b0 < R; b0 += max(N, 1) {
		n := min(N, R-b0)
		switch noise {
		case NoiseIndependent:
			for i := range R {
				r := make([]float64, R)
				r[i] = 1
				rows = append(rows, r)
			}
			return rows
		case NoiseSqrt:
			for i := range n {
				r := make([]float64, R)
				for j := 0; j <= i; j++ {
					r[b0+j] = coef(i - j)
				}
				rows = append(rows, r)
			}
		case NoiseTree:
			for h := 0; 1<<h <= N; h++ {
				for k := 0; (k+1)<<h <= n; k++ {
					r := make([]float64, R)
					for j := k << h; j < (k+1)<<h; j++ {
						r[b0+j] = 1
					}
					rows = append(rows, r)
				}
			}
		}
	}
	return rows
}

// bruteWindow returns max over windows W of m consecutive columns of B of
// ||B 1_W|| (the columns of the window added), and the largest column norm.
func bruteWindow(B [][]float64, R, m int) (window, column float64) {
	for t0 := 0; t0+m <= R; t0++ {
		ss := 0.0
		for _, r := range B {
			v := 0.0
			for j := t0; j < t0+m; j++ {
				v += r[j]
			}
			ss += v * v
		}
		window = max(window, math.Sqrt(ss))
	}
	for j := range R {
		ss := 0.0
		for _, r := range B {
			ss += r[j] * r[j]
		}
		column = max(column, math.Sqrt(ss))
	}
	return window, column
}

// TestWindowSensitivityExplicit compares WindowSensitivity with the explicit
// encoder matrices: rho(m) = max over windows of m consecutive releases of
// ||B 1_W|| / f, exact when the run is whole horizons and an upper bound
// otherwise; the largest column norm of a whole horizon is NoiseFactor; and
// B^T B >= 0 entrywise, so that contributions pointing in different
// directions never do worse than the aligned ones (checked on random
// directions).
func TestWindowSensitivityExplicit(t *testing.T) {
	rng := testRNG(t)
	for _, noise := range []Noise{NoiseIndependent, NoiseTree, NoiseSqrt} {
		for _, N := range []int{1, 2, 3, 5, 8, 13, 16} {
			if noise == NoiseIndependent && N != 1 {
				continue
			}
			cfg := DPConfig{Noise: noise, Horizon: N}
			if noise == NoiseIndependent {
				cfg.Horizon = 0
			}
			for _, R := range []int{N, 2 * N, 3*N + 2, 4 * N} {
				if N == 1 && R == 3*N+2 {
					R = 7
				}
				B := explicitEncoder(noise, N, R)
				// B^T B >= 0 entrywise.
				for i := range R {
					for j := range R {
						g := 0.0
						for _, r := range B {
							g += r[i] * r[j]
						}
						if g < 0 {
							t.Fatalf("%v N %d: (B^T B)[%d][%d] = %v < 0", noise, N, i, j, g)
						}
					}
				}
				f := cfg.NoiseFactor()
				for m := 1; m <= R+2; m++ {
					got, err := cfg.WindowSensitivity(m, R)
					if err != nil {
						t.Fatal(err)
					}
					w, col := bruteWindow(B, R, min(m, R))
					if R >= N && math.Abs(col-f) > 1e-12*f {
						t.Fatalf("%v N %d R %d: largest column norm %v, noise factor %v", noise, N, R, col, f)
					}
					want := w / f
					exact := R%max(N, 1) == 0
					switch {
					case got < want*(1-1e-12):
						t.Fatalf("%v N %d R %d m %d: rho %v below the explicit %v", noise, N, R, m, got, want)
					case exact && math.Abs(got-want) > 1e-8*want:
						t.Fatalf("%v N %d R %d m %d: rho %v, explicit %v", noise, N, R, m, got, want)
					}
					if m == 1 && got != 1 {
						t.Fatalf("%v N %d R %d: rho(1) = %v, want 1", noise, N, R, got)
					}
				}
				// Random directions d_t (unit vectors in R^3) in a worst
				// window: ||B D||_F never exceeds ||B 1_W||.
				m := min(R, 4)
				w, _ := bruteWindow(B, R, m)
				for range 200 {
					t0 := rng.IntN(R - m + 1)
					D := make([][3]float64, m)
					for i := range D {
						var n2 float64
						for k := range 3 {
							D[i][k] = rng.NormFloat64()
							n2 += D[i][k] * D[i][k]
						}
						for k := range 3 {
							D[i][k] /= math.Sqrt(n2)
						}
					}
					ss := 0.0
					for _, r := range B {
						for k := range 3 {
							v := 0.0
							for i := range m {
								v += r[t0+i] * D[i][k]
							}
							ss += v * v
						}
					}
					if math.Sqrt(ss) > w*(1+1e-12) {
						t.Fatalf("%v N %d R %d: directions %v give %v > aligned %v", noise, N, R, D, math.Sqrt(ss), w)
					}
				}
			}
		}
	}
	for _, bad := range []struct {
		cfg     DPConfig
		m, runs int
	}{
		{DPConfig{}, 0, 5}, {DPConfig{}, 3, 0}, {DPConfig{Noise: NoiseSqrt}, 2, 5}, {DPConfig{Noise: Noise(9), Horizon: 3}, 2, 5},
	} {
		if _, err := bad.cfg.WindowSensitivity(bad.m, bad.runs); err == nil {
			t.Errorf("%+v m %d releases %d: no error", bad.cfg, bad.m, bad.runs)
		}
	}
}

// TestEpisodePrivacyCartPole reproduces the numbers: CartPole's
// defaults (10,000 users, K = 8: 1,250 releases and a horizon of 1,250;
// T = 64 steps per user, episodes of at most 500 steps) put one episode in
// up to 8 consecutive releases, and at z = 1, delta 1e-5 the episode's
// epsilon is about 53 with the square-root factorization (sensitivity 6.97
// columns), 56 with the tree and 15.5 with independent noise, against 4.377
// per user. The sensitivity is checked against the explicit 1,250-release
// encoder.
func TestEpisodePrivacyCartPole(t *testing.T) {
	cfg := DefaultControlConfig()
	cfg.DP.UsersPerUpdate = 8
	opts := TrainOptions{Users: 10000, ContinueEpisodes: true}
	env := sims.NewCartPole()
	for _, c := range []struct {
		noise    Noise
		rho, eps float64
	}{
		{NoiseSqrt, 6.97, 53.2},
		{NoiseTree, 7.19, 55.7},
		{NoiseIndependent, math.Sqrt(8), 15.46},
	} {
		cfg.DP.Noise, cfg.DP.Horizon = c.noise, 0
		if c.noise != NoiseIndependent {
			cfg.DP.Horizon = 1250
		}
		ep, err := TrainEpisodePrivacy(cfg, opts, env.MaxSteps())
		if err != nil {
			t.Fatal(err)
		}
		if ep.Segments != 8 || ep.Releases != 8 {
			t.Fatalf("%v: %d segments in %d releases, want 8 and 8 (ceil(500/64))", c.noise, ep.Segments, ep.Releases)
		}
		if math.Abs(ep.Sensitivity-c.rho) > 0.005 {
			t.Errorf("%v: sensitivity %v columns, want %v", c.noise, ep.Sensitivity, c.rho)
		}
		B := explicitEncoder(c.noise, 1250, 1250)
		if c.noise == NoiseIndependent {
			B = explicitEncoder(c.noise, 1, 40) // the identity: any run length
		}
		w, col := bruteWindow(B, len(B[0]), 8)
		if math.Abs(ep.Sensitivity-w/col) > 1e-8*w/col {
			t.Errorf("%v: sensitivity %v, explicit encoder %v", c.noise, ep.Sensitivity, w/col)
		}
		g, err := accountant.Analytic{}.Epsilon(1e-5, ep.Event(1))
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(g.Epsilon-c.eps) > 0.05 {
			t.Errorf("%v: episode epsilon %v, want %v", c.noise, g.Epsilon, c.eps)
		}
		// The direct Gaussian mechanism of multiplier z f / ||B 1_W||.
		direct, _ := accountant.Analytic{}.Epsilon(1e-5, accountant.Gaussian(col/w))
		if math.Abs(g.Epsilon-direct.Epsilon) > 1e-6*direct.Epsilon {
			t.Errorf("%v: episode epsilon %v, direct %v", c.noise, g.Epsilon, direct.Epsilon)
		}
		// Fresh episodes: one user is one episode.
		fresh := opts
		fresh.ContinueEpisodes = false
		if ep, err := TrainEpisodePrivacy(cfg, fresh, env.MaxSteps()); err != nil || ep.Releases != 1 || ep.Sensitivity != 1 || ep.Event(1) != accountant.Gaussian(1) {
			t.Errorf("%v fresh episodes: %+v, %v", c.noise, ep, err)
		}
	}
	// An episode cannot enter more releases than the run has.
	cfg.DP.Noise, cfg.DP.Horizon = NoiseSqrt, 3
	if ep, err := TrainEpisodePrivacy(cfg, TrainOptions{Users: 24, ContinueEpisodes: true}, 500); err != nil || ep.Segments != 8 || ep.Releases != 3 {
		t.Errorf("24 users, K = 8: %+v, %v; want 8 segments in 3 releases", ep, err)
	}
	if _, err := TrainEpisodePrivacy(cfg, opts, 0); err == nil {
		t.Error("continuing episodes without a finite MaxSteps accepted")
	}
	for _, c := range []struct{ max, T, want int }{{500, 64, 8}, {512, 64, 8}, {513, 64, 9}, {143, 64, 3}, {1, 64, 1}, {200, 2048, 1}} {
		if got, err := EpisodeSegments(c.max, c.T, true); err != nil || got != c.want {
			t.Errorf("EpisodeSegments(%d, %d) = %d, %v; want %d", c.max, c.T, got, err, c.want)
		}
	}
}

// TestWindowSensitivityMatchesAggregator ties WindowSensitivity to the
// noise the Aggregator actually draws: over R releases of zero updates
// (z = 1, S = 1, K = 1) it estimates the covariance Sigma of the released
// sequence g~_1 .. g~_R from many coordinates, and the privacy loss of a
// contributor adding 1 to x_t over a window W is then mu_W^2 = 1_W^T
// Sigma^-1 1_W (the releases are Gaussian with that covariance). The
// factorization's releases are an invertible image of y = C x + w, so the
// worst mu_W is rho(m); the tree's are a many-to-one image of the nodes, so
// it is at most rho(m); independent noise gives sqrt(m).
func TestWindowSensitivityMatchesAggregator(t *testing.T) {
	const n, R = 60000, 8
	for _, noise := range []Noise{NoiseIndependent, NoiseTree, NoiseSqrt} {
		cfg := DPConfig{Mode: ModeDP, NoiseMultiplier: 1, ClipNorm: 1, UsersPerUpdate: 1, PolicyClipShare: 0.5, Noise: noise}
		if noise != NoiseIndependent {
			cfg.Horizon = R
		}
		a, err := NewAggregator(cfg, n/2, n/2, testRNG(t))
		if err != nil {
			t.Fatal(err)
		}
		G := make([][]float64, R)
		zero := make([]float64, n)
		for s := range G {
			G[s] = make([]float64, n)
			treeStep(t, a, zero, G[s])
		}
		sigma := make([][]float64, R)
		for s := range sigma {
			sigma[s] = make([]float64, R)
			for u := range sigma[s] {
				sigma[s][u] = floats.Dot(G[s], G[u]) / n
			}
		}
		for m := 1; m <= R; m++ {
			worst := 0.0
			for t0 := 0; t0+m <= R; t0++ {
				d := make([]float64, R)
				for i := t0; i < t0+m; i++ {
					d[i] = 1
				}
				worst = max(worst, floats.Dot(d, solveSPD(sigma, d)))
			}
			rho, err := cfg.WindowSensitivity(m, R)
			if err != nil {
				t.Fatal(err)
			}
			got, want := math.Sqrt(worst), rho
			t.Logf("%v m %d: mu %.4f rho %.4f", noise, m, got, want)
			switch {
			case got > want*1.04:
				t.Errorf("%v m %d: the releases' mu %v exceeds rho %v", noise, m, got, want)
			case noise != NoiseTree && got < want*0.96:
				t.Errorf("%v m %d: the releases' mu %v, rho %v", noise, m, got, want)
			}
		}
	}
}

// solveSPD solves A x = b by Gaussian elimination with partial pivoting
// (A small and well conditioned).
func solveSPD(A [][]float64, b []float64) []float64 {
	n := len(b)
	M := make([][]float64, n)
	for i := range M {
		M[i] = append(append([]float64(nil), A[i]...), b[i])
	}
	for c := range n {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(M[r][c]) > math.Abs(M[p][c]) {
				p = r
			}
		}
		M[c], M[p] = M[p], M[c]
		for r := c + 1; r < n; r++ {
			f := M[r][c] / M[c][c]
			for k := c; k <= n; k++ {
				M[r][k] -= f * M[c][k]
			}
		}
	}
	x := make([]float64, n)
	for r := n - 1; r >= 0; r-- {
		s := M[r][n]
		for k := r + 1; k < n; k++ {
			s -= M[r][k] * x[k]
		}
		x[r] = s / M[r][r]
	}
	return x
}

// TestEpisodePrivacyCalibrate: Guarantees prices one episode and one
// segment (4.377 per user at z = 1, delta 1e-5, as above), and Calibrate's
// z meets each target per episode without exceeding it, tightly (its
// epsilon is within 1e-3 of the target).
func TestEpisodePrivacyCalibrate(t *testing.T) {
	cfg := DefaultControlConfig()
	cfg.DP.UsersPerUpdate = 8
	opts := TrainOptions{Users: 10000, ContinueEpisodes: true}
	tests := []struct {
		name    string
		noise   Noise
		horizon int
		episode float64 // at z = 1
	}{
		{"independent", NoiseIndependent, 0, 15.46},
		{"tree", NoiseTree, 1250, 55.7},
		{"sqrt", NoiseSqrt, 1250, 53.2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg.DP.Noise, cfg.DP.Horizon = tc.noise, tc.horizon
			ep, err := TrainEpisodePrivacy(cfg, opts, sims.NewCartPole().MaxSteps())
			if err != nil {
				t.Fatal(err)
			}
			g, seg, err := ep.Guarantees(1, 1e-5)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(g.Epsilon-tc.episode) > 0.05 || math.Abs(seg.Epsilon-4.377) > 0.001 {
				t.Fatalf("Guarantees(1, 1e-5) = %v per episode, %v per segment; want %v and 4.377", g.Epsilon, seg.Epsilon, tc.episode)
			}
			for _, target := range []float64{0.5, 1, 8} {
				z, err := ep.Calibrate(target, 1e-5)
				if err != nil {
					t.Fatal(err)
				}
				g, _, err := ep.Guarantees(z, 1e-5)
				if err != nil {
					t.Fatal(err)
				}
				if g.Epsilon > target || g.Epsilon < target-1e-3 {
					t.Errorf("Calibrate(%v) = z %v with epsilon %v per episode", target, z, g.Epsilon)
				}
			}
		})
	}
	if _, err := (EpisodePrivacy{Releases: 1, Sensitivity: 1}).Calibrate(-1, 1e-5); err == nil {
		t.Error("Calibrate accepted a negative target")
	}
}
