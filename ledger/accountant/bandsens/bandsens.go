// Package bandsens is the sensitivity of the banded matrix-factorization
// mechanism (its noise generation is policy/bandmf's): the banded
// square-root factor, and the L2 sensitivity of a contributor under a
// participation pattern (at most k participations, any two at least sep
// releases apart). It sits in the accounting layer, beside package
// accountant, so that the ledger can check a release's banded guarantee
// without importing the policy layer; policy/bandmf builds on it.
//
// The mechanism releases y = C x + z for a lower-triangular Toeplitz C with
// C[t][t-j] = c_j (j = 0 .. b-1, zero beyond: b bands) and z i.i.d.
// N(0, sigma^2) per row and coordinate (policy/bandmf: the mechanism, its
// references and its streaming noise).
//
// # Sensitivity
//
// A contributor present in the releases of a set W (one contribution of
// norm at most Delta in each, chosen adaptively) changes y by C D, D the
// matrix whose row t in W is its contribution d_t, and
//
//	||C D||_F^2 = sum_{s,t in W} (C^T C)_{st} <d_s, d_t> <= Delta^2 ||C 1_W||^2
//
// when C^T C >= 0 entrywise (every c_j >= 0 here), with equality when every
// d_t is the same vector of norm Delta (Choquette-Choo et al. 2023,
// "Multi-Epoch Matrix Factorization Mechanisms for Private Machine
// Learning", Corollary 2.1 and Eq. (3); their Theorem 2.2, after Denisov et
// al. 2022, extends it to adaptively chosen contributions). So the
// sensitivity of the participation pattern "at most k participations, any
// two at least sep releases apart" (b-min-sep participation, Choquette-Choo
// et al. 2023, "(Amplified) Banded Matrix Factorization: A unified approach
// to private training") is
//
//	sens(k) = Delta max_W ||C 1_W||,
//
// the maximum over the allowed sets W. StreamSensitivitySq and
// SensitivitySq compute max_W ||C 1_W||^2 exactly by dynamic programming:
// the Gram matrix C^T C of a b-banded C is zero beyond distance b - 1, so
// only the chosen columns of the last b - 1 positions can interact with the
// next one. When sep >= b the columns of an allowed W have disjoint
// supports and sens(k) = sqrt(k) Delta ||c|| in an unbounded stream; the
// programs reproduce this and also handle sep < b.
//
// With the noise calibrated as sigma = z ||c|| Delta (each column normalised
// to the single-participation Gaussian mechanism of multiplier z), a
// contributor with the participation set W gets the Gaussian mechanism of
// multiplier z ||c|| / ||C 1_W||, which is z / sqrt(|W|) when sep >= b: the
// same guarantee as |W| independent releases of multiplier z (Dong, Roth
// and Su 2022, "Gaussian Differential Privacy", Corollary 3.3), with much
// less noise in the parameters (bandmf.PrefixNoise).
package bandsens

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxBand bounds the number of bands b.
const MaxBand = 1 << 12

// Slack inflates a sensitivity computed by floating-point sums of
// non-negative terms (at most about 2^32 of them, relative error below
// 2^32 x 2^-53) so that rounding can only overstate it.
const Slack = 1 + 1e-6

// SqrtCoefficients returns c_0, ..., c_{b-1} of the banded square root,
// c_j = binom(2j, j) / 4^j = c_{j-1} (2j - 1) / (2j): the first b
// coefficients of the power series of (1 - x)^(-1/2), the square root of
// the prefix-sum matrix (Kalinin and Lampert 2024, "Banded Square Root
// Matrix Factorization for Differentially Private Model Training", Eq. for
// the BSR; Fichtenberger, Henzinger and Upadhyay 2023 for the full square
// root). They are positive and decreasing, c_0 = 1.
func SqrtCoefficients(b int) []float64 {
	c := make([]float64, max(b, 0))
	for j := range c {
		c[j] = 1
		if j > 0 {
			c[j] = c[j-1] * float64(2*j-1) / float64(2*j)
		}
	}
	return c
}

// CheckCoefficients rejects an empty factor, a non-finite or negative coefficient
// and c_0 = 0 (C would not be invertible). Non-negative coefficients make
// C^T C >= 0 entrywise, the condition of the sensitivity argument.
func CheckCoefficients(coef []float64) error {
	if len(coef) == 0 || len(coef) > MaxBand {
		return fmt.Errorf("bandmf: %d bands, want 1 to %d", len(coef), MaxBand)
	}
	if !(coef[0] > 0) {
		return fmt.Errorf("bandmf: c_0 = %v, want > 0", coef[0])
	}
	for j, c := range coef {
		if !(c >= 0) || math.IsInf(c, 0) {
			return fmt.Errorf("bandmf: c_%d = %v, want finite and >= 0 (C^T C >= 0 entrywise)", j, c)
		}
	}
	return nil
}

