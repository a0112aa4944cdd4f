package noise

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func testRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6e6f6973)) }

// phi is the standard normal CDF.
func phi(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// TestNormalKS checks Karney's sampler against the standard normal CDF with a
// Kolmogorov-Smirnov test on the sample truncated to 64 fractional bits.
func TestNormalKS(t *testing.T) {
	const n = 200_000
	var nm normal
	rng := testRNG(1)
	ys := make([]float64, n)
	for i := range ys {
		nm.sample(rng)
		y := float64(nm.k) + (float64(nm.x.digit(0, rng))+0.5)*0x1p-64
		if nm.negate {
			y = -y
		}
		ys[i] = y
	}
	slices.Sort(ys)
	d := 0.0
	for i, y := range ys {
		c := phi(y)
		d = max(d, math.Abs(c-float64(i)/n), math.Abs(c-float64(i+1)/n))
	}
	// P(D > 1.95/sqrt(n)) ~ 0.001 for the true distribution.
	if crit := 1.95 / math.Sqrt(n); d > crit {
		t.Fatalf("KS distance %.5f > %.5f", d, crit)
	}
	// Moments: mean 0, variance 1, fourth moment 3.
	var m1, m2, m4 float64
	for _, y := range ys {
		m1 += y
		m2 += y * y
		m4 += y * y * y * y
	}
	m1, m2, m4 = m1/n, m2/n, m4/n
	if math.Abs(m1) > 5/math.Sqrt(n) || math.Abs(m2-1) > 5*math.Sqrt(2.0/n) || math.Abs(m4-3) > 5*math.Sqrt(96.0/n) {
		t.Fatalf("moments: mean %.4f, variance %.4f, fourth %.4f", m1, m2, m4)
	}
}

// TestRoundDistribution checks the exact rounding on a coarse scale, where
// the probability of each integer is visible: round(f + s N) for s = 1.5 and
// several fractional offsets f must follow Phi((n + 1/2 - f)/s) -
// Phi((n - 1/2 - f)/s) (chi-square test).
func TestRoundDistribution(t *testing.T) {
	for _, tc := range []struct {
		s    float64
		frac float64
	}{{1.5, 0}, {1.5, 0.25}, {0.75, 0.5}, {3.125, 0.9990234375}} {
		M := uint64(tc.s * (1 << scaleBits))
		f := uint64(tc.frac * (1 << inputBits))
		g := NewGaussian(testRNG(2))
		const n = 200_000
		counts := map[int64]int{}
		for range n {
			g.n.sample(g.rng)
			counts[g.round(M, f)]++
		}
		chi2, cells := 0.0, 0
		lo, hi := int64(math.Floor(-6*tc.s)), int64(math.Ceil(6*tc.s))
		for v := lo; v <= hi; v++ {
			p := phi((float64(v)+0.5-tc.frac)/tc.s) - phi((float64(v)-0.5-tc.frac)/tc.s)
			e := p * n
			if e < 20 {
				continue
			}
			o := float64(counts[v])
			chi2 += (o - e) * (o - e) / e
			cells++
		}
		// chi-square with cells-1 degrees of freedom: mean cells-1, sd
		// sqrt(2(cells-1)); 5 sd is far in the tail for the right law.
		if df := float64(cells - 1); chi2 > df+5*math.Sqrt(2*df) {
			t.Errorf("s %v, frac %v: chi2 %.1f with %d cells", tc.s, tc.frac, chi2, cells)
		}
	}
}

// TestRoundSlowAgrees checks that the 128-bit path and the arbitrary-precision
// path give the same value for the same sample.
func TestRoundSlowAgrees(t *testing.T) {
	g := NewGaussian(testRNG(3))
	rng := testRNG(4)
	for i := range 20_000 {
		_, _, M := params(math.Ldexp(1+rng.Float64(), rng.IntN(40)-20))
		if i%7 == 0 {
			M = uint64(1+rng.IntN(1000)) << 20 // coarse scales too
		}
		f := rng.Uint64N(1 << inputBits)
		g.n.sample(g.rng)
		fast := g.round(M, f)
		if slow := g.roundSlow(M, f); slow != fast {
			t.Fatalf("M %d f %d k %d neg %v: fast %d, slow %d", M, f, g.n.k, g.n.negate, fast, slow)
		}
	}
}

// TestAddGrid checks that every output is an integer multiple of Grid(sigma),
// a power of two that depends on sigma alone, and that the noise has the
// documented standard deviation.
func TestAddGrid(t *testing.T) {
	g := NewGaussian(testRNG(5))
	for _, sigma := range []float64{1e-6, 0.37, 1, 3.5, 1e4} {
		gamma := Grid(sigma)
		if fr, _ := math.Frexp(gamma); fr != 0.5 {
			t.Fatalf("grid %v is not a power of two", gamma)
		}
		if r := Std(sigma) / gamma; r < 1<<gridBits || r >= 1<<(gridBits+1) {
			t.Fatalf("sigma'/gamma = %v", r)
		}
		const n = 50_000
		v := make([]float64, n)
		base := 0.123456789 * sigma
		for i := range v {
			v[i] = base
		}
		g.Add(v, sigma)
		var s1, s2 float64
		for _, x := range v {
			if q := x / gamma; q != math.Trunc(q) {
				t.Fatalf("sigma %v: output %v is not a multiple of %v", sigma, x, gamma)
			}
			d := (x - base) / sigma
			s1 += d
			s2 += d * d
		}
		m, varr := s1/n, s2/n-(s1/n)*(s1/n)
		if math.Abs(m) > 5/math.Sqrt(n) || math.Abs(varr-1) > 5*math.Sqrt(2.0/n) {
			t.Errorf("sigma %v: noise mean %.4f sd, variance %.4f sd^2", sigma, m, varr)
		}
	}
}

// TestAddInputs checks the edge inputs: NaN becomes noise around 0,
// infinities and huge values are clamped, values are kept to the grid.
func TestAddInputs(t *testing.T) {
	g := NewGaussian(testRNG(6))
	sigma := 1.0
	v := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, -1e300, 5e-324, 0}
	g.Add(v, sigma)
	lim := math.Ldexp(Grid(sigma), clampBits)
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > lim+40*sigma {
			t.Fatalf("v[%d] = %v", i, x)
		}
	}
	if math.Abs(v[0]) > 40 || math.Abs(v[5]) > 40 || v[1] < lim-40 || v[2] > -lim+40 {
		t.Fatalf("clamping: %v", v)
	}
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1), 1e-300} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Add with sigma %v did not panic", bad)
				}
			}()
			g.Add([]float64{1}, bad)
		}()
	}
}

