package vecmath

func setAsm(on bool) { useAsm = on }

func setAVX512(on bool) { useAVX512 = on }
