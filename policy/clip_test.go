package policy

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats"
)

// exactSqNorm returns sum_i v_i^2 exactly: a float64 square has at most 106
// significant bits and exponents between -2148 and 2048, so 4400 bits hold
// every partial sum without rounding.
func exactSqNorm(v []float64) *big.Float {
	s := new(big.Float).SetPrec(4400)
	for _, x := range v {
		b := new(big.Float).SetPrec(4400).SetFloat64(x)
		s.Add(s, b.Mul(b, b))
	}
	return s
}

// exactNormAtMost reports whether ||v|| <= c in exact arithmetic.
func exactNormAtMost(v []float64, c float64) bool {
	cb := new(big.Float).SetPrec(4400).SetFloat64(c)
	return exactSqNorm(v).Cmp(cb.Mul(cb, cb)) <= 0
}

// exactNorm returns ||v|| rounded to float64 (for direction checks).
func exactNorm(v []float64) float64 {
	s := exactSqNorm(v)
	s.Sqrt(s)
	f, _ := s.Float64()
	return f
}

func filled(n int, x float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = x
	}
	return v
}

// adversarialClipCases are the vectors every clipping function is tested on.
func adversarialClipCases() []struct {
	name string
	v    []float64
	c    float64
	want clipOutcome
} {
	const big1 = math.MaxFloat64 / 1e10
	sub := math.SmallestNonzeroFloat64
	return []struct {
		name string
		v    []float64
		c    float64
		want clipOutcome
	}{
		{"inside", []float64{3, 4}, 10, clipInside},
		{"exactly on the bound", []float64{3, 4}, 5, clipInside},
		{"3-4-5 to 1", []float64{3, 4}, 1, clipScaled},
		// 0.6^2 + 0.8^2 > 1 in exact arithmetic (0.8 rounds up).
		{"0.6 0.8 at 1", []float64{0.6, 0.8}, 1, clipScaled},
		{"zero vector", []float64{0, 0, 0}, 1, clipInside},
		{"zero clip", []float64{1e-300, 2}, 0, clipScaled},
		{"two MaxFloat64", []float64{math.MaxFloat64, math.MaxFloat64}, 1, clipScaled},
		{"two MaxFloat64 at MaxFloat64", []float64{math.MaxFloat64, -math.MaxFloat64}, math.MaxFloat64, clipScaled},
		{"one MaxFloat64 at MaxFloat64", []float64{math.MaxFloat64, 0}, math.MaxFloat64, clipInside},
		{"1000 x MaxFloat64/1e10", filled(1000, big1), 1, clipScaled},
		{"1000 x MaxFloat64/1e10 inside 1e300", filled(1000, big1), 1e300, clipInside},
		{"1000 x MaxFloat64/1e10 at 1e299", filled(1000, big1), 1e299, clipScaled},
		{"huge and tiny", []float64{1e300, -1e300, 1e-300, sub}, 1e300, clipScaled},
		{"subnormals inside", []float64{sub, 3 * sub, 1e-320}, 1e-300, clipInside},
		{"subnormals to a subnormal clip", []float64{sub, 3 * sub, 1e-320}, 7 * sub, clipScaled},
		{"subnormals to the smallest clip", []float64{1e-320, -1e-321}, sub, clipScaled},
		{"normal to a subnormal clip", []float64{1, 2, 3}, 1e-310, clipScaled},
		{"one +Inf", []float64{1, math.Inf(1), 2}, 1, clipNonFinite},
		{"one -Inf", []float64{1, math.Inf(-1), 2}, 1e300, clipNonFinite},
		{"one NaN", []float64{math.NaN(), 1}, 1, clipNonFinite},
		{"NaN inside the bound", []float64{math.NaN(), 0}, math.Inf(1), clipNonFinite},
		{"unbounded", []float64{math.MaxFloat64, math.MaxFloat64}, math.Inf(1), clipInside},
	}
}

