package gemm

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// Implementation is gonum's pure-Go BLAS with Dgemm replaced by this
// package's. It satisfies blas.Float64, the interface blas64.Use takes, so
//
//	blas64.Use(gemm.Implementation{})
//
// sends every gonum.org/v1/gonum/blas/blas64 and mat product of a program
// through the packed kernel. Unlike gonum's, this Dgemm never starts
// goroutines: products are single-threaded and deterministic at every size.
type Implementation struct {
	gonum.Implementation
}

// Dgemm computes C = alpha op(A) op(B) + beta C with the package-level Dgemm.
func (Implementation) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}
