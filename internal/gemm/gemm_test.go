package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
)

// naive is the textbook triple loop, the reference for every case.
func naive(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	for i := range m {
		for j := range n {
			var s float64
			for p := range k {
				ai, bi := i*lda+p, p*ldb+j
				if tA != blas.NoTrans {
					ai = p*lda + i
				}
				if tB != blas.NoTrans {
					bi = j*ldb + p
				}
				av, bv := a[ai], b[bi]
				s += av * bv
			}
			if beta == 0 {
				c[i*ldc+j] = alpha * s
			} else {
				c[i*ldc+j] = alpha*s + beta*c[i*ldc+j]
			}
		}
	}
}

func randSlice(rng *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = rng.NormFloat64()
	}
	return s
}

// eachKernel runs f once per micro-kernel this machine can run, each with
// operands read in place where allowed and with everything packed.
func eachKernel(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	saved, savedMax, savedRows := active, directMax, directRowsMax
	t.Cleanup(func() { active, directMax, directRowsMax = saved, savedMax, savedRows; setPackAsm(true) })
	for _, k := range kernels() {
		for _, dm := range []int{savedMax, 0} {
			// Each kernel runs with the packing of its own instruction
			// set, the portable kernel with the portable packing.
			active, directMax, directRowsMax = k, dm, savedRows
			if dm == 0 {
				directRowsMax = 0
			}
			setPackAsm(k != goKernel)
			restore := setPackLevel(packLevelOf(k))
			name := strings.ReplaceAll(k.name, " ", "-")
			if dm == 0 {
				name += "/packed"
			}
			t.Run(name, f)
			restore()
		}
	}
}

// TestDgemmAgainstReference compares every transpose combination, odd and
// blocked sizes (across mc, kc and nc), padded leading dimensions and the
// alpha/beta special cases with the triple loop and with gonum.
func TestDgemmAgainstReference(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		sizes := [][3]int{
			{1, 1, 1}, {6, 8, 1}, {6, 8, 4}, {5, 7, 3}, {7, 9, 5}, {13, 17, 11},
			{16, 64, 4}, {64, 64, 64}, {65, 63, 67}, {97, 33, 257}, {100, 1030, 20},
			{128, 3, 300}, {3, 128, 513}, {1, 200, 9}, {200, 1, 9},
			{8, 16, 9}, {32, 40, 70}, {128, 24, 33}, // rows leaving 2 of a 6-row tile
		}
		if !testing.Short() && !raceEnabled {
			sizes = append(sizes, [3]int{193, 1031, 517})
		}
		trans := []blas.Transpose{blas.NoTrans, blas.Trans}
		for _, sz := range sizes {
			m, n, k := sz[0], sz[1], sz[2]
			for _, tA := range trans {
				for _, tB := range trans {
					scalars := [][2]float64{{1, 0}, {1, 1}, {-0.5, 2}, {2, -0.75}}
					if m*n*k > 20000 { // large: one pair of scalars each, in turn
						i := rng.IntN(len(scalars))
						scalars = scalars[i : i+1]
					}
					for _, ab := range scalars {
						alpha, beta := ab[0], ab[1]
						pad := rng.IntN(3)
						ar, ac := m, k
						if tA != blas.NoTrans {
							ar, ac = k, m
						}
						br, bc := k, n
						if tB != blas.NoTrans {
							br, bc = n, k
						}
						lda, ldb, ldc := ac+pad, bc+rng.IntN(3), n+rng.IntN(3)
						a := randSlice(rng, (ar-1)*lda+ac)
						b := randSlice(rng, (br-1)*ldb+bc)
						c0 := randSlice(rng, (m-1)*ldc+n)
						if beta == 0 {
							for i := range c0 {
								c0[i] = math.NaN() // must not be read
							}
						}
						got := append([]float64(nil), c0...)
						want := append([]float64(nil), c0...)
						ref := append([]float64(nil), c0...)
						Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, got, ldc)
						naive(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, want, ldc)
						gonum.Implementation{}.Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, ref, ldc)
						name := fmt.Sprintf("%dx%dx%d tA=%c tB=%c alpha=%g beta=%g ld=%d,%d,%d", m, n, k, tA, tB, alpha, beta, lda, ldb, ldc)
						for i := range m {
							for j := 0; j < ldc && i*ldc+j < len(got); j++ {
								g, w, r := got[i*ldc+j], want[i*ldc+j], ref[i*ldc+j]
								if j >= n { // padding between rows: untouched
									if math.Float64bits(g) != math.Float64bits(c0[i*ldc+j]) {
										t.Fatalf("%s: padding C[%d][%d] changed to %v", name, i, j, g)
									}
									continue
								}
								tol := 1e-12 * float64(k+1) * (1 + math.Abs(w))
								if !(math.Abs(g-w) <= tol) || !(math.Abs(g-r) <= tol) {
									t.Fatalf("%s: C[%d][%d] = %v, triple loop %v, gonum %v", name, i, j, g, w, r)
								}
							}
						}
					}
				}
			}
		}
	})
}