// checkClipped asserts the clip contract on out = clip(in, c).
func checkClipped(t *testing.T, in, out []float64, c float64, got clipOutcome) {
	t.Helper()
	switch got {
	case clipNonFinite:
		for i, x := range out {
			if x != 0 {
				t.Fatalf("non-finite input: out[%d] = %v, want the zero vector", i, x)
			}
		}
		return
	case clipInside:
		if !floats.Same(in, out) {
			t.Fatalf("inside: changed the vector")
		}
	}
	for i, x := range out {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			t.Fatalf("out[%d] = %v", i, x)
		}
	}
	if !math.IsInf(c, 1) && !exactNormAtMost(out, c) {
		t.Fatalf("exact norm of the result %v > c = %v", exactSqNorm(out), c)
	}
	if got != clipScaled || c == 0 {
		return
	}
	// Scaled: same direction, norm within rounding of c (never zeroed when
	// c is a normal number).
	if c >= 0x1p-1000 {
		n := exactNorm(out)
		if !(n >= c*(1-1e-14-4*fastRho(len(out)))) {
			t.Fatalf("scaled to norm %v, want about %v", n, c)
		}
		// in/||in|| and out/||out||, compared in scaled units.
		_, e := math.Frexp(floats.Norm(in, math.Inf(1)))
		si := scaled(in, -e)
		ni := exactNorm(si)
		for i := range in {
			if d := math.Abs(si[i]/ni - out[i]/n); d > 1e-12 {
				t.Fatalf("direction changed at %d by %g", i, d)
			}
		}
	}
}

func scaled(v []float64, e int) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = math.Ldexp(x, e)
	}
	return out
}

func TestClipL2Adversarial(t *testing.T) {
	for _, tc := range adversarialClipCases() {
		t.Run(tc.name, func(t *testing.T) {
			out := append([]float64(nil), tc.v...)
			got := clipL2(out, tc.c)
			if got != tc.want {
				t.Fatalf("outcome %v, want %v", got, tc.want)
			}
			checkClipped(t, tc.v, out, tc.c, got)
			// The exported Clip is the same function.
			out2 := append([]float64(nil), tc.v...)
			Clip(out2, tc.c)
			if !floats.Same(out, out2) {
				t.Fatal("Clip and clipL2 differ")
			}
		})
	}
}

// TestClipL2NearBoundary clips random vectors whose norm is within a few
// ulps of c, at every scale, and checks the exact norm of the result.
func TestClipL2NearBoundary(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := range 3000 {
		n := 1 + rng.IntN(64)
		if trial%100 == 0 {
			n = 5000
		}
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64() * math.Pow(2, float64(rng.IntN(40)-20))
		}
		exp := rng.IntN(2000) - 1000
		for i := range v {
			v[i] = math.Ldexp(v[i], exp)
		}
		// c = the rounded norm, nudged by a few ulps either way.
		c := exactNorm(v)
		for range rng.IntN(4) {
			if rng.IntN(2) == 0 {
				c = math.Nextafter(c, 0)
			} else {
				c = math.Nextafter(c, math.Inf(1))
			}
		}
		if c == 0 || math.IsInf(c, 0) {
			continue
		}
		out := append([]float64(nil), v...)
		got := clipL2(out, c)
		if got == clipNonFinite {
			t.Fatalf("trial %d: finite vector reported non-finite", trial)
		}
		if !exactNormAtMost(out, c) {
			t.Fatalf("trial %d (n %d, 2^%d): exact norm above c = %v after %v", trial, n, exp, c, got)
		}
		if got == clipInside && !exactNormAtMost(v, c) {
			t.Fatalf("trial %d: left unchanged above c", trial)
		}
		if got == clipScaled && exactNorm(out) < c*(1-1e-14-4*fastRho(n)) {
			t.Fatalf("trial %d: scaled to %v, want about %v", trial, exactNorm(out), c)
		}
	}
}

