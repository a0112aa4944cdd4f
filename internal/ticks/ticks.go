// Package ticks picks the ticks of a chart's numeric axis and labels them:
// round values (1, 2 or 5 times a power of ten apart), each label with the
// fewest decimals that tell the ticks apart and still state each value
// exactly ("-750", not "-750.00"; "0.25", not "0.2"). Both dprl's PNG
// charts (internal/chart) and the status page's SVG figures use it.
package ticks

import (
	"math"
	"strconv"
	"strings"
)

// step returns a round step (1, 2 or 5 times a power of ten, at least 1
// when integer) for [lo, hi]: the smallest that cuts it into at most n
// intervals (atMost), or the one whose number of intervals is nearest n.
func step(lo, hi float64, n int, integer, atMost bool) float64 {
	if !(hi > lo) {
		hi = lo + 1
	}
	n = max(n, 1)
	span := hi - lo
	p := math.Pow(10, math.Floor(math.Log10(span/float64(n))))
	best, bestErr := 0.0, math.Inf(1)
	for _, m := range []float64{1, 2, 5, 10} {
		s := m * p
		if integer && s < 1 {
			continue
		}
		if atMost {
			if span/s <= float64(n)*(1+1e-12) {
				return s
			}
			continue
		}
		if e := math.Abs(math.Log(span / s / float64(n))); e < bestErr-1e-12 {
			best, bestErr = s, e
		}
	}
	if best == 0 { // integer, and every candidate below 1
		best = max(1, 10*p)
	}
	return best
}

// Cover returns round tick values whose first is at most lo and whose
// last is at least hi (an axis drawn from the first to the last covers the
// data), the smallest round step (1, 2 or 5 times a power of ten, whole
// when integer) that cuts [lo, hi] into at most n intervals.
func Cover(lo, hi float64, n int, integer bool) []float64 {
	if !(hi > lo) {
		hi = lo + 1
	}
	step := step(lo, hi, n, integer, true)
	start := math.Floor(lo/step+1e-9) * step
	var out []float64
	for v := start; v <= hi+step*1e-9 || len(out) < 2; v += step {
		out = append(out, math.Round(v/step)*step)
		if len(out) > 4*n+4 {
			break
		}
	}
	if out[len(out)-1] < hi {
		out = append(out, out[len(out)-1]+step)
	}
	return out
}

// Within returns the round tick values inside [lo, hi], a round step
// apart (whole when integer) that cuts [lo, hi] into the number of
// intervals nearest n.
func Within(lo, hi float64, n int, integer bool) []float64 {
	if !(hi > lo) {
		return []float64{lo}
	}
	step := step(lo, hi, n, integer, false)
	var out []float64
	for k := math.Ceil(lo/step - 1e-9); ; k++ {
		v := k*step + 0 // no -0
		if v > hi+step*1e-9 {
			break
		}
		v = min(max(v, lo), hi) // a rounding error off the range's ends
		out = append(out, v)
		if len(out) > 4*n+4 {
			break
		}
	}
	return out
}

// Labels formats tick values with the fewest decimals that tell them apart
// and state each of them to within a millionth of the smallest gap
// between them: {-1750, -1250, -750} gives "-1750", "-1250", "-750";
// {0, 0.25, 0.5} gives "0", "0.25", "0.5" (trailing zeros dropped). Values
// of magnitude 1e6 or more, or all below 1e-4, are written in exponent
// form ("2.5e6", "1e-5"). A lone value gets up to four significant digits.
func Labels(vs []float64) []string {
	out := make([]string, len(vs))
	if len(vs) == 0 {
		return out
	}
	big, gap := 0.0, math.Inf(1)
	for i, v := range vs {
		big = max(big, math.Abs(v))
		for _, w := range vs[:i] {
			if d := math.Abs(v - w); d > 0 {
				gap = min(gap, d)
			}
		}
	}
	tol := gap * 1e-6
	if math.IsInf(gap, 1) { // one value, or all equal: four significant digits
		tol = big * 5e-4
	}
	exp := big >= 1e6 || (big > 0 && big < 1e-4)
	for prec := 0; prec <= 17; prec++ {
		ok := true
		seen := make(map[string]bool, len(vs))
		for i, v := range vs {
			s := format(v, prec, exp)
			back, err := strconv.ParseFloat(s, 64)
			if err != nil || math.Abs(back-v) > tol || seen[s] {
				ok = false
				break
			}
			seen[s], out[i] = true, s
		}
		if ok {
			return out
		}
	}
	for i, v := range vs {
		out[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return out
}

// format writes v with prec decimals (exp: in exponent form with prec
// decimals in the mantissa), trailing zeros dropped, "-0" written "0",
// and an exponent without its plus sign and leading zeros ("1e6").
func format(v float64, prec int, exp bool) string {
	if v == 0 {
		return "0"
	}
	if !exp {
		s := strconv.FormatFloat(v, 'f', prec, 64)
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		if s == "-0" {
			return "0"
		}
		return s
	}
	s := strconv.FormatFloat(v, 'e', prec, 64)
	mant, e, _ := strings.Cut(s, "e")
	if strings.Contains(mant, ".") {
		mant = strings.TrimRight(strings.TrimRight(mant, "0"), ".")
	}
	sign := ""
	if e[0] == '-' {
		sign = "-"
	}
	e = strings.TrimLeft(e[1:], "0")
	if e == "" {
		return mant
	}
	return mant + "e" + sign + e
}
