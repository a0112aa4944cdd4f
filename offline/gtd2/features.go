package gtd2

import (
	"fmt"
	"math"
)

// Features maps an observation to a feature vector phi(s).
type Features interface {
	// Dim is the feature dimension.
	Dim() int
	// Phi writes phi(obs) into dst (len Dim()). It returns an error for an
	// observation it cannot map (wrong length, not one-hot, non-finite).
	Phi(dst, obs []float64) error
}

// Tabular is the one-hot feature of a one-hot observation over N states.
type Tabular struct{ N int }

// Dim returns N.
func (f Tabular) Dim() int { return f.N }

// Phi copies the one-hot observation, checking that it is one.
func (f Tabular) Phi(dst, obs []float64) error {
	if len(obs) != f.N {
		return fmt.Errorf("gtd2: tabular features: observation length %d, want %d", len(obs), f.N)
	}
	ones := 0
	for i, v := range obs {
		switch v {
		case 0:
		case 1:
			ones++
		default:
			return fmt.Errorf("gtd2: tabular features: observation is not one-hot (obs[%d] = %v)", i, v)
		}
		dst[i] = v
	}
	if ones != 1 {
		return fmt.Errorf("gtd2: tabular features: observation has %d ones, want 1", ones)
	}
	return nil
}

// Fourier is the Fourier basis of order K on the state normalised to [0,1]^d
// by the public bounds Low and High (Konidaris, Osentoski & Thomas 2011):
// phi_c(s) = cos(pi c . s~) for every c in {0..K}^d, (K+1)^d features.
type Fourier struct {
	K         int
	Low, High []float64
	coeffs    [][]float64
}

// NewFourier returns the order-K Fourier basis on the box [low, high].
func NewFourier(k int, low, high []float64) (*Fourier, error) {
	if k < 0 || k > 20 {
		return nil, fmt.Errorf("gtd2: Fourier order %d, want 0..20", k)
	}
	if len(low) == 0 || len(low) != len(high) {
		return nil, fmt.Errorf("gtd2: Fourier bounds of lengths %d and %d", len(low), len(high))
	}
	n := 1
	for i := range low {
		if !(high[i] > low[i]) || math.IsInf(high[i]-low[i], 0) {
			return nil, fmt.Errorf("gtd2: Fourier bounds [%v, %v] on component %d: want finite low < high", low[i], high[i], i)
		}
		n *= k + 1
		if n > 1<<20 {
			return nil, fmt.Errorf("gtd2: Fourier basis of order %d in %d dimensions is too large", k, len(low))
		}
	}
	f := &Fourier{K: k, Low: append([]float64(nil), low...), High: append([]float64(nil), high...)}
	c := make([]int, len(low))
	for idx := 0; idx < n; idx++ {
		v := make([]float64, len(low))
		for j := range c {
			v[j] = float64(c[j])
		}
		f.coeffs = append(f.coeffs, v)
		for j := range c { // odometer over {0..K}^d
			c[j]++
			if c[j] <= k {
				break
			}
			c[j] = 0
		}
	}
	return f, nil
}

// Dim returns (K+1)^d.
func (f *Fourier) Dim() int { return len(f.coeffs) }

// Phi writes the Fourier features; components are clipped to the bounds.
func (f *Fourier) Phi(dst, obs []float64) error {
	if len(obs) != len(f.Low) {
		return fmt.Errorf("gtd2: Fourier features: observation length %d, want %d", len(obs), len(f.Low))
	}
	for i, c := range f.coeffs {
		var dot float64
		for j, x := range obs {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("gtd2: Fourier features: obs[%d] = %v", j, x)
			}
			u := (x - f.Low[j]) / (f.High[j] - f.Low[j])
			u = math.Min(1, math.Max(0, u))
			dot += c[j] * u
		}
		dst[i] = math.Cos(math.Pi * dot)
	}
	return nil
}

// Raw is the raw observation of length N followed by a bias feature 1.
type Raw struct{ N int }

// Dim returns N + 1.
func (f Raw) Dim() int { return f.N + 1 }

// Phi copies obs and appends 1.
func (f Raw) Phi(dst, obs []float64) error {
	if len(obs) != f.N {
		return fmt.Errorf("gtd2: raw features: observation length %d, want %d", len(obs), f.N)
	}
	for i, v := range obs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("gtd2: raw features: obs[%d] = %v", i, v)
		}
		dst[i] = v
	}
	dst[f.N] = 1
	return nil
}
