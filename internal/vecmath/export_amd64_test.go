package vecmath

func setAsm(on bool) { useAsm = on }