func TestAddAllocs(t *testing.T) {
	g := NewGaussian(testRNG(7))
	v := make([]float64, 1000)
	g.Add(v, 1)
	if a := testing.AllocsPerRun(20, func() { g.Add(v, 0.5) }); a != 0 {
		t.Fatalf("Add allocates %v per call", a)
	}
}

func TestAddSeeded(t *testing.T) {
	a, b := make([]float64, 100), make([]float64, 100)
	NewGaussian(testRNG(8)).Add(a, 2)
	NewGaussian(testRNG(8)).Add(b, 2)
	if !slices.Equal(a, b) {
		t.Fatal("same seed, different noise")
	}
}

// BenchmarkNoise compares Add with the floating-point x + sigma N it
// replaces, per coordinate, in the same run.
func BenchmarkNoise(b *testing.B) {
	v := make([]float64, 1024)
	b.Run("exact", func(b *testing.B) {
		g := NewGaussian(rand.New(rand.NewChaCha8([32]byte{1})))
		b.ReportAllocs()
		b.SetBytes(int64(8 * len(v)))
		for b.Loop() {
			g.Add(v, 1.5)
		}
	})
	b.Run("float", func(b *testing.B) {
		rng := rand.New(rand.NewChaCha8([32]byte{1}))
		b.ReportAllocs()
		b.SetBytes(int64(8 * len(v)))
		for b.Loop() {
			for i := range v {
				v[i] += 1.5 * rng.NormFloat64()
			}
		}
	})
}
