package gemm

func setAsm(on bool) { useAsm = on }
