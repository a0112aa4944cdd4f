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
// tiles are computed into a scratch tile and copied, except a last tile of
// rows that a smaller kernel fits exactly).
//
// The micro-kernel is chosen once, from the CPU's features (detected at run
// time with golang.org/x/sys/cpu; Kernel names it):
//
//   - with AVX-512F, Go assembly on an 8 x 16 tile held in sixteen ZMM
//     accumulators (two loads of B and eight broadcasts of A per step of k);
//   - with AVX2 and FMA, Go assembly on a 6 x 8 tile in twelve YMM
//     accumulators;
//   - elsewhere a pure-Go kernel over the same packed panels.
//
// Both assembly kernels also read an A of up to 2 MiB in place, a row at a
// time with its stride, and packing transposes B^T (and A) eight rows at a
// time in registers and copies rows with vector moves, in AVX-512 or AVX2
// as the CPU allows. A kernel call runs every whole tile down a column of a
// block of C; the last tile of rows that leave one to four of the AVX2
// tile's six runs on a 2 x 8 or 4 x 8 kernel.
//
// DgemmBias is a dense layer's forward pass in one call: the kernels add
// the bias row (their beta term read from a separate source with row stride
// 0) and take the ReLU on the tile while it is in registers, with the bits
// of the copy, the product and the separate pass they replace.
//
// No cgo is involved. The two assembly kernels give every element of C the
// same bits: each sums over k in the same order with one fused multiply-add
// per step, in the same blocks of k, and finishes with the same fused
// epilogue (edge tiles included), so a seeded run is the same with and
// without AVX-512.
//
// Implementation satisfies gonum's blas.Float64 with this Dgemm and
// gonum's pure-Go routines for everything else, so blas64.Use(gemm.Implementation{})
// routes every gonum matrix product of a program through it.
package gemm
