package noise

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"sort"
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
// Phi((n - 1/2 - f)/s) (chi-square test), with N from either sampler.
func TestRoundDistribution(t *testing.T) {
	for _, tc := range []struct {
		s     float64
		frac  float64
		table bool
	}{{1.5, 0, false}, {1.5, 0.25, false}, {0.75, 0.5, false}, {3.125, 0.9990234375, false},
		{1.5, 0, true}, {1.5, 0.25, true}, {0.75, 0.5, true}, {3.125, 0.9990234375, true}} {
		M := uint64(tc.s * (1 << scaleBits))
		f := uint64(tc.frac * (1 << inputBits))
		g := NewGaussian(testRNG(2))
		const n = 200_000
		counts := map[int64]int{}
		for range n {
			if tc.table {
				g.n.sampleTable()
			} else {
				g.n.sample(g.rng)
			}
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
			t.Errorf("s %v, frac %v, table %v: chi2 %.1f with %d cells", tc.s, tc.frac, tc.table, chi2, cells)
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
		if i%2 == 0 {
			g.n.sample(g.rng)
		} else {
			g.n.sampleTable() // digit 0 drawn in part
		}
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
	r := NewGaussianReference(testRNG(7))
	r.Add(v, 1)
	if a := testing.AllocsPerRun(5, func() { r.Add(v, 1.5) }); a != 0 {
		t.Fatalf("the reference sampler allocates %v per call", a)
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

// TestOnGrid checks the input rounding against its definition with
// math.Round: ai = floor(a), f = round((a - ai) 2^40), carried.
func TestOnGrid(t *testing.T) {
	rng := testRNG(60)
	ref := func(a float64) (int64, uint64) {
		const lim = 1 << clampBits
		if a != a {
			a = 0
		}
		a = max(-lim, min(lim, a))
		ai := math.Floor(a)
		f := uint64(math.Round((a - ai) * (1 << inputBits)))
		if f == 1<<inputBits {
			ai, f = ai+1, 0
		}
		return int64(ai), f
	}
	as := []float64{0, math.Copysign(0, -1), 0.5, -0.5, 0x1p-41, -0x1p-41, 0x1p-41 - 0x1p-94, -0x1p-41 - 0x1p-94,
		1 - 0x1p-53, -1 + 0x1p-53, -0x1p-60, math.Inf(1), math.Inf(-1), math.NaN(), 1 << 62, -(1 << 62), 1e300, -1e300,
		math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, 3 + 0x1p-41, -3 - 0x1p-41}
	for range 200_000 {
		a := math.Ldexp(rng.Float64()+0.5, rng.IntN(140)-70)
		if rng.IntN(2) == 0 {
			a = -a
		}
		if rng.IntN(4) == 0 { // near a half of the input grid
			a = math.Ldexp(math.Round(math.Ldexp(a, 41))+float64(rng.IntN(3)-1)*0x1p-10, -41)
		}
		as = append(as, a)
	}
	for _, a := range as {
		gi, gf := onGrid(a)
		wi, wf := ref(a)
		if gi != wi || gf != wf {
			t.Fatalf("onGrid(%v) = (%d, %d), want (%d, %d)", a, gi, gf, wi, wf)
		}
	}
}

// TestAddFastPathAgrees checks Add's inline common case against
// sampleTableFrom and round: on the same stream they give the same output,
// bit for bit.
func TestAddFastPathAgrees(t *testing.T) {
	for _, sigma := range []float64{0.5, 1.5, 40, 1e-6, 3e5} {
		a, b := NewGaussian(testRNG(61)), NewGaussian(testRNG(61))
		b.slowOnly = true
		va, vb := make([]float64, 50_000), make([]float64, 50_000)
		for i := range va {
			va[i] = sigma * float64(i%17-8) / 3
			vb[i] = va[i]
		}
		a.Add(va, sigma)
		b.Add(vb, sigma)
		if !slices.Equal(va, vb) {
			t.Fatalf("sigma %v: the inline path and sampleTableFrom + round differ", sigma)
		}
	}
}

// phiBig returns Phi(z) = 1/2 + sign(z) P(|N| < |z|)/2 at 200 bits, as a
// float64.
func phiBig(z *big.Float, c ival) float64 {
	az := new(big.Float).Abs(z)
	p := certProbBelow(az, c, 200)
	h := new(big.Float).SetPrec(256).Quo(p.lo, big.NewFloat(2))
	if z.Sign() < 0 {
		h.Neg(h)
	}
	h.Add(h, big.NewFloat(0.5))
	f, _ := h.Float64()
	return f
}

// TestAddExactLaw checks Add's rounded output against the exact law of
// gamma round((v + sigma' N)/gamma) (chi-square over cells of lattice
// points, their probabilities computed at 200 bits) at several sigmas and
// offsets v, with both samplers: the table sampler on 1,000,000 draws each
// (DPRL_NOISE_LONG=1: 40,000,000), Karney's on 200,000.
func TestAddExactLaw(t *testing.T) {
	n := 1_000_000
	if longTests() {
		n = 40_000_000
	}
	c := certSqrt2OverPi(220)
	for _, tc := range []struct {
		sigma, v float64 // v in units of sigma
		ref      bool
	}{
		{0.5, 0, false}, {0.5, 0.3, false}, {1.5, 1.0 / 3, false}, {1.5, -7.25, false}, {40, 0.1, false},
		{40, 1000.5, false}, {1.5, 0.3, true}, {40, -2.5, true},
	} {
		nn := n
		if tc.ref {
			nn = 200_000
		}
		gamma, sp := Grid(tc.sigma), Std(tc.sigma)
		// v on the input grid gamma 2^-40, so that v° = v
		v := math.Round(tc.v*tc.sigma/gamma*(1<<inputBits)) * gamma / (1 << inputBits)
		// cell edges: lattice points nearest v + sigma' z, z = -4, -3.5,
		// ..., 4; cell m holds the outputs in [e_m, e_{m+1})
		var edges []float64
		for z := -4.0; z <= 4.0; z += 0.5 {
			edges = append(edges, math.Round((v+sp*z)/gamma)*gamma)
		}
		// P(output in [e_a, e_b)) = Phi((e_b - gamma/2 - v)/sigma') -
		// Phi((e_a - gamma/2 - v)/sigma')
		cdf := make([]float64, len(edges))
		for m, e := range edges {
			z := new(big.Float).SetPrec(300).Sub(big.NewFloat(e), big.NewFloat(gamma/2))
			z.Sub(z, big.NewFloat(v))
			z.Quo(z, big.NewFloat(sp))
			cdf[m] = phiBig(z, c)
		}
		newG := NewGaussian
		if tc.ref {
			newG = NewGaussianReference
		}
		g := newG(testRNG(62))
		counts := make([]float64, len(edges)+1)
		buf := make([]float64, 4096)
		for done := 0; done < nn; done += len(buf) {
			m := min(len(buf), nn-done)
			for i := range buf[:m] {
				buf[i] = v
			}
			g.Add(buf[:m], tc.sigma)
			for _, o := range buf[:m] {
				if o/gamma != math.Trunc(o/gamma) {
					t.Fatalf("output %v off the grid %v", o, gamma)
				}
				counts[sort.SearchFloat64s(edges, math.Nextafter(o, math.Inf(1)))]++
			}
		}
		chi2 := 0.0
		for m := range counts {
			lo, hi := 0.0, 1.0
			if m > 0 {
				lo = cdf[m-1]
			}
			if m < len(cdf) {
				hi = cdf[m]
			}
			e := (hi - lo) * float64(nn)
			chi2 += (counts[m] - e) * (counts[m] - e) / e
		}
		if df := float64(len(counts) - 1); chi2 > df+5*math.Sqrt(2*df) {
			t.Errorf("sigma %v, v %v sigma, reference %v: chi2 %.1f with %d cells", tc.sigma, tc.v, tc.ref, chi2, len(counts))
		}
	}
}

// BenchmarkNoise compares Add with the table sampler (exact), Add with
// Karney's sampler (karney, the reference) and the floating-point x + sigma N
// they replace, in the same run, at the sigmas 0.5, 1.5 and 40; ns/coord is
// the time per coordinate.
func BenchmarkNoise(b *testing.B) {
	v := make([]float64, 1024)
	perCoord := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(v)), "ns/coord")
	}
	for _, sigma := range []float64{0.5, 1.5, 40} {
		for _, s := range []struct {
			name string
			new  func(*rand.Rand) *Gaussian
		}{{"exact", NewGaussian}, {"karney", NewGaussianReference}} {
			b.Run(fmt.Sprintf("%s/sigma=%g", s.name, sigma), func(b *testing.B) {
				g := s.new(rand.New(rand.NewChaCha8([32]byte{1})))
				b.ReportAllocs()
				b.SetBytes(int64(8 * len(v)))
				for b.Loop() {
					g.Add(v, sigma)
				}
				perCoord(b)
			})
		}
		b.Run(fmt.Sprintf("float/sigma=%g", sigma), func(b *testing.B) {
			rng := rand.New(rand.NewChaCha8([32]byte{1}))
			b.ReportAllocs()
			b.SetBytes(int64(8 * len(v)))
			for b.Loop() {
				for i := range v {
					v[i] += sigma * rng.NormFloat64()
				}
			}
			perCoord(b)
		})
	}
}
