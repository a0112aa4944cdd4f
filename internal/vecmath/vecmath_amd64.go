package vecmath

import "golang.org/x/sys/cpu"

// useAsm selects the AVX2/FMA kernels; tests turn it off to check the Go
// ones on the same machine.
var useAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func tanhAVX2(x *float64, n int)

//go:noescape
func adamAVX2(n int, p, grad, m, v *float64, c *[7]float64)

//go:noescape
func reluAVX2(x *float64, n int)

//go:noescape
func reluGradAVX2(d, y *float64, n int)
