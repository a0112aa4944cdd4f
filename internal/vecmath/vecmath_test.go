package vecmath

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// ulps returns the distance between a and b in units in the last place of
// the larger.
func ulps(a, b float64) float64 {
	if a == b {
		return 0
	}
	m := math.Max(math.Abs(a), math.Abs(b))
	ulp := math.Nextafter(m, math.Inf(1)) - m
	return math.Abs(a-b) / ulp
}

// modes runs f with the Go kernels and, where the CPU has them, the AVX2
// kernels alone and the AVX-512 ones (with AVX2 on the rest).
func modes(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	savedAsm, saved512 := useAsm, useAVX512
	t.Cleanup(func() { setAsm(savedAsm); setAVX512(saved512) })
	for _, m := range []struct {
		name        string
		asm, avx512 bool
	}{{"go", false, false}, {"avx2", true, false}, {"avx512", true, true}} {
		if m.asm && !savedAsm || m.avx512 && !(savedAsm && saved512) {
			continue
		}
		setAsm(m.asm)
		setAVX512(m.avx512)
		t.Run(m.name, f)
	}
}

func TestTanhAccuracy(t *testing.T) {
	modes(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		var xs []float64
		for _, scale := range []float64{1e-300, 1e-12, 1e-3, 0.1, 0.5, 1, 3, 10, 25, 400} {
			for range 20000 {
				xs = append(xs, scale*(2*rng.Float64()-1))
			}
		}
		edges := []float64{0.625, math.Nextafter(0.625, 0), math.Nextafter(0.625, 1), 22, 19.06, 44, 1e300,
			math.SmallestNonzeroFloat64, math.MaxFloat64}
		for _, e := range edges {
			xs = append(xs, e, -e)
		}
		got := append([]float64(nil), xs...)
		Tanh(got)
		worst, at := 0.0, 0.0
		for i, x := range xs {
			if u := ulps(got[i], math.Tanh(x)); u > worst {
				worst, at = u, x
			}
		}
		if worst > 2 {
			t.Fatalf("tanh(%v): %v ulp from math.Tanh", at, worst)
		}
		t.Logf("worst error %.2f ulp at %v over %d values", worst, at, len(xs))
	})
}

func TestTanhSpecial(t *testing.T) {
	modes(t, func(t *testing.T) {
		x := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0}
		Tanh(x)
		if !math.IsNaN(x[0]) || x[1] != 1 || x[2] != -1 || x[3] != 0 || !math.Signbit(x[3]) || x[4] != 0 || math.Signbit(x[4]) {
			t.Fatalf("tanh(NaN, +Inf, -Inf, -0, 0) = %v (signbit of -0: %v)", x, math.Signbit(x[3]))
		}
	})
}

// TestTanhPositionIndependent: a value's tanh is the same whether it sits in
// a vector or in the tail.
func TestTanhPositionIndependent(t *testing.T) {
	modes(t, func(t *testing.T) {
		for n := 1; n <= 9; n++ {
			x := make([]float64, n)
			for i := range x {
				x[i] = 0.7311
			}
			Tanh(x)
			for i := range x {
				if x[i] != x[0] {
					t.Fatalf("n = %d: x[%d] = %v, x[0] = %v", n, i, x[i], x[0])
				}
			}
		}
	})
}

func TestAdam(t *testing.T) {
	modes(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 4))
		for _, n := range []int{1, 3, 4, 5, 17, 1000} {
			p, g, m, v := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
			for i := range p {
				p[i], g[i], m[i], v[i] = rng.NormFloat64(), rng.NormFloat64(), 0.1*rng.NormFloat64(), rng.Float64()
			}
			c := AdamParams{Beta1: 0.9, Beta2: 0.999, Step: 1e-3 / 0.1, InvSqrtC2: 1 / math.Sqrt(0.001), Eps: 1e-5}
			wp, wm, wv := append([]float64(nil), p...), append([]float64(nil), m...), append([]float64(nil), v...)
			m0, v0 := append([]float64(nil), m...), append([]float64(nil), v...)
			for i := range wp {
				wm[i] = c.Beta1*wm[i] + (1-c.Beta1)*g[i]
				wv[i] = c.Beta2*wv[i] + (1-c.Beta2)*g[i]*g[i]
				wp[i] -= c.Step * wm[i] / (math.Sqrt(wv[i])*c.InvSqrtC2 + c.Eps)
			}
			Adam(p, g, m, v, c)
			// Fused and separate roundings differ by a few ulp of the terms,
			// not of a result that cancels.
			eps := 0x1p-52
			for i := range p {
				tm := 4 * eps * (math.Abs(c.Beta1*m0[i]) + math.Abs((1-c.Beta1)*g[i]))
				tv := 4 * eps * (c.Beta2*v0[i] + (1-c.Beta2)*g[i]*g[i])
				tp := 1e-12 * math.Abs(c.Step*wm[i]/(math.Sqrt(wv[i])*c.InvSqrtC2+c.Eps))
				if math.Abs(m[i]-wm[i]) > tm || math.Abs(v[i]-wv[i]) > tv || math.Abs(p[i]-wp[i]) > tp+4*eps*math.Abs(wp[i]) {
					t.Fatalf("n = %d, i = %d: p m v = %v %v %v, want %v %v %v", n, i, p[i], m[i], v[i], wp[i], wm[i], wv[i])
				}
			}
		}
	})
}

