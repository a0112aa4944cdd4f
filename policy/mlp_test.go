package policy

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

var seedFlag = flag.Uint64("seed", 1, "seed for the randomised policy tests")

// testRNG returns a seeded generator, logging the seed when it is not the default.
func testRNG(t testing.TB) *rand.Rand {
	if *seedFlag != 1 {
		t.Logf("seed %d", *seedFlag)
	}
	return rand.New(rand.NewPCG(*seedFlag, 0x9e3779b97f4a7c15))
}

func randSlice(rng *rand.Rand, n int, scale float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = scale * rng.NormFloat64()
	}
	return s
}

// loopMLP is the hand-written reference: the same network with plain loops.
// It is both the independent reference for the blas64 kernels and the other
// side of the mat-vs-loops benchmark.
type loopMLP struct {
	m    *MLP
	acts [][]float64
	del  [][]float64
	n    int
}

func newLoopMLP(m *MLP, n int) *loopMLP {
	r := &loopMLP{m: m, n: n}
	for _, s := range m.sizes {
		r.acts = append(r.acts, make([]float64, n*s))
		r.del = append(r.del, make([]float64, n*s))
	}
	return r
}

func (r *loopMLP) forward(dst, params, x []float64) {
	m := r.m
	copy(r.acts[0], x)
	L := len(m.sizes) - 1
	for l := 0; l < L; l++ {
		in, out := m.sizes[l], m.sizes[l+1]
		W := params[m.wOff[l] : m.wOff[l]+in*out]
		b := params[m.bOff[l] : m.bOff[l]+out]
		for i := 0; i < r.n; i++ {
			a := r.acts[l][i*in : (i+1)*in]
			y := r.acts[l+1][i*out : (i+1)*out]
			for o := 0; o < out; o++ {
				w := W[o*in : (o+1)*in]
				s := b[o]
				for k, v := range a {
					s += w[k] * v
				}
				if l < L-1 {
					s = math.Tanh(s)
				}
				y[o] = s
			}
		}
	}
	copy(dst, r.acts[L])
}

func (r *loopMLP) backward(grad, params, dOut []float64) {
	m := r.m
	L := len(m.sizes) - 1
	copy(r.del[L], dOut)
	for l := L - 1; l >= 0; l-- {
		in, out := m.sizes[l], m.sizes[l+1]
		d := r.del[l+1]
		if l < L-1 {
			for i, v := range r.acts[l+1] {
				d[i] *= 1 - v*v
			}
		}
		W := params[m.wOff[l] : m.wOff[l]+in*out]
		dW := grad[m.wOff[l] : m.wOff[l]+in*out]
		db := grad[m.bOff[l] : m.bOff[l]+out]
		clear(dW)
		clear(db)
		if l > 0 {
			clear(r.del[l])
		}
		for i := 0; i < r.n; i++ {
			a := r.acts[l][i*in : (i+1)*in]
			for o := 0; o < out; o++ {
				g := d[i*out+o]
				db[o] += g
				row := dW[o*in : (o+1)*in]
				for k, v := range a {
					row[k] += g * v
				}
				if l > 0 {
					di := r.del[l][i*in : (i+1)*in]
					w := W[o*in : (o+1)*in]
					for k, v := range w {
						di[k] += g * v
					}
				}
			}
		}
	}
}

