//go:build !amd64

package vecmath

const (
	useAsm    = false
	useAVX512 = false
)

func tanhAVX2(*float64, int) { panic("vecmath: no vector kernel") }

func adamAVX2(int, *float64, *float64, *float64, *float64, *[7]float64) {
	panic("vecmath: no vector kernel")
}

func reluAVX2(*float64, int) { panic("vecmath: no vector kernel") }

func reluGradAVX2(*float64, *float64, int) { panic("vecmath: no vector kernel") }

func tanhAVX512(*float64, int) { panic("vecmath: no vector kernel") }

func adamAVX512(int, *float64, *float64, *float64, *float64, *[7]float64) {
	panic("vecmath: no vector kernel")
}

func reluAVX512(*float64, int) { panic("vecmath: no vector kernel") }

func reluGradAVX512(*float64, *float64, int) { panic("vecmath: no vector kernel") }

func polyakAVX2(*float64, *float64, int, float64) { panic("vecmath: no vector kernel") }

func polyakAVX512(*float64, *float64, int, float64) { panic("vecmath: no vector kernel") }

func tanhGradAVX2(*float64, *float64, int) { panic("vecmath: no vector kernel") }

func sumRowsAVX2(*float64, *float64, int, int, int) { panic("vecmath: no vector kernel") }