func TestAllocs(t *testing.T) {
	x := make([]float64, 67)
	p, g, m, v := make([]float64, 67), make([]float64, 67), make([]float64, 67), make([]float64, 67)
	c := AdamParams{Beta1: 0.9, Beta2: 0.999, Step: 1e-3, InvSqrtC2: 1, Eps: 1e-5}
	if a := testing.AllocsPerRun(10, func() { Tanh(x); Adam(p, g, m, v, c) }); a != 0 {
		t.Fatalf("%v allocations, want 0", a)
	}
}

func TestReLU(t *testing.T) {
	modes(t, func(t *testing.T) {
		for n := range 11 {
			x := make([]float64, n)
			want := make([]float64, n)
			for i := range x {
				x[i] = float64(i%3) - 1 + 0.5*float64(i%2)
				want[i] = max(x[i], 0)
			}
			if n > 2 {
				x[2], want[2] = math.NaN(), math.NaN()
			}
			ReLU(x)
			for i := range x {
				if !(x[i] == want[i] || math.IsNaN(x[i]) && math.IsNaN(want[i])) {
					t.Fatalf("n = %d: relu %v, want %v", n, x, want)
				}
			}
			d := make([]float64, n)
			y := append([]float64(nil), want...)
			for i := range d {
				d[i] = float64(i + 1)
			}
			ReLUGrad(d, y)
			for i := range d {
				w := float64(i + 1)
				if !(y[i] > 0) {
					w = 0
				}
				if d[i] != w {
					t.Fatalf("n = %d: relu grad %v at y %v", n, d, y)
				}
			}
		}
	})
}

// specials are inputs at the kernels' edges: NaNs (quiet and signalling,
// with payloads), infinities, zeros, subnormals, values whose square
// underflows, tanh's branch point 0.625 and its cap 22 with their
// neighbours, large values, and the points where the exp's k = round(2|x|
// log2 e) changes; each with both signs.
var specials = func() []float64 {
	pos := []float64{
		math.Inf(1), 0, math.SmallestNonzeroFloat64, 1e-310, 0x1p-1022, 1e-300, 1e-170, 1e-160,
		1e-8, 1e-3, 0.1, 0.5, 0.625, math.Nextafter(0.625, 0), math.Nextafter(0.625, 1),
		0.7311, 1, 2, 3, 19.06, 20, 21, 22, math.Nextafter(22, 0), math.Nextafter(22, 30),
		25, 44, 710, 1e10, 1e300, math.MaxFloat64,
		math.Float64frombits(0x7ff8000000000000), math.Float64frombits(0x7ff8000000000123),
		math.Float64frombits(0x7ff0000000000001), math.Float64frombits(0x7ff4000000000abc),
	}
	for j := range 64 {
		h := (float64(j) + 0.5) * math.Ln2 / 2
		pos = append(pos, h, math.Nextafter(h, 0), math.Nextafter(h, 100))
	}
	var all []float64
	for _, x := range pos {
		all = append(all, x, -x)
	}
	return all
}()

// randomInput returns n values: a quarter specials, an eighth random bit
// patterns (anything, NaNs included), the rest uniform at random scales.
func randomInput(rng *rand.Rand, n int) []float64 {
	scales := []float64{1e-300, 1e-12, 1e-3, 0.1, 0.625, 1, 3, 10, 22, 30, 1e10}
	x := make([]float64, n)
	for i := range x {
		switch r := rng.IntN(8); {
		case r < 2:
			x[i] = specials[rng.IntN(len(specials))]
		case r == 2:
			x[i] = math.Float64frombits(rng.Uint64())
		default:
			x[i] = scales[rng.IntN(len(scales))] * (2*rng.Float64() - 1)
		}
	}
	return x
}

