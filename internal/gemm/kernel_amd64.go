package gemm

import "golang.org/x/sys/cpu"

// useAsm selects the AVX2/FMA micro-kernel; tests turn it off to check the
// portable one on the same machine.
var useAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// kernel6x8 is kernelGo in AVX2/FMA assembly (kernel_amd64.s). It reads
// 6 values at a + p sa and 8 at b + p sb for p < kb, and the 6 x 8 tile at c
// with row stride ldc (elements), which must all be in bounds.
//
//go:noescape
func kernel6x8(kb int, a *float64, sa int, b *float64, sb int, c *float64, ldc int, alpha, beta float64)

func kernel(kb int, ap []float64, sa int, bp []float64, sb int, c []float64, ldc int, alpha, beta float64) {
	if useAsm {
		_ = ap[(kb-1)*sa+mr-1]
		_ = bp[(kb-1)*sb+nr-1]
		_ = c[(mr-1)*ldc+nr-1]
		kernel6x8(kb, &ap[0], sa, &bp[0], sb, &c[0], ldc, alpha, beta)
		return
	}
	kernelGo(kb, ap, sa, bp, sb, c, ldc, alpha, beta)
}

// Kernel names the micro-kernel in use: "avx2-fma 6x8" or "go 6x8".
func Kernel() string {
	if useAsm {
		return "avx2-fma 6x8"
	}
	return "go 6x8"
}
