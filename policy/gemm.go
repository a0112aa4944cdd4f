package policy

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"dprl/internal/gemm"
)

// gemmSerial computes c = alpha op(a) op(b) + beta c exactly as blas64.Gemm,
// with dprl's packed kernel (internal/gemm: single-threaded at every shape,
// deterministic and allocation-free in steady state, an AVX2/FMA
// micro-kernel where the CPU has one).
func gemmSerial(tA, tB blas.Transpose, alpha float64, a, b blas64.General, beta float64, c blas64.General) {
	m, n, k := c.Rows, c.Cols, a.Cols
	if tA != blas.NoTrans {
		k = a.Rows
	}
	gemm.Dgemm(tA, tB, m, n, k, alpha, a.Data, max(a.Stride, 1), b.Data, max(b.Stride, 1), beta, c.Data, max(c.Stride, 1))
}