// TestNormAtMostAgreesWithExact checks the certified comparison against
// exact arithmetic on both sides of the boundary.
func TestNormAtMostAgreesWithExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 2000 {
		v := make([]float64, 1+rng.IntN(32))
		for i := range v {
			v[i] = math.Ldexp(rng.NormFloat64(), rng.IntN(60)-30)
		}
		c := exactNorm(v)
		for _, cc := range []float64{c, math.Nextafter(c, 0), math.Nextafter(c, math.Inf(1)), c * (1 + 1e-12), c * (1 - 1e-12)} {
			got, want := normAtMost(v, cc), exactNormAtMost(v, cc)
			if got && !want {
				t.Fatalf("trial %d: certified ||v|| <= %v, exact says no", trial, cc)
			}
			// Conservative only within 2^-90 relative of the boundary.
			if !got && want {
				if d := new(big.Float).Sub(new(big.Float).Mul(new(big.Float).SetFloat64(cc), new(big.Float).SetFloat64(cc)), exactSqNorm(v)); d.Cmp(new(big.Float).SetFloat64(cc*cc*0x1p-90)) > 0 {
					t.Fatalf("trial %d: refused ||v|| <= %v with room %v", trial, cc, d)
				}
			}
		}
	}
}

func TestClipPanicsOnBadNorm(t *testing.T) {
	for _, c := range []float64{-1, math.NaN(), math.Inf(-1)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("clip norm %v accepted", c)
				}
			}()
			Clip([]float64{1}, c)
		}()
	}
}

// TestClipToAdversarial: log-linear DPPG's per-episode clip (clipTo).
func TestClipToAdversarial(t *testing.T) {
	for _, tc := range adversarialClipCases() {
		if tc.c == 0 || math.IsInf(tc.c, 0) {
			continue // clipTo gets a finite S > 0
		}
		t.Run(tc.name, func(t *testing.T) {
			out := append([]float64(nil), tc.v...)
			changed := clipTo(out, tc.c)
			if changed != (tc.want != clipInside) {
				t.Fatalf("clipTo reported %v for outcome %v", changed, tc.want)
			}
			checkClipped(t, tc.v, out, tc.c, tc.want)
		})
	}
}

// TestAggregatorAddAdversarial: DPPG's per-user clip of theta_local - theta,
// block-wise to S_pi and S_v. A non-finite update counts as the zero vector.
func TestAggregatorAddAdversarial(t *testing.T) {
	const nPi, nV = 2, 2
	cfg := DPConfig{Mode: ModeClipOnly, ClipNorm: 1, UsersPerUpdate: 4, PolicyClipShare: 0.64}
	sPi, sV := cfg.clipNorms()
	M, sub := math.MaxFloat64, math.SmallestNonzeroFloat64
	for _, tc := range []struct {
		name     string
		g        []float64
		zero     bool // counted as the zero vector
		unchaged bool
	}{
		{"inside", []float64{0.1, 0.2, 0.1, -0.1}, false, true},
		{"both blocks clipped", []float64{3, 4, -6, 8}, false, false},
		{"huge", []float64{M, M, M / 1e10, -M / 1e10}, false, false},
		{"subnormal", []float64{sub, -sub, 3 * sub, sub}, false, true},
		{"NaN in the value block", []float64{0.1, 0.2, math.NaN(), 0}, true, false},
		{"Inf in the policy block", []float64{math.Inf(1), 0, 0.1, 0.1}, true, false},
		{"-Inf", []float64{0, math.Inf(-1), 0, 0}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := NewAggregator(cfg, nPi, nV, nil)
			if err != nil {
				t.Fatal(err)
			}
			base := []float64{0.25, -0.25, 0.125, 0.5}
			if err := a.Add(base); err != nil {
				t.Fatal(err)
			}
			if err := a.Add(tc.g); err != nil {
				t.Fatalf("Add: %v, want nil (a non-finite update counts as zero)", err)
			}
			if a.Len() != 2 {
				t.Fatalf("Len %d, want 2: the update must take its place among the K", a.Len())
			}
			// The sum holds base + clip(g); read it back through Release
			// (clip-only: g~ = sum / K).
			g := make([]float64, nPi+nV)
			if err := a.Release(g); err != nil {
				t.Fatal(err)
			}
			contrib := make([]float64, nPi+nV)
			for i := range g {
				contrib[i] = g[i]*4 - base[i]
			}
			for i, x := range contrib {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					t.Fatalf("contribution[%d] = %v", i, x)
				}
			}
			if tc.zero {
				if !floats.EqualApprox(contrib, make([]float64, len(contrib)), 1e-15) {
					t.Fatalf("non-finite update contributed %v, want zero", contrib)
				}
				return
			}
			// Check the clip itself on a copy (the sum rounds).
			pi, v := append([]float64(nil), tc.g[:nPi]...), append([]float64(nil), tc.g[nPi:]...)
			Clip(pi, sPi)
			Clip(v, sV)
			if !exactNormAtMost(pi, sPi) || !exactNormAtMost(v, sV) {
				t.Fatalf("blocks %v %v above %v %v", pi, v, sPi, sV)
			}
			if tc.unchaged && !floats.Same(append(pi, v...), tc.g) {
				t.Fatalf("inside update changed to %v %v", pi, v)
			}
		})
	}
	// Not private: nothing is clipped and a non-finite update is refused.
	p, err := NewAggregator(DPConfig{Mode: ModePPO, UsersPerUpdate: 2}, 1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Add([]float64{math.NaN(), 0}); !errors.Is(err, ErrNonFinite) || p.Len() != 0 {
		t.Fatalf("ppo NaN: %v, len %d", err, p.Len())
	}
}

