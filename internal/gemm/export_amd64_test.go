package gemm

func setPackAsm(on bool) { pack8Asm = on && pack8Avail }
