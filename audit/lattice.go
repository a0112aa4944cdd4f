package audit

import "math"

// ZigguratLattice is the floating-point distinguisher against Gaussian noise
// drawn as v + sigma * rand.NormFloat64(): Go's ziggurat returns
// float64(j) * w[i] (int32 j, one of 128 float32 widths) in more than 99% of
// draws, so it asks which of the candidate inputs v and v + Delta puts the
// noise on that lattice (Mironov 2012, "On significance of the least
// significant bits for differential privacy"). Against package noise's exact
// sampler it does no better than a coin: docs/privacy.md, section 2.
type ZigguratLattice struct {
	wn [128]float32
}

// NewZigguratLattice returns the distinguisher for Go's ziggurat table.
func NewZigguratLattice() *ZigguratLattice {
	return &ZigguratLattice{wn: ZigguratWidths()}
}

// ZigguratWidths returns the 128 float32 strip widths of Go's ziggurat
// normal sampler (math/rand/v2 NormFloat64 returns float64(j) * float64(w[i])
// for an int32 j in more than 99% of draws), recomputed with Marsaglia &
// Tsang's recurrence ("The Ziggurat Method for Generating Random Variables",
// 2000), which reproduces Go's table bit for bit.
func ZigguratWidths() [128]float32 {
	const vn, m1 = 9.91256303526217e-3, 2147483648.0
	dn := 3.442619855899
	var wn [128]float32
	wn[0] = float32(vn / math.Exp(-0.5*dn*dn) / m1)
	wn[127] = float32(dn / m1)
	for i := 126; i >= 1; i-- {
		dn = math.Sqrt(-2 * math.Log(vn/dn+math.Exp(-0.5*dn*dn)))
		wn[i] = float32(dn / m1)
	}
	return wn
}

func ulp(x float64) float64 { return math.Nextafter(math.Abs(x), math.Inf(1)) - math.Abs(x) }

// Fits reports whether the output o can be b + sigma * NormFloat64() with a
// ziggurat lattice draw: whether (o - b) / sigma is float64(j) * w[i] for an
// int32 j and a strip width w[i], up to the rounding of the addition, the
// subtraction and the division.
func (z *ZigguratLattice) Fits(o, b, sigma float64) bool {
	r := (o - b) / sigma
	slack := (ulp(o) + ulp(o-b)) / sigma
	for _, w := range z.wn {
		w := float64(w)
		q := r / w
		if math.Abs(q) >= 1<<31 {
			continue
		}
		if math.Abs(q-math.Round(q)) <= 2*(slack/w+ulp(q)) {
			return true
		}
	}
	return false
}

// score returns the lattice test's statistic: over the coordinates where
// the un-noised values of D and D' differ, the number that fit D's value
// minus the number that fit D”s.
func (z *ZigguratLattice) score(l *Lattice) func([]float64) float64 {
	return func(o []float64) float64 {
		s := 0.0
		for i := range min(len(o), len(l.In)) {
			if l.In[i] == l.Out[i] {
				continue
			}
			if z.Fits(o[i], l.In[i], l.Sigma) {
				s++
			}
			if z.Fits(o[i], l.Out[i], l.Sigma) {
				s--
			}
		}
		return s
	}
}