// sameBits is whether a and b have the same bits, any NaN matching any NaN.
func sameBits(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
}

// needAVX512 skips tests that compare the AVX-512 kernels with the AVX2 ones
// on a machine without them.
func needAVX512(t testing.TB) {
	t.Helper()
	if !useAsm || !useAVX512 {
		t.Skip("this CPU lacks AVX-512 (F and DQ) or AVX2/FMA: no AVX-512 kernels to compare with the AVX2 ones")
	}
}

// avx512AndAVX2 runs f on a copy of in with the AVX-512 kernels and on
// another with the AVX2 ones alone, and returns both copies.
func avx512AndAVX2(in [][]float64, f func(a [][]float64)) (z, y [][]float64) {
	clone := func() [][]float64 {
		c := make([][]float64, len(in))
		for i := range in {
			c[i] = append([]float64(nil), in[i]...)
		}
		return c
	}
	saved := useAVX512
	defer setAVX512(saved)
	z, y = clone(), clone()
	setAVX512(true)
	f(z)
	setAVX512(false)
	f(y)
	return z, y
}

// TestAVX512BitIdentical: on every length from 0 to 67, on random inputs
// and on the specials in every lane, each function gives the same bits
// with the AVX-512 kernels as with the AVX2 ones alone (for Adam: p, m and
// v, under several parameter sets).
func TestAVX512BitIdentical(t *testing.T) {
	needAVX512(t)
	adam := func(c AdamParams) func(a [][]float64) {
		return func(a [][]float64) { Adam(a[0], a[1], a[2], a[3], c) }
	}
	cases := []struct {
		name string
		args []string // the slices, in the call's order
		run  func(a [][]float64)
	}{
		{"Tanh", []string{"x"}, func(a [][]float64) { Tanh(a[0]) }},
		{"Adam/default", []string{"p", "g", "m", "v"},
			adam(AdamParams{Beta1: 0.9, Beta2: 0.999, Step: 1e-3 / 0.1, InvSqrtC2: 1 / math.Sqrt(0.001), Eps: 1e-5})},
		{"Adam/odd", []string{"p", "g", "m", "v"},
			adam(AdamParams{Beta1: 0.3, Beta2: 0.77, Step: -2.5, InvSqrtC2: 3.1, Eps: 1e-300})},
		{"Adam/eps0", []string{"p", "g", "m", "v"},
			adam(AdamParams{Beta1: 0, Beta2: 1, Step: 1, InvSqrtC2: 1, Eps: 0})},
		{"ReLU", []string{"x"}, func(a [][]float64) { ReLU(a[0]) }},
		{"ReLUGrad", []string{"d", "y"}, func(a [][]float64) { ReLUGrad(a[0], a[1]) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			check := func(in [][]float64) {
				t.Helper()
				z, y := avx512AndAVX2(in, c.run)
				for j := range in {
					for i := range in[j] {
						if !sameBits(z[j][i], y[j][i]) {
							t.Fatalf("n = %d, %s[%d]: AVX-512 %v (%#x), AVX2 %v (%#x); inputs %v",
								len(in[0]), c.args[j], i, z[j][i], math.Float64bits(z[j][i]),
								y[j][i], math.Float64bits(y[j][i]), column(in, i))
						}
					}
				}
			}
			for n := 0; n <= 67; n++ {
				for range 40 {
					in := make([][]float64, len(c.args))
					for j := range in {
						in[j] = randomInput(rng, n)
					}
					check(in)
				}
			}
			// Every special in every lane, against shifted specials in the
			// other arguments.
			for off := range 8 {
				in := make([][]float64, len(c.args))
				for j := range in {
					in[j] = make([]float64, off, off+len(specials))
					for i := range specials {
						in[j] = append(in[j], specials[(i+17*j)%len(specials)])
					}
				}
				check(in)
			}
		})
	}
}

// column is the i-th element of every input, for messages.
func column(in [][]float64, i int) []float64 {
	c := make([]float64, len(in))
	for j := range in {
		c[j] = in[j][i]
	}
	return c
}

