package accountant

import (
	"sync"

	"gonum.org/v1/gonum/dsp/fourier"
)

// fftPlans caches gonum FFT plans by length across calls: a plan's twiddle
// factors cost O(n) sines and cosines to compute. A plan holds scratch
// space, so each is used by one goroutine at a time (a sync.Pool per
// length).
var fftPlans sync.Map // int -> *sync.Pool of *fourier.FFT

func fftPlan(n int) (*fourier.FFT, func()) {
	v, _ := fftPlans.LoadOrStore(n, &sync.Pool{New: func() any { return fourier.NewFFT(n) }})
	pool := v.(*sync.Pool)
	f := pool.Get().(*fourier.FFT)
	return f, func() { pool.Put(f) }
}

// fftCache is the scratch space of one accounting call.
type fftCache struct {
	ca, cb []complex128
	xa, xb []float64
}

func newFFTCache() *fftCache { return &fftCache{} }

func grow64(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	s = s[:n]
	clear(s)
	return s
}

func growC(s []complex128, n int) []complex128 {
	if cap(s) < n {
		return make([]complex128, n)
	}
	return s[:n]
}

// convolve returns the linear convolution of a and b (n >= len(a)+len(b)-1,
// so the circular convolution of length n does not wrap) in a new slice of
// length n: real FFTs of both (one when a and b are the same slice), their
// product, the inverse FFT, divided by n.
func (c *fftCache) convolve(a, b []float64, n int) []float64 {
	f, done := fftPlan(n)
	defer done()
	c.xa = grow64(c.xa, n)
	copy(c.xa, a)
	c.ca = growC(c.ca, n/2+1)
	f.Coefficients(c.ca, c.xa)
	same := len(a) == len(b) && &a[0] == &b[0]
	if same {
		for i, v := range c.ca {
			c.ca[i] = v * v
		}
	} else {
		c.xb = grow64(c.xb, n)
		copy(c.xb, b)
		c.cb = growC(c.cb, n/2+1)
		f.Coefficients(c.cb, c.xb)
		for i, v := range c.cb {
			c.ca[i] *= v
		}
	}
	out := make([]float64, n)
	f.Sequence(out, c.ca)
	inv := 1 / float64(n)
	for i := range out {
		out[i] *= inv
	}
	return out
}

// fastLen returns the smallest n' >= n of the form 2^a 3^b 5^c (the
// radices FFTPACK handles fastest) whose factorisation into FFTPACK's
// radices 4, 2, 3 and 5 has at most 13 factors (gonum's plan holds 15
// entries: the length, the count and the factors).
func fastLen(n int) int {
	best := 1
	for best < n {
		best *= 2
	}
	for p5, c := 1, 0; p5 < best; p5, c = p5*5, c+1 {
		for p35, b := p5, 0; p35 < best; p35, b = p35*3, b+1 {
			m, a := p35, 0
			for m < n {
				m *= 2
				a++
			}
			if m < best && a/2+a%2+b+c <= 13 {
				best = m
			}
		}
	}
	return best
}
