package gemm

import "golang.org/x/sys/cpu"

// The assembly kernels (kernel_amd64.s). Each reads mr values at a + p sa
// and nr at b + p sb for p < kb, and the mr x nr tile at c with row stride
// ldc (elements), which must all be in bounds.

//go:noescape
func kernel6x8(kb int, a *float64, sa int, b *float64, sb int, c *float64, ldc int, alpha, beta float64)

//go:noescape
func kernel8x16(kb int, a *float64, sa, rs int, b *float64, sb int, c *float64, ldc int, alpha, beta float64)

//go:noescape
func pack8AVX512(dst *float64, stride int, src *float64, ld, n int)

// pack8Avail says the CPU has packB8's AVX-512 transpose; pack8Asm that it
// is used (tests turn it off to check the Go loop).
var pack8Avail = cpu.X86.HasAVX512F
var pack8Asm = pack8Avail

// pack8 does packB8's work for p < kb &^ 7 in assembly where it can and
// returns how far it got.
func pack8(dst []float64, stride int, src []float64, ld, kb int) int {
	n := kb &^ 7
	if !pack8Asm || n == 0 {
		return 0
	}
	_ = dst[(n-1)*stride+7]
	_ = src[7*ld+n-1]
	pack8AVX512(&dst[0], stride, &src[0], ld, n)
	return n
}

//go:noescape
func copyRowsAVX512(dst *float64, dstStride int, src *float64, srcStride, rows, vecs int)

// copyRows copies rows rows of w values (w = 8 or 16) from src (stride
// srcStride) to dst (stride w) in assembly where it can, and reports
// whether it did.
func copyRows(dst []float64, src []float64, srcStride, rows, w int) bool {
	if !pack8Asm || rows == 0 || w%8 != 0 || w > 16 {
		return false
	}
	_ = dst[(rows-1)*w+w-1]
	_ = src[(rows-1)*srcStride+w-1]
	copyRowsAVX512(&dst[0], w, &src[0], srcStride, rows, w/8)
	return true
}

var (
	// avx2Kernel holds a 6 x 8 tile in twelve YMM accumulators.
	avx2Kernel = &microKernel{name: "avx2-fma 6x8", mr: 6, nr: 8, fused: true, run: func(kb int, ap []float64, sa, _ int, bp []float64, sb int, c []float64, ldc int, alpha, beta float64) {
		_ = ap[(kb-1)*sa+6-1]
		_ = bp[(kb-1)*sb+8-1]
		_ = c[(6-1)*ldc+8-1]
		kernel6x8(kb, &ap[0], sa, &bp[0], sb, &c[0], ldc, alpha, beta)
	}}
	// avx512Kernel holds an 8 x 16 tile in sixteen ZMM accumulators and
	// reads A in place with any row stride.
	avx512Kernel = &microKernel{name: "avx512 8x16", mr: 8, nr: 16, fused: true, rowStride: true, run: func(kb int, ap []float64, sa, rs int, bp []float64, sb int, c []float64, ldc int, alpha, beta float64) {
		_ = ap[(kb-1)*sa+(8-1)*rs]
		_ = bp[(kb-1)*sb+16-1]
		_ = c[(8-1)*ldc+16-1]
		kernel8x16(kb, &ap[0], sa, rs, &bp[0], sb, &c[0], ldc, alpha, beta)
	}}
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
