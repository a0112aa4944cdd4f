//go:build !amd64

package gemm

const useAsm = false

func kernel(kb int, ap, bp, c []float64, ldc int, alpha, beta float64) {
	kernelGo(kb, ap, bp, c, ldc, alpha, beta)
}

// Kernel names the micro-kernel in use: "avx2-fma 6x8" or "go 6x8".
func Kernel() string { return "go 6x8" }
