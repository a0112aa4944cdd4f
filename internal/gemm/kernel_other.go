//go:build !amd64

package gemm

// kernels lists the micro-kernels this CPU can run: the portable one.
func kernels() []*microKernel { return []*microKernel{goKernel} }

func bestKernel() *microKernel { return goKernel }

// pack8 is packB8's assembly on amd64; here nothing is done in assembly.
func pack8([]float64, int, []float64, int, int) int { return 0 }

// copyRows is packing's row copy in assembly on amd64; here it declines.
func copyRows([]float64, []float64, int, int, int) bool { return false }
