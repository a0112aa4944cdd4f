package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// BenchmarkDgemm times square products C = A B on the packed kernel and, in
// the same run, on gonum's Dgemm (the baseline; it goes parallel above 64 x 64
// unless GOMAXPROCS is 1, so compare with -cpu 1). The GFLOP/s metric counts
// 2 n^3 flops.
func BenchmarkDgemm(b *testing.B) {
	for _, n := range []int{16, 64, 128, 256, 512} {
		rng := rand.New(rand.NewPCG(uint64(n), 1))
		x, y, z := randSlice(rng, n*n), randSlice(rng, n*n), make([]float64, n*n)
		for _, impl := range []struct {
			name string
			f    func(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int)
		}{{"dprl", Dgemm}, {"gonum", gonum.Implementation{}.Dgemm}} {
			b.Run(fmt.Sprintf("n=%d/%s", n, impl.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					impl.f(blas.NoTrans, blas.NoTrans, n, n, n, 1, x, n, y, n, 0, z, n)
				}
				b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
