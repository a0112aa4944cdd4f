//go:build !amd64

package vecmath

const useAsm = false

func tanhAVX2(*float64, int) { panic("vecmath: no vector kernel") }

func adamAVX2(int, *float64, *float64, *float64, *float64, *[7]float64) {
	panic("vecmath: no vector kernel")
}

func reluAVX2(*float64, int) { panic("vecmath: no vector kernel") }

func reluGradAVX2(*float64, *float64, int) { panic("vecmath: no vector kernel") }
