//go:build !amd64

package gemm

func setPackAsm(bool) {}

func setPackLevel(int) func() { return func() {} }

func packLevelOf(*microKernel) int { return 0 }