// TestDgemmQuickReturns covers alpha = 0, k = 0, empty C and beta scaling
// without touching A or B.
func TestDgemmQuickReturns(t *testing.T) {
	c := []float64{1, 2, 3, 4}
	Dgemm(blas.NoTrans, blas.NoTrans, 2, 2, 0, 1, make([]float64, 2), 1, nil, 2, 3, c, 2)
	if want := []float64{3, 6, 9, 12}; fmt.Sprint(c) != fmt.Sprint(want) {
		t.Fatalf("k = 0, beta 3: got %v, want %v", c, want)
	}
	nan := math.NaN()
	a := []float64{nan, nan, nan, nan}
	Dgemm(blas.NoTrans, blas.NoTrans, 2, 2, 2, 0, a, 2, a, 2, 0, c, 2)
	if want := []float64{0, 0, 0, 0}; fmt.Sprint(c) != fmt.Sprint(want) {
		t.Fatalf("alpha = 0, beta 0: got %v, want %v", c, want)
	}
	Dgemm(blas.NoTrans, blas.NoTrans, 0, 2, 2, 1, nil, 2, a, 2, 0, nil, 2) // m = 0: nothing to do
}

// TestDgemmPanics checks the argument checks panic with gonum's messages.
func TestDgemmPanics(t *testing.T) {
	a := make([]float64, 16)
	cases := []struct {
		name string
		f    func(f func(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int))
	}{
		{"transpose", func(f func(blas.Transpose, blas.Transpose, int, int, int, float64, []float64, int, []float64, int, float64, []float64, int)) {
			f('x', blas.NoTrans, 2, 2, 2, 1, a, 2, a, 2, 0, a, 2)
		}},
		{"m < 0", func(f func(blas.Transpose, blas.Transpose, int, int, int, float64, []float64, int, []float64, int, float64, []float64, int)) {
			f(blas.NoTrans, blas.NoTrans, -1, 2, 2, 1, a, 2, a, 2, 0, a, 2)
		}},
		{"lda", func(f func(blas.Transpose, blas.Transpose, int, int, int, float64, []float64, int, []float64, int, float64, []float64, int)) {
			f(blas.NoTrans, blas.NoTrans, 2, 2, 3, 1, a, 2, a, 2, 0, a, 2)
		}},
		{"short c", func(f func(blas.Transpose, blas.Transpose, int, int, int, float64, []float64, int, []float64, int, float64, []float64, int)) {
			f(blas.NoTrans, blas.NoTrans, 5, 4, 2, 1, a, 2, a, 4, 0, a, 4)
		}},
		{"short b (trans)", func(f func(blas.Transpose, blas.Transpose, int, int, int, float64, []float64, int, []float64, int, float64, []float64, int)) {
			f(blas.NoTrans, blas.Trans, 2, 5, 4, 1, a, 4, a, 4, 0, a, 5)
		}},
	}
	recovered := func(f func()) (v any) {
		defer func() { v = recover() }()
		f()
		return nil
	}
	for _, tc := range cases {
		got := recovered(func() { tc.f(Dgemm) })
		want := recovered(func() { tc.f(gonum.Implementation{}.Dgemm) })
		if got == nil || got != want {
			t.Errorf("%s: panic %v, gonum panics %v", tc.name, got, want)
		}
	}
}

