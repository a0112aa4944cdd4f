package gemm

func setPackAsm(on bool) { pack8Asm = on && packAsm > 0 }

// setPackLevel makes the packing use AVX2 (1) or AVX-512 (2) where the CPU
// has it, and returns a function restoring the level found.
func setPackLevel(level int) func() {
	saved := packAsm
	packAsm = min(level, saved)
	return func() { packAsm = saved }
}

// packLevelOf is the packing level of k's instruction set.
func packLevelOf(k *microKernel) int {
	switch k {
	case avx512Kernel:
		return 2
	case avx2Kernel:
		return 1
	}
	return 0
}
