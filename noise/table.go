package noise

// The table sampler: an exact sampler of the standard normal distribution
// that returns N = ±(k + x) in the representation of Karney's sampler
// (karney.go), so that Gaussian.round consumes it unchanged, at a few
// nanoseconds per sample. It is exact: its output has the law of a standard
// normal variable, and the undrawn digits of x are uniform given everything
// drawn (docs/privacy.md, section 2).
//
//  1. |N| is split into the bins [j h, (j+1) h), h = 2^-binBits, j < nBins,
//     covering [0, tailK), and the tail [tailK, inf). The bin is chosen with
//     a uniform U in [0, 1): bin j if C_j <= U < C_{j+1}, C_j = P(|N| < j h)
//     (C_0 = 0, C_{nBins+1} = 1), so bin j has probability P(j h <= |N| <
//     (j+1) h) and the tail P(|N| >= tailK). The thresholds are stored as
//     certified 128-bit intervals [L_j, H_j] 2^-128 that contain C_j
//     (normtable.go; certified.go computes them; a guide table indexed by
//     U's first guideBits bits names the bins U can fall in). U's bits are
//     drawn only as a comparison needs them, and a comparison is decided
//     only when the drawn bits of U put it on one side of the whole
//     interval; when they do not (U within 2^-128 of a threshold), C_j is
//     recomputed at higher precision and more digits of U are drawn until
//     they do (refine).
//  2. Within bin j, with a = j h: y uniform in [0, h) and U' uniform in
//     [0, 1); y is accepted if U' < exp(-(2 a y + y^2)/2), else both are
//     drawn again in the same bin. Conditional on the bin, this is rejection
//     sampling from the uniform proposal with acceptance probability
//     proportional to the target density exp(-(a+y)^2/2) / exp(-a^2/2), so
//     the accepted a + y has the law of |N| given the bin; the bin's own
//     probability is not changed by the rejections, which stay within it.
//     The comparison is decided by a certified lower bound of the
//     acceptance probability over a sub-bin (squeeze), else by float64 with
//     a proven error margin, else exactly in big.Float with more digits of
//     both y and U'.
//  3. The tail: sampleTail, Karney's construction conditioned on |N| >=
//     tailK.
//  4. k = floor(a + y) = j >> binBits (h divides 1, so a bin never straddles
//     an integer) and x = frac(a) + y: digit 0 of x has frac(a) 2^binBits in
//     its top binBits bits and y's first bits below; its later digits are
//     y's later bits, drawn as Gaussian.round needs them.
//  5. The sign is a fresh bit.
//
// Why the undrawn digits of x are uniform given the drawn ones: every
// decision above (accept or reject, and which way a comparison goes) is made
// at a moment when the digits drawn so far determine it for every value of
// the undrawn ones. The set of (y, U') on which the sampler accepts with a
// given drawn prefix is then the product of a prefix cell of y and one of
// U', so given the prefix and the acceptance the undrawn digits of y are
// still uniform and independent (the argument of Karney 2016, "Sampling
// exactly from the normal distribution", for its Algorithm N). Marginally,
// the accepted y has density proportional to exp(-(a+y)^2/2): both hold.

const (
	// binBits: the bins have width 2^-binBits.
	binBits = 6
	// tailK: the bins cover [0, tailK); |N| >= tailK is the tail.
	tailK = 8
	// nBins is the number of bins; bin index nBins stands for the tail.
	nBins = tailK << binBits
	// guideBits: the guide table maps the first guideBits bits of U to the
	// range of bins U can fall in.
	guideBits = 12
	// subBits: the squeeze bounds the acceptance probability over each of
	// 2^subBits sub-bins of a bin.
	subBits = 2
	// tableBits is the precision at which normtable.go was computed.
	tableBits = 192
)

// threshold is a certified enclosure of C_j = P(|N| < j h): the 128-bit
// integers L = (loHi, loLo) and H = (hiHi, hiLo) satisfy L 2^-128 <= C_j <=
// H 2^-128.
type threshold struct{ loHi, loLo, hiHi, hiLo uint64 }

// guide[i] holds the smallest and largest bin (low and high 16 bits) that a
// U in [i, i+1) 2^-guideBits can fall in: the largest j with H_j <=
// i 2^-guideBits (then C_j <= U) and the smallest j with L_{j+1} >= (i+1)
// 2^-guideBits (then U < C_{j+1}). It is computed once from thresholds and
// never written after.
var guide = buildGuide(&thresholds)

func buildGuide(th *[nBins + 1]threshold) *[1 << guideBits]uint32 {
	var g [1 << guideBits]uint32
	const sh = 64 - guideBits
	lo, hi := 0, 0
	for i := range g {
		start := uint64(i) << sh // i 2^-guideBits in units of 2^-64 (high word)
		// H_j <= start 2^64: hiHi < start, or hiHi == start and hiLo == 0.
		for lo < nBins && (th[lo+1].hiHi < start || th[lo+1].hiHi == start && th[lo+1].hiLo == 0) {
			lo++
		}
		// L_{hi+1} >= (i+1) 2^-guideBits, with L_{nBins+1} = 2^128.
		hi = max(hi, lo)
		for hi < nBins && (i+1 == len(g) || th[hi+1].loHi < uint64(i+1)<<sh) {
			hi++
		}
		g[i] = uint32(lo) | uint32(hi)<<16
	}
	return &g
}
