package gemm

import "golang.org/x/sys/cpu"

// useAsm selects the AVX2/FMA micro-kernel; tests turn it off to check the
// portable one on the same machine.
var useAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// kernel6x8 is kernelGo in AVX2/FMA assembly (kernel_amd64.s). It reads
// 6 kb values at a, 8 kb at b, and the 6 x 8 tile at c with row stride ldc
// (elements), which must all be in bounds.
//
//go:noescape
func kernel6x8(kb int, a, b, c *float64, ldc int, alpha, beta float64)

func kernel(kb int, ap, bp, c []float64, ldc int, alpha, beta float64) {
	if useAsm {
		_ = ap[mr*kb-1]
		_ = bp[nr*kb-1]
		_ = c[(mr-1)*ldc+nr-1]
		kernel6x8(kb, &ap[0], &bp[0], &c[0], ldc, alpha, beta)
		return
	}
	kernelGo(kb, ap, bp, c, ldc, alpha, beta)
}

// Kernel names the micro-kernel in use: "avx2-fma 6x8" or "go 6x8".
func Kernel() string {
	if useAsm {
		return "avx2-fma 6x8"
	}
	return "go 6x8"
}
