package vecmath

import "math"

// spans splits n elements among the kernels: [0, n8) goes to the AVX-512
// one, [n8, n4) to the AVX2 one and [n4, n) to the tail. With AVX-512 the
// vector kernels take the same elements as with AVX2 alone (the leading
// multiple of 4), so the results do not depend on which the CPU has; both
// bounds are 0 without AVX2.
func spans(n int) (n8, n4 int) {
	if !useAsm {
		return 0, 0
	}
	if useAVX512 {
		n8 = n &^ 7
	}
	return n8, n &^ 3
}

// Tanh sets x[i] = tanh(x[i]) for every i, within 2 ulp of math.Tanh
// (NaN stays NaN, +-Inf gives +-1, -0 stays -0). With AVX-512 the leading
// multiple of 8 goes through the 8-lane kernel, which gives the AVX2
// kernel's bits.
func Tanh(x []float64) {
	n8, n := spans(len(x))
	if n8 > 0 {
		tanhAVX512(&x[0], n8)
	}
	if n > n8 {
		tanhAVX2(&x[n8], n-n8)
	}
	if n == len(x) {
		return
	}
	if useAsm {
		// The tail through the same vector code, so a value's tanh does not
		// depend on its position.
		var buf [4]float64
		copy(buf[:], x[n:])
		tanhAVX2(&buf[0], 4)
		copy(x[n:], buf[:])
		return
	}
	for i := n; i < len(x); i++ {
		x[i] = math.Tanh(x[i])
	}
}

// AdamParams are the per-step scalars of an Adam update: the decay rates,
// the step size (the learning rate over the first moment's bias correction),
// the reciprocal square root of the second moment's bias correction, and eps.
type AdamParams struct {
	Beta1, Beta2, Step, InvSqrtC2, Eps float64
}

// Adam applies, for every i,
//
//	m[i] = b1 m[i] + (1-b1) g[i],  v[i] = b2 v[i] + (1-b2) g[i]^2,
//	p[i] -= step m[i] / (sqrt(v[i]) InvSqrtC2 + eps).
//
// All four slices must have the same length. Where the CPU has AVX-512 the
// leading multiple of 8 goes through the 8-lane kernel, which gives the
// AVX2 kernel's bits.
func Adam(p, g, m, v []float64, c AdamParams) {
	n := len(p)
	if len(g) != n || len(m) != n || len(v) != n {
		panic("vecmath: adam slices of different lengths")
	}
	k8, k := spans(n)
	cs := [7]float64{c.Beta1, 1 - c.Beta1, c.Beta2, 1 - c.Beta2, c.Step, c.InvSqrtC2, c.Eps}
	if k8 > 0 {
		adamAVX512(k8, &p[0], &g[0], &m[0], &v[0], &cs)
	}
	if k > k8 {
		adamAVX2(k-k8, &p[k8], &g[k8], &m[k8], &v[k8], &cs)
	}
	b1, b2 := c.Beta1, c.Beta2
	for i := k; i < n; i++ {
		gi := g[i]
		mi := b1*m[i] + (1-b1)*gi
		vi := b2*v[i] + (1-b2)*gi*gi
		m[i], v[i] = mi, vi
		p[i] -= c.Step * mi / (math.Sqrt(vi)*c.InvSqrtC2 + c.Eps)
	}
}

// ReLU sets x[i] = max(x[i], 0) for every i (NaN stays NaN; -0 may stay
// -0). The AVX-512 and AVX2 kernels give the same bits.
func ReLU(x []float64) {
	n8, n := spans(len(x))
	if n8 > 0 {
		reluAVX512(&x[0], n8)
	}
	if n > n8 {
		reluAVX2(&x[n8], n-n8)
	}
	for i := n; i < len(x); i++ {
		if v := x[i]; v < 0 {
			x[i] = 0
		}
	}
}

// ReLUGrad sets d[i] = 0 wherever y[i] is not > 0 (y the ReLU's outputs,
// d the gradient with respect to them: the derivative is 1 where the unit
// is active, 0 elsewhere, at 0 included). len(y) must be >= len(d). The
// AVX-512 and AVX2 kernels give the same bits.
func ReLUGrad(d, y []float64) {
	y = y[:len(d)]
	n8, n := spans(len(d))
	if n8 > 0 {
		reluGradAVX512(&d[0], &y[0], n8)
	}
	if n > n8 {
		reluGradAVX2(&d[n8], &y[n8], n-n8)
	}
	for i := n; i < len(d); i++ {
		if !(y[i] > 0) {
			d[i] = 0
		}
	}
}

// TanhGrad sets d[i] = d[i] (1 - y[i]^2) for every i (y the tanh's
// outputs, d the gradient with respect to them): a product, a difference
// and a product, each rounded (never a fused multiply-add), on every path,
// so the bits do not depend on the CPU (AVX2 lanes where the CPU has them:
// an element-wise pass bound by memory, which AVX-512 would not speed up).
// len(y) must be >= len(d).
func TanhGrad(d, y []float64) {
	y = y[:len(d)]
	n := 0
	if useAsm {
		n = len(d) &^ 3
		if n > 0 {
			tanhGradAVX2(&d[0], &y[0], n)
		}
	}
	for i := n; i < len(d); i++ {
		v := y[i]
		d[i] *= 1 - float64(v*v) // the conversion forbids fusing
	}
}

// SumRows sets dst[j] to the sum of column j of x, n rows of len(dst)
// values (row-major): a dense layer's bias gradient. Each column is summed
// from +0 in the order of the rows, on every path (eight columns'
// accumulators at a time in registers with AVX2), so the bits are those of
// clearing dst and adding the rows to it one by one.
func SumRows(dst, x []float64, n int) {
	w := len(dst)
	x = x[:n*w]
	k := 0
	if useAsm && n > 0 {
		k = w &^ 3
		if k > 0 {
			sumRowsAVX2(&dst[0], &x[0], n, w, k)
		}
	}
	for j := k; j < w; j++ {
		s := 0.0
		for i := range n {
			s += x[i*w+j]
		}
		dst[j] = s
	}
}

// Polyak sets t[i] = t[i] + tau (s[i] - t[i]) for every i (a target
// network's Polyak averaging toward s). Each element takes three rounded
// operations (a subtraction, a product, a sum; never a fused multiply-add)
// on every path, so the bits do not depend on the CPU. len(s) must be >=
// len(t).
func Polyak(t, s []float64, tau float64) {
	s = s[:len(t)]
	n8, n := spans(len(t))
	if n8 > 0 {
		polyakAVX512(&t[0], &s[0], n8, tau)
	}
	if n > n8 {
		polyakAVX2(&t[n8], &s[n8], n-n8, tau)
	}
	for i := n; i < len(t); i++ {
		d := float64(tau * (s[i] - t[i])) // the conversion forbids fusing
		t[i] += d
	}
}