func mustMLP(t testing.TB, sizes ...int) *MLP {
	m, err := NewMLP(sizes...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestNewMLPErrors(t *testing.T) {
	for _, sizes := range [][]int{nil, {3}, {3, 0}, {-1, 2}} {
		if _, err := NewMLP(sizes...); err == nil {
			t.Errorf("NewMLP(%v): want error", sizes)
		}
	}
}

func TestOrthogonalInit(t *testing.T) {
	rng := testRNG(t)
	m := mustMLP(t, 4, 64, 64, 2)
	p := make([]float64, m.NumParams())
	m.Init(p, rng, GainPolicyOut)
	L := len(m.sizes) - 1
	for l := 0; l < L; l++ {
		in, out := m.sizes[l], m.sizes[l+1]
		W := mat.NewDense(out, in, p[m.wOff[l]:m.wOff[l]+in*out])
		gain := GainHidden
		if l == L-1 {
			gain = GainPolicyOut
		}
		// W W^T = gain^2 I when out <= in, W^T W = gain^2 I otherwise.
		var g mat.Dense
		if out <= in {
			g.Mul(W, W.T())
		} else {
			g.Mul(W.T(), W)
		}
		r, _ := g.Dims()
		for i := 0; i < r; i++ {
			for j := 0; j < r; j++ {
				want := 0.0
				if i == j {
					want = gain * gain
				}
				if math.Abs(g.At(i, j)-want) > 1e-10 {
					t.Fatalf("layer %d gram(%d,%d) = %g, want %g", l, i, j, g.At(i, j), want)
				}
			}
		}
		for _, b := range p[m.bOff[l] : m.bOff[l]+out] {
			if b != 0 {
				t.Fatalf("layer %d bias %g, want 0", l, b)
			}
		}
	}
}

func TestMLPMatchesLoops(t *testing.T) {
	for _, tc := range []struct {
		sizes []int
		n     int
	}{
		{[]int{5, 7, 6, 3}, 9},
		{[]int{4, 64, 64, 2}, 400}, // several row chunks
	} {
		rng := testRNG(t)
		m := mustMLP(t, tc.sizes...)
		in, out, n := m.In(), m.Out(), tc.n
		p := randSlice(rng, m.NumParams(), 0.5)
		x := randSlice(rng, n*in, 1)
		dOut := randSlice(rng, n*out, 1)
		got, want := make([]float64, n*out), make([]float64, n*out)
		m.ForwardBatch(got, p, x, n)
		ref := newLoopMLP(m, n)
		ref.forward(want, p, x)
		if !floats.EqualApprox(got, want, 1e-12) {
			t.Fatalf("%v: forward batch differs from loops", tc.sizes)
		}
		one := make([]float64, out)
		for i := 0; i < n; i++ {
			m.Forward(one, p, x[i*in:(i+1)*in])
			if !floats.EqualApprox(one, want[i*out:(i+1)*out], 1e-12) {
				t.Fatalf("%v: forward row %d: %v, want %v", tc.sizes, i, one, want[i*out:(i+1)*out])
			}
		}
		g1, g2 := make([]float64, m.NumParams()), make([]float64, m.NumParams())
		m.Backward(g1, p, dOut)
		ref.backward(g2, p, dOut)
		if !floats.EqualApprox(g1, g2, 1e-10) {
			t.Fatalf("%v: backward differs from loops", tc.sizes)
		}
	}
}

// fdCheck compares grad with central finite differences of f at x, at relative
// tolerance tol (relative to max(1, |grad|)).
func fdCheck(t *testing.T, name string, f func([]float64) float64, x, grad []float64, tol float64) {
	t.Helper()
	const h = 1e-5
	xc := append([]float64(nil), x...)
	worst := 0.0
	for i := range xc {
		orig := xc[i]
		xc[i] = orig + h
		fp := f(xc)
		xc[i] = orig - h
		fm := f(xc)
		xc[i] = orig
		fd := (fp - fm) / (2 * h)
		err := math.Abs(fd-grad[i]) / math.Max(1, math.Abs(grad[i]))
		worst = max(worst, err)
		if err > tol {
			t.Fatalf("%s: d/dx[%d] = %.12g, finite difference %.12g (rel err %.3g)", name, i, grad[i], fd, err)
		}
	}
	t.Logf("%s: %d coordinates, worst rel err %.2g", name, len(x), worst)
}

func TestMLPBackwardFiniteDifference(t *testing.T) {
	for _, act := range []Activation{Tanh, ReLU, Swish} {
		t.Run(act.String(), func(t *testing.T) { testMLPBackwardFiniteDifference(t, act) })
	}
}

func testMLPBackwardFiniteDifference(t *testing.T, act Activation) {
	rng := testRNG(t)
	m, err := NewMLPActivation(act, 3, 8, 5, 2)
	if err != nil {
		t.Fatal(err)
	}
	p := randSlice(rng, m.NumParams(), 0.7)
	n := 4
	x := randSlice(rng, n*3, 1)
	c := randSlice(rng, n*2, 1) // loss = sum c .* out
	out := make([]float64, n*2)
	loss := func(q []float64) float64 {
		m.ForwardBatch(out, q, x, n)
		return floats.Dot(c, out)
	}
	grad := make([]float64, m.NumParams())
	loss(p)
	m.Backward(grad, p, c)
	fdCheck(t, "mlp", loss, p, grad, 1e-6)
}

// TestMLPBackwardInput checks the input gradient against finite
// differences, with and without the parameter gradient.
func TestMLPBackwardInput(t *testing.T) {
	rng := testRNG(t)
	for _, act := range []Activation{Tanh, ReLU, Swish} {
		m, err := NewMLPActivation(act, 3, 8, 5, 2)
		if err != nil {
			t.Fatal(err)
		}
		p := randSlice(rng, m.NumParams(), 0.7)
		n := 4
		x := randSlice(rng, n*3, 1)
		c := randSlice(rng, n*2, 1)
		out := make([]float64, n*2)
		loss := func(q []float64) float64 {
			m.ForwardBatch(out, p, q, n)
			return floats.Dot(c, out)
		}
		loss(x)
		dx := make([]float64, len(x))
		grad := make([]float64, m.NumParams())
		m.BackwardInput(grad, dx, p, c)
		fdCheck(t, act.String()+" input", loss, x, dx, 1e-6)
		want := make([]float64, m.NumParams())
		loss(x)
		m.Backward(want, p, c)
		if !floats.Equal(grad, want) {
			t.Fatalf("%v: BackwardInput's parameter gradient differs from Backward's", act)
		}
		dx2 := make([]float64, len(x))
		loss(x)
		m.BackwardInput(nil, dx2, p, c)
		if !floats.Equal(dx, dx2) {
			t.Fatalf("%v: input gradient without the parameter gradient differs", act)
		}
	}
}

// TestMLPRowsIndependent: a row of ForwardBatch is the same, bit for bit,
// whatever the batch size (lockstep rollouts rely on it).
func TestMLPRowsIndependent(t *testing.T) {
	rng := testRNG(t)
	for _, sizes := range [][]int{{4, 32, 32, 2}, {4, 16, 16, 2}, {60, 64, 64, 20}, {3, 8, 1}} {
		m := mustMLP(t, sizes...)
		p := randSlice(rng, m.NumParams(), 0.5)
		in, out := sizes[0], sizes[len(sizes)-1]
		const rows = 20
		x := randSlice(rng, rows*in, 1)
		ref := make([]float64, rows*out)
		m.ForwardBatch(ref, p, x, rows)
		for n := 1; n <= rows; n++ {
			got := make([]float64, n*out)
			m.ForwardBatch(got, p, x[:n*in], n)
			for i := range got {
				if got[i] != ref[i] {
					t.Fatalf("%v, batch %d: output %d = %v, with 20 rows %v", sizes, n, i, got[i], ref[i])
				}
			}
		}
	}
}

// TestMLPReLUForward checks a ReLU network against a hand computation.
func TestMLPReLUForward(t *testing.T) {
	m, err := NewMLPActivation(ReLU, 2, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	// W0 = [[1, -1], [2, 1]], b0 = [0, -5], W1 = [[3, 4]], b1 = [0.5]
	p := []float64{1, -1, 2, 1, 0, -5, 3, 4, 0.5}
	out := make([]float64, 2)
	m.ForwardBatch(out, p, []float64{2, 1, 1, 3}, 2)
	// x = (2, 1): h = (relu(1), relu(5-5=0)) = (1, 0): 3 + 0.5 = 3.5
	// x = (1, 3): h = (relu(-2), relu(5-5)) = (0, 0): 0.5
	if out[0] != 3.5 || out[1] != 0.5 {
		t.Fatalf("relu forward = %v, want [3.5 0.5]", out)
	}
	if _, err := NewMLPActivation(Activation(7), 2, 1); err == nil {
		t.Fatal("unknown activation accepted")
	}
}

func TestMLPAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are unreliable under -race")
	}
	rng := testRNG(t)
	m := mustMLP(t, 4, 64, 64, 2)
	p := make([]float64, m.NumParams())
	m.Init(p, rng, GainPolicyOut)
	n := 32
	x := randSlice(rng, n*4, 1)
	out := make([]float64, n*2)
	grad := make([]float64, m.NumParams())
	m.Reserve(n)
	one := make([]float64, 2)
	if a := testing.AllocsPerRun(50, func() { m.Forward(one, p, x[:4]) }); a != 0 {
		t.Errorf("Forward: %v allocs, want 0", a)
	}
	if a := testing.AllocsPerRun(50, func() { m.ForwardBatch(out, p, x, n) }); a != 0 {
		t.Errorf("ForwardBatch: %v allocs, want 0", a)
	}
	if a := testing.AllocsPerRun(50, func() { m.Backward(grad, p, out) }); a != 0 {
		t.Errorf("Backward: %v allocs, want 0", a)
	}
}

// BenchmarkMLPKernels is the mat-vs-loops decision recorded in
// policy/REPRODUCE.md ("MLP kernels").
func BenchmarkMLPKernels(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := mustMLP(b, 4, 64, 64, 2)
	p := make([]float64, m.NumParams())
	m.Init(p, rng, GainPolicyOut)
	n := 32
	x := randSlice(rng, n*4, 1)
	out := make([]float64, n*2)
	grad := make([]float64, m.NumParams())
	ref := newLoopMLP(m, n)
	m.Reserve(n)
	b.Run("blas64/forward32", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.ForwardBatch(out, p, x, n)
		}
	})
	b.Run("loops/forward32", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ref.forward(out, p, x)
		}
	})
	m.ForwardBatch(out, p, x, n)
	ref.forward(out, p, x)
	b.Run("blas64/backward32", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.Backward(grad, p, out)
		}
	})
	b.Run("loops/backward32", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ref.backward(grad, p, out)
		}
	})
	one := make([]float64, 2)
	ref1 := newLoopMLP(m, 1)
	b.Run("blas64/forward1", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.Forward(one, p, x[:4])
		}
	})
	b.Run("loops/forward1", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ref1.forward(one, p, x[:4])
		}
	})
}