// ColumnNorm returns ||c||, the norm of every column of C in an unbounded
// stream (each column holds c_0 .. c_{b-1}): the single-participation
// sensitivity in units of Delta, by which the noise is normalised.
func ColumnNorm(coef []float64) float64 {
	ss := 0.0
	for _, c := range coef {
		ss += c * c
	}
	return math.Sqrt(ss)
}

// Gram returns g(d) = sum_i c_i c_{i+d} for d = 0 .. b-1: the entry
// (C^T C)_{s,t}, |s - t| = d, of the unbounded stream (zero for d >= b).
func Gram(coef []float64) []float64 {
	b := len(coef)
	g := make([]float64, b)
	for d := range b {
		for i := 0; i+d < b; i++ {
			g[d] += coef[i] * coef[i+d]
		}
	}
	return g
}

// maxWork bounds the dynamic programs' work (state transitions).
const maxWork = 1 << 21

// ErrTooLarge is returned when a dynamic program would exceed its work
// bound (many participations with a separation much smaller than the
// bandwidth).
var ErrTooLarge = errors.New("bandmf: sensitivity program too large")

// StreamSensitivitySq returns best[m] = max ||C 1_W||^2 over the sets W of
// m participations, any two at least sep releases apart, for m = 0 .. k,
// in an unbounded stream (every column of C whole: the releases after a
// participation are always made eventually). The stream is
// shift-invariant, so the program runs over the gaps between consecutive
// participations rather than over columns: adding a participation gamma
// >= sep releases after the previous one adds
//
//	g(0) + 2 sum_{earlier p} g(distance to p),
//
// g = Gram(coef) (zero from distance b on), and only the earlier
// participations within b - sep of the latest can still interact with a
// later one: they are the program's state. A gap of b or more decouples
// (state empty). For sep >= b the state is always empty and best[m] = m
// g(0) = m ||c||^2; for sep >= b/2 it holds at most the latest
// participation. It returns ErrTooLarge past about 2^21 transitions.
func StreamSensitivitySq(coef []float64, k, sep int) ([]float64, error) {
	if err := CheckCoefficients(coef); err != nil {
		return nil, err
	}
	if k < 0 || sep < 1 {
		return nil, fmt.Errorf("bandmf: %d participations with separation %d, want k >= 0 and sep >= 1", k, sep)
	}
	b := len(coef)
	g := Gram(coef)
	best := make([]float64, k+1)
	if k == 0 {
		return best, nil
	}
	// A state is the sorted distances from the latest participation back
	// to the earlier ones that can still interact (< b - sep).
	type state struct {
		d []int
		v float64
	}
	keep := b - sep // distances kept: d < keep
	best[1] = g[0]
	if sep >= b {
		// The only transition is a gap of sep >= b: no interaction, the
		// state stays empty.
		for m := 2; m <= k; m++ {
			best[m] = best[m-1] + g[0]
		}
		return best, nil
	}
	cur := map[string]state{"": {nil, g[0]}}
	work := 0
	next := map[string]state{}
	for m := 2; m <= k; m++ {
		clear(next)
		put := func(d []int, v float64) {
			key := stateKey(d)
			if s, ok := next[key]; !ok || v > s.v {
				next[key] = state{d, v}
			}
		}
		work += len(cur) * (max(b-sep, 0) + 1)
		if work > maxWork {
			return nil, fmt.Errorf("%w: %d participations, separation %d, %d bands", ErrTooLarge, k, sep, b)
		}
		for _, s := range cur {
			// A gap of max(sep, b) or more: no interaction.
			put(nil, s.v+g[0])
			for gamma := sep; gamma < b; gamma++ {
				v := s.v + g[0] + 2*g[gamma]
				var nd []int
				if gamma < keep {
					nd = append(nd, gamma)
				}
				for _, d := range s.d {
					if d+gamma < b {
						v += 2 * g[d+gamma]
					}
					if d+gamma < keep {
						nd = append(nd, d+gamma)
					}
				}
				put(nd, v)
			}
		}
		cur, next = next, cur
		for _, s := range cur {
			best[m] = max(best[m], s.v)
		}
	}
	return best, nil
}

