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
		if got := (DPConfig{TreeLeaves: N}).TreeLevels(); got != most {
			t.Fatalf("N = %d: TreeLevels %d, brute force %d", N, got, most)
		}
	}
	if got := (DPConfig{}).TreeLevels(); got != 1 {
		t.Fatalf("no tree: TreeLevels %d, want 1", got)
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

// Without noise the tree releases exactly the averaged clipped updates, and
// a one-leaf tree is Algorithm 2 draw for draw.
func TestTreeExactAndOneLeaf(t *testing.T) {
	const n = 3
	cfg := DPConfig{Mode: ModeClipOnly, ClipNorm: 100, UsersPerUpdate: 2, PolicyClipShare: 0.5, TreeLeaves: 5}
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
				t.Fatalf("release %d: g~ = %v, want %v", i, g, want)
			}
		}
	}

	base := DPConfig{Mode: ModeDP, NoiseMultiplier: 1.3, ClipNorm: 1, UsersPerUpdate: 3, PolicyClipShare: 0.8}
	one := base
	one.TreeLeaves = 1
	a2, _ := NewAggregator(base, 2, 1, rand.New(rand.NewPCG(7, 1)))
	a1, _ := NewAggregator(one, 2, 1, rand.New(rand.NewPCG(7, 1)))
	g1, g2 := make([]float64, n), make([]float64, n)
	for i := range 10 {
		x := []float64{0.1 * float64(i), 0.2, -0.3}
		treeStep(t, a1, x, g1)
		treeStep(t, a2, x, g2)
		if !floats.Equal(g1, g2) {
			t.Fatalf("release %d: one-leaf tree %v, Algorithm 2 %v", i, g1, g2)
		}
	}
}

// TestTreeNoiseStructure measures the noise of the tree over many
// coordinates: the noisy prefix sum after t releases carries popcount(t)
// node draws of std sigma = z sqrt(L) S / K, one release's noise
// tz(t) + 1 of them, and a restart starts from zero noise.
func TestTreeNoiseStructure(t *testing.T) {
	const (
		n      = 20000
		leaves = 12
	)
	cfg := DPConfig{Mode: ModeDP, NoiseMultiplier: 0.7, ClipNorm: 2, UsersPerUpdate: 4, PolicyClipShare: 0.5, TreeLeaves: leaves}
	a, err := NewAggregator(cfg, n/2, n/2, testRNG(t))
	if err != nil {
		t.Fatal(err)
	}
	L := cfg.TreeLevels() // 4
	sigma := 0.7 * math.Sqrt(float64(L)) * 2 / 4
	if L != 4 || math.Abs(a.NoiseStd()-sigma) > 1e-15 {
		t.Fatalf("L = %d, NoiseStd %v, want 4 and %v", L, a.NoiseStd(), sigma)
	}
	zero := make([]float64, n)
	g := make([]float64, n)
	prefix := make([]float64, n)
	sd := func(v []float64) float64 { return math.Sqrt(floats.Dot(v, v) / n) }
	// The sample std of n normals has relative std 1/sqrt(2n) = 0.5%.
	check := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want)/want > 0.03 {
			t.Fatalf("%s: std %.5g, want %.5g", what, got, want)
		}
	}
	for s := 1; s <= 2*leaves+3; s++ {
		treeStep(t, a, zero, g)
		tt := (s-1)%leaves + 1 // release within its tree
		if tt == 1 {
			clear(prefix)
		}
		floats.Add(prefix, g)
		check("release", sd(g), sigma*math.Sqrt(float64(bits.TrailingZeros(uint(tt))+1)))
		check("prefix", sd(prefix), sigma*math.Sqrt(float64(bits.OnesCount(uint(tt)))))
	}
}

// TestTreeReleaseAllocs: a tree release allocates nothing.
func TestTreeReleaseAllocs(t *testing.T) {
	cfg := DPConfig{Mode: ModeDP, NoiseMultiplier: 1, ClipNorm: 1, UsersPerUpdate: 2, PolicyClipShare: 0.5, TreeLeaves: 64}
	a, err := NewAggregator(cfg, 50, 50, testRNG(t))
	if err != nil {
		t.Fatal(err)
	}
	x, g := make([]float64, 100), make([]float64, 100)
	if allocs := testing.AllocsPerRun(200, func() {
		_ = a.Add(x)
		_ = a.Release(g)
	}); allocs != 0 {
		t.Fatalf("%v allocs per tree release, want 0", allocs)
	}
}