// TestImplementation routes blas64 through the package and checks a product.
func TestImplementation(t *testing.T) {
	var impl blas.Float64 = Implementation{}
	blas64.Use(impl)
	defer blas64.Use(gonum.Implementation{})
	a := []float64{1, 2, 3, 4, 5, 6}
	b := []float64{7, 8, 9, 10, 11, 12}
	c := make([]float64, 4)
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, blas64.General{Rows: 2, Cols: 3, Stride: 3, Data: a}, blas64.General{Rows: 3, Cols: 2, Stride: 2, Data: b}, 0, blas64.General{Rows: 2, Cols: 2, Stride: 2, Data: c})
	if want := []float64{58, 64, 139, 154}; fmt.Sprint(c) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", c, want)
	}
}

// TestDgemmAllocs asserts the steady state allocates nothing.
func TestDgemmAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers and AllocsPerRun count them")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	a, b, c := randSlice(rng, 128*64), randSlice(rng, 64*256), make([]float64, 128*256)
	allocs := testing.AllocsPerRun(20, func() {
		Dgemm(blas.NoTrans, blas.Trans, 128, 256/4, 64, 1, a, 64, b, 64, 0, c, 256/4)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per call, want 0", allocs)
	}
}

// TestKernelName logs the micro-kernel in use (the performance script reads it).
func TestKernelName(t *testing.T) {
	k := Kernel()
	if k != kernels()[0].name {
		t.Fatalf("Kernel() = %q, want the first of %d available", k, len(kernels()))
	}
	t.Logf("kernel: %s", k)
}

// TestDgemmRowsIndependent: with A not transposed, a row of C does not
// depend on how many rows the product has.
func TestDgemmRowsIndependent(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(5, 6))
		for _, nk := range [][2]int{{2, 64}, {64, 4}, {32, 4}, {16, 16}, {64, 64}, {9, 300}, {300, 9}} {
			n, k := nk[0], nk[1]
			for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
				const rows = 13
				a := randSlice(rng, rows*k)
				b := randSlice(rng, k*n)
				ldb := n
				if tB == blas.Trans {
					ldb = k
				}
				c0 := randSlice(rng, rows*n)
				ref := append([]float64(nil), c0...)
				Dgemm(blas.NoTrans, tB, rows, n, k, 1, a, k, b, ldb, 1, ref, n)
				for m := 1; m < rows; m++ {
					got := append([]float64(nil), c0[:m*n]...)
					Dgemm(blas.NoTrans, tB, m, n, k, 1, a, k, b, ldb, 1, got, n)
					for i := range got {
						if math.Float64bits(got[i]) != math.Float64bits(ref[i]) {
							t.Fatalf("n %d k %d tB %c: with %d rows C[%d] = %v, with %d rows %v", n, k, tB, m, i, got[i], rows, ref[i])
						}
					}
				}
			}
		}
	})
}

// TestKernelsSameBits: the assembly kernels give every element of C the
// same bits whatever their tile (each sums in the order of k with fused
// multiply-adds and ends with the same fused epilogue, and partial tiles
// finish the same way), so a seeded run is the same on CPUs with and without
// AVX-512. Shapes cover whole and partial tiles of both kernels, several
// blocks of k, every transpose, alpha and beta special and general.
func TestKernelsSameBits(t *testing.T) {
	var asm []*microKernel
	for _, k := range kernels() {
		if k.fused {
			asm = append(asm, k)
		}
	}
	if len(asm) < 2 {
		t.Skipf("this CPU runs %d assembly kernel(s): nothing to compare (AVX-512 needed)", len(asm))
	}
	saved := active
	t.Cleanup(func() { active = saved })
	rng := rand.New(rand.NewPCG(11, 12))
	for _, s := range [][3]int{{8, 16, 5}, {6, 8, 3}, {13, 17, 9}, {64, 64, 64}, {96, 48, 300}, {33, 130, 257}, {128, 256, 256}, {1, 40, 70}, {100, 3, 50}} {
		m, n, k := s[0], s[1], s[2]
		for _, ab := range [][2]float64{{1, 0}, {1, 1}, {-0.7, 0.3}, {2.5, -1.25}} {
			for _, tr := range [][2]blas.Transpose{{blas.NoTrans, blas.NoTrans}, {blas.Trans, blas.NoTrans}, {blas.NoTrans, blas.Trans}, {blas.Trans, blas.Trans}} {
				a, b, c0 := randSlice(rng, m*k), randSlice(rng, k*n), randSlice(rng, m*n)
				lda, ldb := k, n
				if tr[0] == blas.Trans {
					lda = m
				}
				if tr[1] == blas.Trans {
					ldb = k
				}
				var ref []float64
				for i, kern := range asm {
					active = kern
					c := append([]float64(nil), c0...)
					Dgemm(tr[0], tr[1], m, n, k, ab[0], a, lda, b, ldb, ab[1], c, n)
					if i == 0 {
						ref = c
						continue
					}
					for e := range c {
						if math.Float64bits(c[e]) != math.Float64bits(ref[e]) {
							t.Fatalf("%dx%dx%d %c%c alpha %v beta %v: C[%d] = %v with %s, %v with %s", m, n, k, tr[0], tr[1], ab[0], ab[1], e, c[e], kern.name, ref[e], asm[0].name)
						}
					}
				}
			}
		}
	}
}

