//go:build !amd64

package gemm

const useAsm = false

func kernel(kb int, ap []float64, sa int, bp []float64, sb int, c []float64, ldc int, alpha, beta float64) {
	kernelGo(kb, ap, sa, bp, sb, c, ldc, alpha, beta)
}

// Kernel names the micro-kernel in use: "avx2-fma 6x8" or "go 6x8".
func Kernel() string { return "go 6x8" }