// TestGhostClipperNonFinite: units with a NaN or Inf anywhere in their rows,
// or a squared norm that overflows, contribute exactly nothing; the others
// are clipped as usual.
func TestGhostClipperNonFinite(t *testing.T) {
	rng := testRNG(t)
	for _, tc := range []struct {
		name   string
		sizes  []int
		n      int
		bounds []int
		bad    []int // units made non-finite
		poison func(x, dOut []float64, out, in int, r0, r1 int)
	}{
		{"NaN dOut row", []int{4, 16, 3}, 6, nil, []int{2}, func(x, d []float64, out, in, r0, r1 int) {
			d[r0*out+1] = math.NaN()
		}},
		{"Inf input row", []int{4, 16, 8, 3}, 6, nil, []int{0, 5}, func(x, d []float64, out, in, r0, r1 int) {
			x[r0*in] = math.Inf(1)
		}},
		// A zero dOut row meets a NaN input: 0 * NaN must not be skipped.
		{"zero dOut with NaN input", []int{4, 16, 3}, 5, nil, []int{3}, func(x, d []float64, out, in, r0, r1 int) {
			clear(d[r0*out : r1*out])
			x[r0*in+2] = math.NaN()
		}},
		{"overflowing norm", []int{4, 16, 3}, 5, nil, []int{1}, func(x, d []float64, out, in, r0, r1 int) {
			for i := r0 * out; i < r1*out; i++ {
				d[i] = 1e200
			}
		}},
		{"episodes, gram path", []int{6, 64, 64, 3}, 12, []int{0, 2, 5, 12}, []int{1}, func(x, d []float64, out, in, r0, r1 int) {
			d[(r0+1)*out] = math.NaN()
		}},
		{"episodes, materialised path", []int{3, 5, 2}, 40, []int{0, 1, 39, 40}, []int{1}, func(x, d []float64, out, in, r0, r1 int) {
			x[(r0+7)*in] = math.Inf(-1)
		}},
		{"all units", []int{3, 5, 2}, 3, nil, []int{0, 1, 2}, func(x, d []float64, out, in, r0, r1 int) {
			d[r0*out] = math.NaN()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mustMLP(t, tc.sizes...)
			p := make([]float64, m.NumParams())
			m.Init(p, rng, 1)
			in, out := m.In(), m.Out()
			x := randSlice(rng, tc.n*in, 1)
			dOut := randSlice(rng, tc.n*out, 1)
			isBad := map[int]bool{}
			for _, u := range tc.bad {
				r0, r1 := unitRows(tc.bounds, u)
				tc.poison(x, dOut, out, in, r0, r1)
				isBad[u] = true
			}
			// Reference: the finite units' clipped gradients, materialised
			// from a batch of those units only.
			var gx, gd []float64
			var gb []int
			U := tc.n
			if tc.bounds != nil {
				U = len(tc.bounds) - 1
				gb = []int{0}
			}
			for u := range U {
				if isBad[u] {
					continue
				}
				r0, r1 := unitRows(tc.bounds, u)
				gx = append(gx, x[r0*in:r1*in]...)
				gd = append(gd, dOut[r0*out:r1*out]...)
				if gb != nil {
					gb = append(gb, gb[len(gb)-1]+r1-r0)
				}
			}
			const clip = 0.5
			want := make([]float64, m.NumParams())
			if ng := len(gx) / in; ng > 0 {
				m.ForwardBatch(make([]float64, ng*out), p, gx, ng)
				for _, r := range refUnitGrads(m, p, gd, gb) {
					Clip(r, clip)
					floats.Add(want, r)
				}
			}
			y := make([]float64, tc.n*out)
			g := NewGhostClipper(m)
			got := make([]float64, m.NumParams())
			m.ForwardBatch(y, p, x, tc.n)
			g.ClippedSum(got, p, dOut, tc.bounds, clip)
			if g.LastNonFinite() != len(tc.bad) {
				t.Errorf("LastNonFinite %d, want %d", g.LastNonFinite(), len(tc.bad))
			}
			for i, v := range got {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("grad[%d] = %v: a non-finite unit reached the sum", i, v)
				}
			}
			if d := floats.Distance(got, want, math.Inf(1)); d > 1e-10*(1+floats.Norm(want, math.Inf(1))) {
				t.Fatalf("clipped sum off by %g", d)
			}
		})
	}
}

