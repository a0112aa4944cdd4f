package accountant

import "math"

// dd is a double-double number hi + lo (|lo| <= ulp(hi)/2), for the few
// recurrences whose rounding must stay far below the PLD accountant's
// margins (Dekker 1971, "A floating-point technique for extending the
// available precision"; the error-free transformations TwoSum and TwoProd
// via fused multiply-add).
type dd struct{ hi, lo float64 }

func twoSum(a, b float64) (s, e float64) {
	s = a + b
	bb := s - a
	e = (a - (s - bb)) + (b - bb)
	return s, e
}

func quickTwoSum(a, b float64) dd {
	s := a + b
	return dd{s, b - (s - a)}
}

func (x dd) add(y dd) dd {
	s, e := twoSum(x.hi, y.hi)
	t, f := twoSum(x.lo, y.lo)
	e += t
	r := quickTwoSum(s, e)
	r.lo += f
	return quickTwoSum(r.hi, r.lo)
}

func (x dd) addF(y float64) dd { return x.add(dd{hi: y}) }

func (x dd) sub(y dd) dd { return x.add(dd{-y.hi, -y.lo}) }

func (x dd) mul(y dd) dd {
	p := x.hi * y.hi
	e := math.FMA(x.hi, y.hi, -p)
	e += x.hi*y.lo + x.lo*y.hi
	return quickTwoSum(p, e)
}

func (x dd) mulF(y float64) dd { return x.mul(dd{hi: y}) }

func (x dd) float() float64 { return x.hi + x.lo }