// TestDgemmBias: the fused forward pass gives, with every kernel, packed and
// read in place, the bits of copying the bias into every row, Dgemm with
// beta 1 and a separate ReLU pass, over whole and partial tiles (rows that
// leave 1-5 of a 6-row tile, 1-7 of an 8-row one), several blocks of k
// (the ReLU only after the last), thin products (the unpacked path) and
// alpha 0. NaN, -0 and negative sums keep the ReLU's semantics: (0 > x) ? 0 : x.
func TestDgemmBias(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(21, 22))
		sizes := [][3]int{
			{1, 8, 5}, {2, 16, 4}, {3, 9, 7}, {4, 8, 256}, {5, 24, 33}, {7, 17, 3}, {13, 40, 11},
			{100, 64, 64}, {128, 256, 4}, {128, 2, 256}, {33, 130, 300}, {20, 3, 600}, {6, 1, 9},
		}
		for _, sz := range sizes {
			m, n, k := sz[0], sz[1], sz[2]
			for _, tA := range []blas.Transpose{blas.NoTrans, blas.Trans} {
				for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
					for _, alpha := range []float64{1, -0.75, 0} {
						for _, relu := range []bool{false, true} {
							lda, ldb, ldc := k+rng.IntN(2), n+rng.IntN(2), n+rng.IntN(3)
							if tA == blas.Trans {
								lda = m + rng.IntN(2)
							}
							if tB == blas.Trans {
								ldb = k + rng.IntN(2)
							}
							ar, br := m, k
							if tA == blas.Trans {
								ar = k
							}
							if tB == blas.Trans {
								br = n
							}
							a, b := randSlice(rng, ar*lda), randSlice(rng, br*ldb)
							bias := randSlice(rng, n)
							// Exact zeros of both signs and a NaN reach the
							// epilogue: a row of A and a column of B of zeros.
							bias[0] = math.Copysign(0, -1)
							if n > 1 {
								bias[1] = math.NaN()
							}
							for p := range k {
								if tA == blas.Trans {
									a[p*lda] = 0
								} else {
									a[p] = 0
								}
							}
							want := randSlice(rng, (m-1)*ldc+n)
							got := append([]float64(nil), want...)
							for i := range got {
								if i%ldc < n {
									got[i] = math.Inf(1) // C is not read
								}
							}
							for i := range m {
								copy(want[i*ldc:i*ldc+n], bias)
							}
							Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, 1, want, ldc)
							if relu {
								for i := range m {
									for j, v := range want[i*ldc : i*ldc+n] {
										if 0 > v {
											want[i*ldc+j] = 0
										}
									}
								}
							}
							DgemmBias(tA, tB, m, n, k, alpha, a, lda, b, ldb, bias, relu, got, ldc)
							for i := range got {
								if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
									t.Fatalf("%dx%dx%d %c%c alpha %v relu %v: C[%d] = %v, want %v", m, n, k, tA, tB, alpha, relu, i, got[i], want[i])
								}
							}
						}
					}
				}
			}
		}
	})
	defer func() {
		if r := recover(); r != badBias {
			t.Errorf("a short bias: panic %v, want %q", r, badBias)
		}
	}()
	DgemmBias(blas.NoTrans, blas.NoTrans, 2, 3, 2, 1, make([]float64, 4), 2, make([]float64, 6), 3, make([]float64, 2), false, make([]float64, 6), 3)
}