// BenchmarkMLPBatch runs forward+backward of the 4-64-64-2 net over a ladder
// of batch sizes (allocations must stay 0 at every size).
func BenchmarkMLPBatch(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := mustMLP(b, 4, 64, 64, 2)
	p := make([]float64, m.NumParams())
	m.Init(p, rng, GainPolicyOut)
	grad := make([]float64, m.NumParams())
	for _, n := range []int{1, 8, 32, 128, 512} {
		x := randSlice(rng, n*4, 1)
		out := make([]float64, n*2)
		m.Reserve(n)
		fw, bw := m.FLOPs(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.ForwardBatch(out, p, x, n)
				m.Backward(grad, p, out)
			}
			b.ReportMetric((fw+bw)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// TestMLPParams: the parameter count of a network from its widths, without
// building it; overflowing or oversized networks are errors.
func TestMLPParams(t *testing.T) {
	for _, c := range []struct {
		sizes []int
		want  int // -1: error
	}{
		{[]int{4, 64, 64, 2}, 5*64 + 65*64 + 65*2}, {[]int{1, 2}, 4},
		{[]int{1}, -1}, {[]int{3, 0, 2}, -1}, {[]int{1, 1 << 40}, -1},
		{[]int{1, 16384, 16384, 2}, 2*16384 + 16385*16384 + 16385*2}, {[]int{1 << 31, 2}, -1},
		{[]int{1 << 30, 1 << 30}, -1},
	} {
		n, err := MLPParams(c.sizes...)
		if (c.want < 0) != (err != nil) || (c.want >= 0 && n != c.want) {
			t.Errorf("MLPParams(%v) = %d, %v; want %d", c.sizes, n, err, c.want)
		}
		if c.want >= 0 && c.want < 1<<20 {
			if m, err := NewMLP(c.sizes...); err != nil || m.NumParams() != n {
				t.Errorf("NewMLP(%v): %v, %d parameters, MLPParams %d", c.sizes, err, m.NumParams(), n)
			}
		}
	}
}

// TestMLPKeepRows: after KeepRows, the input gradient of the kept rows is
// the whole batch's with zeros in the other rows' output gradients, to the
// bit, for every activation, a batch wider than a GEMM tile and rows
// anywhere in it (none, the first, the last, every other); a bad row list
// panics.
func TestMLPKeepRows(t *testing.T) {
	rng := testRNG(t)
	for _, act := range []Activation{Tanh, ReLU, Swish} {
		m, err := NewMLPActivation(act, 3, 40, 24, 2)
		if err != nil {
			t.Fatal(err)
		}
		p := randSlice(rng, m.NumParams(), 0.7)
		const n = 37
		x := randSlice(rng, n*3, 1)
		out := make([]float64, n*2)
		every := []int{}
		for r := 0; r < n; r += 2 {
			every = append(every, r)
		}
		for _, rows := range [][]int{{0}, {n - 1}, every, {3, 4, 5, 30}} {
			full := make([]float64, n*2)
			for _, r := range rows {
				full[r*2], full[r*2+1] = rng.NormFloat64(), rng.NormFloat64()
			}
			m.ForwardBatch(out, p, x, n)
			want := make([]float64, n*3)
			m.BackwardInput(nil, want, p, full)

			m.ForwardBatch(out, p, x, n)
			m.KeepRows(rows)
			d := make([]float64, len(rows)*2)
			for k, r := range rows {
				d[k*2], d[k*2+1] = full[r*2], full[r*2+1]
			}
			got := make([]float64, len(rows)*3)
			m.BackwardInput(nil, got, p, d)
			for k, r := range rows {
				for j := range 3 {
					if math.Float64bits(got[k*3+j]) != math.Float64bits(want[r*3+j]) {
						t.Fatalf("%v rows %v: dx[%d][%d] = %v, whole batch %v", act, rows, r, j, got[k*3+j], want[r*3+j])
					}
				}
			}
		}
		m.ForwardBatch(out, p, x, n)
		for _, bad := range [][]int{{2, 1}, {n}, {-1}, {4, 4}} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("KeepRows(%v) did not panic", bad)
					}
				}()
				m.KeepRows(bad)
			}()
		}
	}
}
