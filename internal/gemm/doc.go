// Package gemm is dprl's float64 matrix multiply: C = alpha op(A) op(B) +
// beta C on row-major matrices, with the signature and semantics of gonum's
// blas.Float64Level3 Dgemm, single-threaded, deterministic and free of
// allocations once its packing buffers have grown.
//
// It follows the GotoBLAS/BLIS design (Goto and van de Geijn, "Anatomy of
// High-Performance Matrix Multiplication", ACM TOMS 34(3), 2008; Van Zee and
// van de Geijn, "BLIS: A Framework for Rapidly Instantiating BLAS
// Functionality", ACM TOMS 41(3), 2015): op(B) is packed in panels of kc rows
// by NR columns, op(A) in panels of MR rows by kc columns, and a register
// blocked micro-kernel multiplies one A panel by one B panel into an MR x NR
// tile of C. Packing reads op(A) and op(B) through their transposes and
// strides, so every combination of transposes runs the same kernel, and it
// pads the edges with zeros, so the kernel always computes whole tiles (edge
// tiles are computed into a scratch tile and copied).
//
// On amd64 with AVX2 and FMA (detected at run time with golang.org/x/sys/cpu)
// the micro-kernel is Go assembly: a 6 x 8 tile held in twelve YMM
// accumulators, two loads of B and six broadcasts of A per step of k. On other
// CPUs and architectures it is a pure-Go kernel over the same packed panels;
// no cgo is involved.
//
// Implementation satisfies gonum's blas.Float64 with this Dgemm and
// gonum's pure-Go routines for everything else, so blas64.Use(gemm.Implementation{})
// routes every gonum matrix product of a program through it.
package gemm