// TestGhostClipperFactorBound: for clipped units, the factor never rounds
// the scaled norm above clip (f ||g_u|| <= clip in floating point), over
// norms near every scale.
func TestGhostClipperFactorBound(t *testing.T) {
	rng := testRNG(t)
	m := mustMLP(t, 3, 8, 2)
	p := make([]float64, m.NumParams())
	m.Init(p, rng, 1)
	const n = 16
	x := randSlice(rng, n*3, 1)
	y := make([]float64, n*2)
	g := NewGhostClipper(m)
	grad := make([]float64, m.NumParams())
	for trial := range 200 {
		dOut := randSlice(rng, n*2, math.Pow(10, float64(trial%40-20)))
		m.ForwardBatch(y, p, x, n)
		norms := make([]float64, n)
		g.Norms(norms, p, dOut, nil)
		clip := norms[rng.IntN(n)] * (1 - 1e-15*float64(rng.IntN(3)))
		m.ForwardBatch(y, p, x, n)
		g.ClippedSum(grad, p, dOut, nil, clip)
		for u := range n {
			if f := g.fac[u]; f*g.LastNorm(u) > clip {
				t.Fatalf("trial %d unit %d: f %v * norm %v > clip %v", trial, u, f, g.LastNorm(u), clip)
			}
		}
	}
}

// BenchmarkClip measures Clip on a DPPG-sized update (about 9000
// parameters), scaled (the common case in DP training) and inside.
func BenchmarkClip(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	v := make([]float64, 9000)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	w := make([]float64, len(v))
	for _, c := range []struct {
		name string
		s    float64
	}{{"scaled", 1}, {"inside", 1e3}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				copy(w, v)
				Clip(w, c.s)
			}
		})
	}
}

// TestClipUpdateAsAdd: ClipUpdate leaves a vector exactly as the
// Aggregator's Add counts it (the sum of one clipped update, K = 1, no
// noise), for a finite update over both clips and one with a NaN.
func TestClipUpdateAsAdd(t *testing.T) {
	cfg := DPConfig{Mode: ModeClipOnly, ClipNorm: 1, UsersPerUpdate: 1, PolicyClipShare: 0.8}
	for _, g := range [][]float64{{3, 4, 0, 12}, {0.1, 0.1, 0.1, 0.1}, {1, math.NaN(), 2, 2}} {
		a, err := NewAggregator(cfg, 2, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Add(g); err != nil {
			t.Fatal(err)
		}
		want := make([]float64, 4)
		if err := a.Release(want); err != nil {
			t.Fatal(err)
		}
		got := append([]float64(nil), g...)
		cfg.ClipUpdate(got, 2)
		for i := range got {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("%v: ClipUpdate %v, Add %v", g, got, want)
			}
		}
	}
}