// FuzzTanhAVX512: eight values from the fuzzer's bytes (missing bytes are
// zeros) give the same bits through the AVX-512 kernel as through the AVX2
// one.
func FuzzTanhAVX512(f *testing.F) {
	needAVX512(f)
	seed := func(xs ...float64) []byte {
		var b []byte
		for _, x := range xs {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
		return b
	}
	f.Add(seed(0.625, -0.625, 22, -22, math.NaN(), math.Inf(-1), math.Copysign(0, -1), 1e-310))
	f.Add(seed(specials[:8]...))
	f.Add(seed(0.1, 0.7311, 3, 19.06))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := make([]float64, 8)
		for i := range in {
			if len(data) >= 8*(i+1) {
				in[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
			}
		}
		z, y := avx512AndAVX2([][]float64{in}, func(a [][]float64) { Tanh(a[0]) })
		for i := range in {
			if !sameBits(z[0][i], y[0][i]) {
				t.Fatalf("tanh(%v) (%#x): AVX-512 %#x, AVX2 %#x", in[i], math.Float64bits(in[i]),
					math.Float64bits(z[0][i]), math.Float64bits(y[0][i]))
			}
		}
	})
}

// benchSizes are the lengths the benchmarks run at: a hidden layer's worth
// of values and a larger one.
var benchSizes = []int{256, 4096}

// paths runs f with the AVX-512 kernels (with AVX2 on any rest), the AVX2
// ones alone and the Go code (math.Tanh and scalar loops), as sub-benchmarks
// avx512/n=..., avx2/n=... and go/n=... for each of benchSizes; a path the
// CPU lacks is skipped.
func paths(b *testing.B, f func(b *testing.B, n int)) {
	savedAsm, saved512 := useAsm, useAVX512
	defer func() { setAsm(savedAsm); setAVX512(saved512) }()
	for _, m := range []struct {
		name        string
		asm, avx512 bool
	}{{"avx512", true, true}, {"avx2", true, false}, {"go", false, false}} {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/n=%d", m.name, n), func(b *testing.B) {
				if m.asm && !savedAsm || m.avx512 && !(savedAsm && saved512) {
					b.Skip("not on this CPU")
				}
				setAsm(m.asm)
				setAVX512(m.avx512)
				b.ReportAllocs()
				f(b, n)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/value")
			})
		}
	}
}

// BenchmarkTanh: the values are copied in before each call (included in
// the time), so every call sees the same 3 N(0, 1) values.
func BenchmarkTanh(b *testing.B) {
	paths(b, func(b *testing.B, n int) {
		rng := rand.New(rand.NewPCG(1, 1))
		src, x := make([]float64, n), make([]float64, n)
		for i := range src {
			src[i] = 3 * rng.NormFloat64()
		}
		for b.Loop() {
			copy(x, src)
			Tanh(x)
		}
	})
}

// BenchmarkAdam: repeated updates on the same gradients.
func BenchmarkAdam(b *testing.B) {
	paths(b, func(b *testing.B, n int) {
		p, g, m, v := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range g {
			g[i] = 1e-3 * float64(i%7)
		}
		c := AdamParams{Beta1: 0.9, Beta2: 0.999, Step: 1e-3, InvSqrtC2: 1, Eps: 1e-5}
		for b.Loop() {
			Adam(p, g, m, v, c)
		}
	})
}

// BenchmarkReLU: in place and not copied back, so after the first call the
// values are >= 0 (the vector kernels' time does not depend on them; the Go
// loop's branch becomes predictable).
func BenchmarkReLU(b *testing.B) {
	paths(b, func(b *testing.B, n int) {
		rng := rand.New(rand.NewPCG(2, 2))
		x := make([]float64, n)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		for b.Loop() {
			ReLU(x)
		}
	})
}

// BenchmarkReLUGrad: y half positive; d in place (its zeros stay zeros).
func BenchmarkReLUGrad(b *testing.B) {
	paths(b, func(b *testing.B, n int) {
		rng := rand.New(rand.NewPCG(3, 3))
		d, y := make([]float64, n), make([]float64, n)
		for i := range d {
			d[i], y[i] = rng.NormFloat64(), max(rng.NormFloat64(), 0)
		}
		for b.Loop() {
			ReLUGrad(d, y)
		}
	})
}

// TestPolyak: every path gives each element the bits of the scalar
// formula's three rounded operations, at every length and position,
// special values included.
func TestPolyak(t *testing.T) {
	modes(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(7, 8))
		special := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 5e-324, -1e308, 1e308}
		for n := 0; n <= 67; n++ {
			for _, tau := range []float64{0.005, 0.5, 1, 0} {
				tv, sv := make([]float64, n), make([]float64, n)
				for i := range tv {
					tv[i], sv[i] = rng.NormFloat64()*math.Exp(4*rng.NormFloat64()), rng.NormFloat64()
					if rng.IntN(8) == 0 {
						tv[i] = special[rng.IntN(len(special))]
					}
					if rng.IntN(8) == 0 {
						sv[i] = special[rng.IntN(len(special))]
					}
				}
				want := append([]float64(nil), tv...)
				for i := range want {
					d := float64(tau * (sv[i] - want[i]))
					want[i] += d
				}
				Polyak(tv, sv, tau)
				for i := range tv {
					if math.Float64bits(tv[i]) != math.Float64bits(want[i]) && !(math.IsNaN(tv[i]) && math.IsNaN(want[i])) {
						t.Fatalf("n %d tau %v: t[%d] = %v, want %v", n, tau, i, tv[i], want[i])
					}
				}
			}
		}
	})
}

