package gemm

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// BenchmarkDgemm times square products C = A B on the packed kernel and, in
// the same run, on gonum's Dgemm (the baseline; it goes parallel above 64 x 64
// unless GOMAXPROCS is 1, so compare with -cpu 1) and on every other
// micro-kernel this CPU can run (n=N/kernel=NAME). The GFLOP/s metric counts
// 2 n^3 flops.
func BenchmarkDgemm(b *testing.B) {
	type impl struct {
		name string
		f    func(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int)
		kern *microKernel
	}
	impls := []impl{{"dprl", Dgemm, active}, {"gonum", gonum.Implementation{}.Dgemm, nil}}
	for _, k := range kernels()[1:] {
		impls = append(impls, impl{"kernel=" + strings.ReplaceAll(k.name, " ", "-"), Dgemm, k})
	}
	saved := active
	defer func() { active = saved }()
	for _, n := range []int{16, 64, 128, 256, 512} {
		rng := rand.New(rand.NewPCG(uint64(n), 1))
		x, y, z := randSlice(rng, n*n), randSlice(rng, n*n), make([]float64, n*n)
		for _, im := range impls {
			b.Run(fmt.Sprintf("n=%d/%s", n, im.name), func(b *testing.B) {
				if im.kern != nil {
					active = im.kern
				}
				b.ReportAllocs()
				for b.Loop() {
					im.f(blas.NoTrans, blas.NoTrans, n, n, n, 1, x, n, y, n, 0, z, n)
				}
				b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkDgemmShapes times the products of a 64x64 MLP layer on a
// minibatch of 32 (forward A W^T, weight gradient D^T A, input gradient D W)
// and of a 256-wide layer on 128 rows, with operands read in place where the
// layout allows and, in the same run, with everything packed: the
// measurement behind directMax and directRowsMax.
func BenchmarkDgemmShapes(b *testing.B) {
	type shape struct {
		name    string
		tA, tB  blas.Transpose
		m, n, k int
	}
	var shapes []shape
	for _, d := range [][2]int{{32, 64}, {128, 256}} {
		rows, w := d[0], d[1]
		shapes = append(shapes,
			shape{fmt.Sprintf("forward-%dx%d", rows, w), blas.NoTrans, blas.Trans, rows, w, w},
			shape{fmt.Sprintf("dW-%dx%d", rows, w), blas.Trans, blas.NoTrans, w, w, rows},
			shape{fmt.Sprintf("dIn-%dx%d", rows, w), blas.NoTrans, blas.NoTrans, rows, w, w})
	}
	saved, savedRows := directMax, directRowsMax
	defer func() { directMax, directRowsMax = saved, savedRows }()
	for _, s := range shapes {
		rng := rand.New(rand.NewPCG(1, 1))
		x, y, z := randSlice(rng, s.m*s.k), randSlice(rng, s.k*s.n), make([]float64, s.m*s.n)
		lda, ldb := s.k, s.n
		if s.tA == blas.Trans {
			lda = s.m
		}
		if s.tB == blas.Trans {
			ldb = s.k
		}
		for _, dm := range []int{saved, 0} {
			name := "direct"
			if dm == 0 {
				name = "packed"
			}
			b.Run(s.name+"/"+name, func(b *testing.B) {
				directMax, directRowsMax = dm, savedRows
				if dm == 0 {
					directRowsMax = 0
				}
				b.ReportAllocs()
				for b.Loop() {
					Dgemm(s.tA, s.tB, s.m, s.n, s.k, 1, x, lda, y, ldb, 0, z, s.n)
				}
				b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
