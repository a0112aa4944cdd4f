//go:build !amd64

package gemm

func setAsm(bool) {}
