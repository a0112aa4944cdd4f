package bandmf

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"dprl/ledger/accountant/bandsens"
	"dprl/noise"
)

func seeded(a, b uint64) *rand.Rand { return rand.New(rand.NewPCG(a, b)) }

// TestStreamNoiseStructure releases T zero inputs over many coordinates
// (each coordinate an independent run) and checks the correlated noise
// w = g~ against the mechanism: z_t = sum_j c_j w_{t-j} (the fresh draws,
// recovered by applying C) has mean 0, variance noise.Std(sigma)^2 and no
// correlation across releases, and the sum of the first T released g~ has
// variance Std^2 PrefixNoise(c, T)^2 per coordinate.
func TestStreamNoiseStructure(t *testing.T) {
	const (
		n     = 4000
		T     = 24
		sigma = 0.7
	)
	for _, b := range []int{1, 3, 8} {
		c := bandsens.SqrtCoefficients(b)
		s, err := NewStream(c, n, sigma, seeded(1, uint64(b)))
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float64, n)
		ws := make([][]float64, T)
		sum := make([]float64, n)
		for tt := range T {
			ws[tt] = make([]float64, n)
			s.Release(x, ws[tt])
			s.Commit()
			for i, v := range ws[tt] {
				sum[i] += v
			}
		}
		sp := noise.Std(sigma)
		zs := make([][]float64, T)
		for tt := range T {
			zs[tt] = make([]float64, n)
			for j := 0; j < b && j <= tt; j++ {
				for i := range n {
					zs[tt][i] += c[j] * ws[tt-j][i]
				}
			}
		}
		// Moments pooled over coordinates and releases.
		var m1, m2, lag float64
		for tt := range T {
			for i := range n {
				z := zs[tt][i]
				m1 += z
				m2 += z * z
				if tt > 0 {
					lag += z * zs[tt-1][i]
				}
			}
		}
		N := float64(n * T)
		m1 /= N
		m2 /= N
		lag /= float64(n * (T - 1))
		// Standard errors: sd/sqrt(N) for the mean, ~sqrt(2/N) relative
		// for the variance; 5 of them.
		if math.Abs(m1) > 5*sp/math.Sqrt(N) || math.Abs(m2/(sp*sp)-1) > 5*math.Sqrt(2/N) || math.Abs(lag/(sp*sp)) > 5/math.Sqrt(float64(n*(T-1))) {
			t.Errorf("b = %d: fresh draws mean %.4g, variance %.4g (want %.4g), lag-1 covariance %.4g", b, m1, m2, sp*sp, lag)
		}
		v := 0.0
		for _, x := range sum {
			v += x * x
		}
		v /= n
		want := sp * sp * PrefixNoise(c, T) * PrefixNoise(c, T)
		if math.Abs(v/want-1) > 5*math.Sqrt(2.0/n) {
			t.Errorf("b = %d: prefix-sum variance %.4g, want %.4g", b, v, want)
		}
	}
}

