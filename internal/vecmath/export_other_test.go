//go:build !amd64

package vecmath

func setAsm(bool) {}

func setAVX512(bool) {}