// stateKey encodes a sorted list of distances.
func stateKey(d []int) string {
	var sb strings.Builder
	for _, x := range d {
		sb.WriteByte(byte(x))
		sb.WriteByte(byte(x >> 8))
	}
	return sb.String()
}

// SensitivitySq returns best[m] = max ||C_n 1_W||^2 over the sets W of at
// most m participations, any two at least sep apart, among n releases
// (C_n the n x n leading block of C: its last columns are cut short), for
// m = 0 .. k: the exact b-min-sep sensitivity of a run of n releases. The
// program runs over the columns j = 0 .. n-1; its state is the set of
// chosen columns among the last max(b, sep) - 1 (those that can interact
// with column j, or forbid it). It returns ErrTooLarge past about 2^21
// transitions.
func SensitivitySq(coef []float64, n, k, sep int) ([]float64, error) {
	if err := CheckCoefficients(coef); err != nil {
		return nil, err
	}
	if n < 1 || k < 0 || sep < 1 {
		return nil, fmt.Errorf("bandmf: %d releases, %d participations, separation %d: want n >= 1, k >= 0, sep >= 1", n, k, sep)
	}
	b := len(coef)
	// gram(i, j) for j - b < i <= j: sum over the rows r from j to
	// min(n-1, i+b-1) of c_{r-i} c_{r-j}.
	gram := func(i, j int) float64 {
		s := 0.0
		for r := j; r < n && r-i < b; r++ {
			s += coef[r-i] * coef[r-j]
		}
		return s
	}
	window := max(b, sep) - 1 // offsets 1 .. window are remembered
	type state struct {
		off []int // offsets j - (chosen column) in 1 .. window, increasing
		m   int
		v   float64
	}
	key := func(off []int, m int) string { return stateKey(off) + "|" + strconv.Itoa(m) }
	cur := map[string]state{key(nil, 0): {nil, 0, 0}}
	best := make([]float64, k+1)
	work := 0
	for j := range n {
		next := map[string]state{}
		put := func(s state) {
			kk := key(s.off, s.m)
			if o, ok := next[kk]; !ok || s.v > o.v {
				next[kk] = s
			}
		}
		shift := func(off []int) []int {
			var out []int
			for _, o := range off {
				if o+1 <= window {
					out = append(out, o+1)
				}
			}
			return out
		}
		for _, s := range cur {
			// Column j not chosen.
			put(state{shift(s.off), s.m, s.v})
			// Column j chosen: the latest earlier choice is at offset
			// s.off[0] (the smallest), which must be >= sep.
			if s.m < k && (len(s.off) == 0 || s.off[0] >= sep) {
				v := s.v + gram(j, j)
				for _, o := range s.off {
					if o < b {
						v += 2 * gram(j-o, j)
					}
				}
				off := append([]int{0}, s.off...)
				put(state{shift(off), s.m + 1, v})
				best[s.m+1] = max(best[s.m+1], v)
			}
		}
		work += len(cur) * (1 + b)
		if work > maxWork {
			return nil, fmt.Errorf("%w: %d releases, %d participations, separation %d, %d bands", ErrTooLarge, n, k, sep, b)
		}
		cur = next
	}
	// best[m] so far is the best with exactly m; allow at most m.
	for m := 1; m <= k; m++ {
		best[m] = max(best[m], best[m-1])
	}
	return best, nil
}

// Sensitivities returns rho(m) = sqrt(StreamSensitivitySq(coef, k,
// sep)[m]) / ColumnNorm(coef), inflated by Slack, for m = 0 .. k: the L2
// sensitivity of a contributor with at most m participations, any two at
// least sep apart, in units of the single-participation sensitivity the
// noise is normalised to. The contributor gets the Gaussian mechanism of
// multiplier z / rho(m). rho(m) = sqrt(m) (within Slack) when sep >= b.
func Sensitivities(coef []float64, k, sep int) ([]float64, error) {
	best, err := StreamSensitivitySq(coef, k, sep)
	if err != nil {
		return nil, err
	}
	f := ColumnNorm(coef)
	out := make([]float64, len(best))
	for m, v := range best {
		out[m] = math.Sqrt(v) / f * Slack
	}
	return out, nil
}

// MaxStateFloats bounds the values a banded stream keeps (policy/bandmf.Stream;
// the ledger refuses stored state beyond it): 2 (b - 1) vectors of n
// values, 8 bytes each (1 GiB).
const MaxStateFloats = 1 << 27
