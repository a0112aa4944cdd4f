package vecmath

import "golang.org/x/sys/cpu"

// useAsm selects the AVX2/FMA kernels; tests turn it off to check the Go
// ones on the same machine.
var useAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// useAVX512 selects, on top of useAsm, the AVX-512 kernels for the leading
// multiple of 8 elements (the AVX2 ones still take the next 4 and the Go
// or buffered tails the rest); tests turn it off to compare the two. Only
// read when useAsm is set.
var useAVX512 = useAsm && cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ

//go:noescape
func tanhAVX2(x *float64, n int)

//go:noescape
func adamAVX2(n int, p, grad, m, v *float64, c *[7]float64)

//go:noescape
func reluAVX2(x *float64, n int)

//go:noescape
func reluGradAVX2(d, y *float64, n int)

//go:noescape
func tanhAVX512(x *float64, n int)

//go:noescape
func adamAVX512(n int, p, grad, m, v *float64, c *[7]float64)

//go:noescape
func reluAVX512(x *float64, n int)

//go:noescape
func reluGradAVX512(d, y *float64, n int)

//go:noescape
func polyakAVX2(t, s *float64, n int, tau float64)

//go:noescape
func polyakAVX512(t, s *float64, n int, tau float64)

//go:noescape
func tanhGradAVX2(d, y *float64, n int)

//go:noescape
func sumRowsAVX2(dst, x *float64, rows, w, cols int)