func BenchmarkPolyak(b *testing.B) {
	paths(b, func(b *testing.B, n int) {
		rng := rand.New(rand.NewPCG(4, 4))
		t, s := make([]float64, n), make([]float64, n)
		for i := range t {
			t[i], s[i] = rng.NormFloat64(), rng.NormFloat64()
		}
		for b.Loop() {
			Polyak(t, s, 0.005)
		}
	})
}

// TestTanhGrad: every path gives each element the bits of the scalar
// formula's three rounded operations, at every length and position,
// special values included.
func TestTanhGrad(t *testing.T) {
	modes(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(9, 10))
		special := []float64{0, math.Copysign(0, -1), 1, -1, math.Inf(1), math.NaN(), 5e-324, 1e308}
		for n := 0; n <= 67; n++ {
			d, y := make([]float64, n), make([]float64, n+3)
			for i := range d {
				d[i] = rng.NormFloat64() * math.Exp(4*rng.NormFloat64())
				if rng.IntN(8) == 0 {
					d[i] = special[rng.IntN(len(special))]
				}
			}
			for i := range y {
				y[i] = math.Tanh(2 * rng.NormFloat64())
				if rng.IntN(8) == 0 {
					y[i] = special[rng.IntN(len(special))]
				}
			}
			want := append([]float64(nil), d...)
			for i := range want {
				v := y[i]
				want[i] *= 1 - float64(v*v)
			}
			TanhGrad(d, y)
			for i := range d {
				if math.Float64bits(d[i]) != math.Float64bits(want[i]) && !(math.IsNaN(d[i]) && math.IsNaN(want[i])) {
					t.Fatalf("n %d: d[%d] = %v, want %v", n, i, d[i], want[i])
				}
			}
		}
	})
}

func BenchmarkTanhGrad(b *testing.B) {
	paths(b, func(b *testing.B, n int) {
		rng := rand.New(rand.NewPCG(4, 5))
		d, y := make([]float64, n), make([]float64, n)
		for i := range d {
			d[i], y[i] = rng.NormFloat64(), math.Tanh(rng.NormFloat64())
		}
		for b.Loop() {
			TanhGrad(d, y)
		}
	})
}

// TestSumRows: every path gives each column the bits of clearing it and
// adding the rows in order, at every width and several row counts, special
// values included.
func TestSumRows(t *testing.T) {
	modes(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(11, 12))
		special := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 5e-324, 1e308, -1e308}
		for w := 0; w <= 70; w++ {
			for _, n := range []int{0, 1, 2, 3, 7, 130} {
				x := make([]float64, n*w+5)
				for i := range x {
					x[i] = rng.NormFloat64() * math.Exp(3*rng.NormFloat64())
					if rng.IntN(10) == 0 {
						x[i] = special[rng.IntN(len(special))]
					}
				}
				if w > 1 && n > 1 { // a column of -0s sums to +0
					for i := range n {
						x[i*w+1] = math.Copysign(0, -1)
					}
				}
				want := make([]float64, w)
				for i := range n {
					for j := range want {
						want[j] += x[i*w+j]
					}
				}
				got := make([]float64, w)
				for j := range got {
					got[j] = math.NaN() // overwritten, not read
				}
				SumRows(got, x, n)
				for j := range got {
					if math.Float64bits(got[j]) != math.Float64bits(want[j]) && !(math.IsNaN(got[j]) && math.IsNaN(want[j])) {
						t.Fatalf("w %d n %d: dst[%d] = %v, want %v", w, n, j, got[j], want[j])
					}
				}
			}
		}
	})
}

func BenchmarkSumRows(b *testing.B) {
	paths(b, func(b *testing.B, n int) {
		rng := rand.New(rand.NewPCG(4, 6))
		const rows = 128
		x, dst := make([]float64, rows*n), make([]float64, n)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		for b.Loop() {
			SumRows(dst, x, rows)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n*rows), "ns/add")
	})
}
