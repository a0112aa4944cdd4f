package vecmath

import (
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

// modes runs f with the Go kernels and, where the CPU has them, the vector
// ones.
func modes(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	saved := useAsm
	t.Cleanup(func() { setAsm(saved) })
	for _, asm := range []bool{false, true} {
		if asm && !saved {
			continue
		}
		setAsm(asm)
		name := "go"
		if asm {
			name = "asm"
		}
		t.Run(name, f)
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

// BenchmarkTanh compares the vector kernel with math.Tanh in a loop (the
// baseline, in the same run) on a hidden layer's worth of values.
func BenchmarkTanh(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	src := make([]float64, 4096)
	for i := range src {
		src[i] = 3 * rng.NormFloat64()
	}
	x := make([]float64, len(src))
	b.Run("vecmath", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			copy(x, src)
			Tanh(x)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/value")
	})
	b.Run("math", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			copy(x, src)
			for i, v := range x {
				x[i] = math.Tanh(v)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/value")
	})
}

// BenchmarkAdam compares the vector kernel with the scalar loop (the
// baseline, in the same run) over a 64x64 actor-critic's parameters.
func BenchmarkAdam(b *testing.B) {
	const n = 9000
	p, g, m, v := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range g {
		g[i] = 1e-3 * float64(i%7)
	}
	c := AdamParams{Beta1: 0.9, Beta2: 0.999, Step: 1e-3, InvSqrtC2: 1, Eps: 1e-5}
	for _, asm := range []bool{true, false} {
		name := "vecmath"
		if !asm {
			name = "scalar"
		}
		b.Run(name, func(b *testing.B) {
			saved := useAsm
			setAsm(asm && saved)
			defer setAsm(saved)
			b.ReportAllocs()
			for b.Loop() {
				Adam(p, g, m, v, c)
			}
		})
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
