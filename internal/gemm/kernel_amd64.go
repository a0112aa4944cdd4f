package gemm

import "golang.org/x/sys/cpu"

// The assembly kernels (kernel_amd64.s). Each reads, for p < kb, row i's
// value of A at a + i rs + p sa (i < mr) and nr values of B at b + p sb, and
// the mr x nr tile at c with row stride ldc (all in elements), which must
// all be in bounds.

// The beta term reads the tile at src with row stride lds (C itself, or a
// bias row with stride 0), and relu sets the ReLU after it.

//go:noescape
func kernel6x8(kb int, a *float64, sa, rs int, b *float64, sb int, c *float64, ldc int, alpha, beta float64, src *float64, lds int, relu bool, tiles, astep int)

//go:noescape
func kernel4x8(kb int, a *float64, sa, rs int, b *float64, sb int, c *float64, ldc int, alpha, beta float64, src *float64, lds int, relu bool, tiles, astep int)

//go:noescape
func kernel2x8(kb int, a *float64, sa, rs int, b *float64, sb int, c *float64, ldc int, alpha, beta float64, src *float64, lds int, relu bool, tiles, astep int)

//go:noescape
func kernel8x16(kb int, a *float64, sa, rs int, b *float64, sb int, c *float64, ldc int, alpha, beta float64, src *float64, lds int, relu bool, tiles, astep int)

//go:noescape
func pack8AVX512(dst *float64, stride int, src *float64, ld, n int)

//go:noescape
func pack8AVX2(dst *float64, stride int, src *float64, ld, n int)

//go:noescape
func copyRowsAVX512(dst *float64, dstStride int, src *float64, srcStride, rows, vecs int)

//go:noescape
func copyRowsAVX2(dst *float64, dstStride int, src *float64, srcStride, rows, w int)

// The packing routines in assembly: packAsm is what the CPU has (2 for
// AVX-512, 1 for AVX2, 0 for neither), pack8Asm whether they are used
// (tests turn it off to check the Go loops).
var (
	packAsm  = packLevel()
	pack8Asm = packAsm > 0
)

func packLevel() int {
	switch {
	case cpu.X86.HasAVX512F:
		return 2
	case cpu.X86.HasAVX2:
		return 1
	}
	return 0
}

// pack8 does packB8's work for p < kb rounded down to the vector width in
// assembly where it can and returns how far it got.
func pack8(dst []float64, stride int, src []float64, ld, kb int) int {
	if !pack8Asm {
		return 0
	}
	n := kb &^ 3
	if packAsm == 2 {
		n = kb &^ 7
	}
	if n == 0 {
		return 0
	}
	_ = dst[(n-1)*stride+7]
	_ = src[7*ld+n-1]
	if packAsm == 2 {
		pack8AVX512(&dst[0], stride, &src[0], ld, n)
	} else {
		pack8AVX2(&dst[0], stride, &src[0], ld, n)
	}
	return n
}

// copyRows copies rows rows of w values (w = 8 or 16 with AVX-512, 6 or 8
// with AVX2) from src (stride srcStride) to dst (stride w) in assembly where
// it can, and reports whether it did.
func copyRows(dst []float64, src []float64, srcStride, rows, w int) bool {
	if !pack8Asm || rows == 0 {
		return false
	}
	switch {
	case packAsm == 2 && (w == 8 || w == 16):
		_ = dst[(rows-1)*w+w-1]
		_ = src[(rows-1)*srcStride+w-1]
		copyRowsAVX512(&dst[0], w, &src[0], srcStride, rows, w/8)
	case w == 6 || w == 8:
		_ = dst[(rows-1)*w+w-1]
		_ = src[(rows-1)*srcStride+w-1]
		copyRowsAVX2(&dst[0], w, &src[0], srcStride, rows, w)
	default:
		return false
	}
	return true
}

// asmKernel wraps an assembly kernel of an mr x nr tile, checking the bounds
// of everything it reads and writes.
func asmKernel(mr, nr int, k func(kb int, a *float64, sa, rs int, b *float64, sb int, c *float64, ldc int, alpha, beta float64, src *float64, lds int, relu bool, tiles, astep int)) kernelFunc {
	return func(kb int, ap []float64, sa, rs int, bp []float64, sb int, c []float64, ldc int, alpha, beta float64, src []float64, lds int, relu bool, tiles, astep int) {
		if tiles < 1 || kb < 1 || astep < 0 {
			panic("gemm: bad kernel call")
		}
		last := (tiles - 1) * mr // the last tile's first row
		_ = ap[(tiles-1)*astep+(kb-1)*sa+(mr-1)*rs]
		_ = bp[(kb-1)*sb+nr-1]
		_ = c[(last+mr-1)*ldc+nr-1]
		if beta != 0 {
			_ = src[(last+mr-1)*lds+nr-1]
		}
		k(kb, &ap[0], sa, rs, &bp[0], sb, &c[0], ldc, alpha, beta, &src[0], lds, relu, tiles, astep)
	}
}

var (
	// avx2Kernel holds a 6 x 8 tile in twelve YMM accumulators and reads A
	// in place with any row stride; the last tile of a matrix whose rows
	// leave one to four runs on a 2 x 8 or 4 x 8 tile.
	avx2Kernel = &microKernel{name: "avx2-fma 6x8", mr: 6, nr: 8, fused: true, rowStride: true, run: asmKernel(6, 8, kernel6x8),
		tails: []*microKernel{
			{name: "avx2-fma 2x8", mr: 2, nr: 8, fused: true, rowStride: true, run: asmKernel(2, 8, kernel2x8)},
			{name: "avx2-fma 4x8", mr: 4, nr: 8, fused: true, rowStride: true, run: asmKernel(4, 8, kernel4x8)},
		}}
	// avx512Kernel holds an 8 x 16 tile in sixteen ZMM accumulators and
	// reads A in place with any row stride.
	avx512Kernel = &microKernel{name: "avx512 8x16", mr: 8, nr: 16, fused: true, rowStride: true, run: asmKernel(8, 16, kernel8x16)}
)

// kernels lists the micro-kernels this CPU can run, the fastest first.
func kernels() []*microKernel {
	var ks []*microKernel
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, avx512Kernel)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, avx2Kernel)
	}
	return append(ks, goKernel)
}

func bestKernel() *microKernel { return kernels()[0] }
