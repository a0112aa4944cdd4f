//go:build !amd64

package gemm

func setPackAsm(bool) {}