// TestStreamSignal checks g~ = x + w: with noise, the mean of g~ over many
// coordinates of one constant input is the input; without noise (sigma =
// 0) g~ = x up to rounding.
func TestStreamSignal(t *testing.T) {
	c := bandsens.SqrtCoefficients(5)
	s, err := NewStream(c, 3, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	rng := seeded(7, 7)
	out := make([]float64, 3)
	for range 20 {
		x := []float64{rng.Float64(), -rng.Float64(), 1e3 * rng.Float64()}
		s.Release(x, out)
		s.Commit()
		for i := range x {
			if math.Abs(out[i]-x[i]) > 1e-12*max(1, math.Abs(x[i])) {
				t.Fatalf("no noise: g~ %v, x %v", out, x)
			}
		}
	}
	const n = 20000
	s, err = NewStream(c, n, 1, seeded(8, 8))
	if err != nil {
		t.Fatal(err)
	}
	x, o := make([]float64, n), make([]float64, n)
	for tt := range 6 {
		for i := range x {
			x[i] = float64(tt)
		}
		s.Release(x, o)
		s.Commit()
		m := 0.0
		for _, v := range o {
			m += v
		}
		m /= n
		// w_t has variance at most sum_j h_j^2 sigma'^2 <= 1.1 for 5 bands.
		if math.Abs(m-float64(tt)) > 5*math.Sqrt(1.1/n) {
			t.Errorf("release %d: mean of g~ %v, want %d", tt, m, tt)
		}
	}
}

// TestStreamRestore checks that a stream restored from State continues
// the stream. Without noise (deterministic) a stream stopped halfway and
// restored into a new Stream gives the same releases bit for bit as one run
// straight through. With noise (the restored stream draws afresh: its
// generator is a new one, as after a restart) the fresh draws recovered
// from the whole history, z_t = sum_j c_j (g~_{t-j} - x_{t-j}), are still
// N(0, Std(sigma)^2) after the restore: a state restored out of order or
// incompletely would leave correlated residue in them.
func TestStreamRestore(t *testing.T) {
	const T = 30
	for _, b := range []int{1, 2, 6} {
		c := bandsens.SqrtCoefficients(b)
		for _, sigma := range []float64{0, 0.3} {
			n := 7
			if sigma > 0 {
				n = 3000
			}
			inputs := make([][]float64, T)
			r := seeded(9, 9)
			for i := range inputs {
				inputs[i] = make([]float64, n)
				for j := range inputs[i] {
					inputs[i][j] = r.Float64() - 0.5
				}
			}
			a, _ := NewStream(c, n, sigma, seeded(10, uint64(b)))
			s, _ := NewStream(c, n, sigma, seeded(10, uint64(b)))
			outA := make([]float64, n)
			outs := make([][]float64, T)
			for tt := range T {
				a.Release(inputs[tt], outA)
				a.Commit()
				if tt == T/2 {
					xs, gs := s.State()
					if len(xs) != min(b-1, T/2) {
						t.Fatalf("b = %d: state of %d releases after %d", b, len(xs), T/2)
					}
					s2, _ := NewStream(c, n, sigma, seeded(11, uint64(b)))
					if err := s2.Restore(xs, gs, s.Releases()); err != nil {
						t.Fatal(err)
					}
					s = s2
				}
				outs[tt] = make([]float64, n)
				s.Release(inputs[tt], outs[tt])
				s.Commit()
				if sigma == 0 && !slices.Equal(outA, outs[tt]) {
					t.Fatalf("b = %d, release %d: %v after a restore, %v straight through", b, tt, outs[tt], outA)
				}
			}
			if s.Releases() != T {
				t.Fatalf("releases %d, want %d", s.Releases(), T)
			}
			if sigma == 0 {
				continue
			}
			sp := noise.Std(sigma)
			var m2 float64
			for tt := T / 2; tt < T; tt++ {
				for i := range n {
					z := 0.0
					for j := 0; j < b && j <= tt; j++ {
						z += c[j] * (outs[tt-j][i] - inputs[tt-j][i])
					}
					m2 += z * z
				}
			}
			N := float64(n * (T - T/2))
			if m2 /= N; math.Abs(m2/(sp*sp)-1) > 5*math.Sqrt(2/N) {
				t.Errorf("b = %d: fresh draws after the restore have variance %.4g, want %.4g", b, m2, sp*sp)
			}
		}
	}
}

// TestStreamUncommitted checks that a release that is not committed leaves
// the state as it was: releasing x1, x2 (not committed), x3 gives for x3
// what releasing x1, x3 gives (without noise, deterministic); and that
// Pending returns the pending pair.
func TestStreamUncommitted(t *testing.T) {
	c := bandsens.SqrtCoefficients(4)
	x1, x2, x3 := []float64{1, 2}, []float64{50, -7}, []float64{0.5, 0.25}
	a, _ := NewStream(c, 2, 0, nil)
	b, _ := NewStream(c, 2, 0, nil)
	oa, ob := make([]float64, 2), make([]float64, 2)
	a.Release(x1, oa)
	a.Commit()
	b.Release(x1, ob)
	b.Commit()
	a.Release(x2, oa)
	if px, pg, ok := a.Pending(); !ok || !slices.Equal(px, x2) || !slices.Equal(pg, oa) {
		t.Fatalf("pending %v %v %v", px, pg, ok)
	}
	xs, _ := a.State()
	if len(xs) != 1 || !slices.Equal(xs[0], x1) {
		t.Fatalf("state after an uncommitted release: %v", xs)
	}
	a.Release(x3, oa)
	a.Commit()
	b.Release(x3, ob)
	b.Commit()
	if !slices.Equal(oa, ob) {
		t.Fatalf("after an uncommitted release %v, without it %v", oa, ob)
	}
	if a.Releases() != 2 {
		t.Fatalf("committed releases %d, want 2", a.Releases())
	}
	if _, _, ok := a.Pending(); ok {
		t.Fatal("pending after commit")
	}
}

// TestStreamArguments checks the refused constructions and restores.
func TestStreamArguments(t *testing.T) {
	c := bandsens.SqrtCoefficients(3)
	if _, err := NewStream(c, 2, 1, nil); err == nil {
		t.Error("noise without a generator accepted")
	}
	if _, err := NewStream(c, 0, 1, seeded(1, 1)); err == nil {
		t.Error("zero values accepted")
	}
	if _, err := NewStream(bandsens.SqrtCoefficients(bandsens.MaxBand), bandsens.MaxStateFloats/1000, 1, seeded(1, 1)); err == nil {
		t.Error("a state past bandsens.MaxStateFloats accepted")
	}
	s, _ := NewStream(c, 2, 1, seeded(1, 1))
	v := []float64{0, 0}
	for _, tc := range []struct {
		xs, gs [][]float64
		r      uint64
	}{
		{[][]float64{v, v, v}, [][]float64{v, v, v}, 3}, // more than b-1
		{[][]float64{v}, [][]float64{v, v}, 2},          // unequal
		{[][]float64{{0}}, [][]float64{v}, 1},           // wrong length
		{[][]float64{v}, [][]float64{v}, 5},             // state shorter than min(b-1, releases)
		{[][]float64{v, v}, [][]float64{v, v}, 1},       // more state than releases
	} {
		if err := s.Restore(tc.xs, tc.gs, tc.r); err == nil {
			t.Errorf("restore %d/%d of %d releases accepted", len(tc.xs), len(tc.gs), tc.r)
		}
	}
}

// TestStreamAllocs checks that Release and Commit allocate nothing.
func TestStreamAllocs(t *testing.T) {
	s, _ := NewStream(bandsens.SqrtCoefficients(6), 100, 1, seeded(2, 2))
	x, out := make([]float64, 100), make([]float64, 100)
	if a := testing.AllocsPerRun(50, func() { s.Release(x, out); s.Commit() }); a != 0 {
		t.Fatalf("%v allocations per release", a)
	}
}
