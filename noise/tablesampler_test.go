package noise

import (
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// longTests runs the long versions of the exactness tests
// (DPRL_NOISE_LONG=1).
func longTests() bool { return os.Getenv("DPRL_NOISE_LONG") != "" }

func newTableNormal(rng *rand.Rand) *normal {
	n := &normal{}
	n.s.rng, n.b.rng = rng, rng
	return n
}

// pickBin returns the bin of a fresh U (nBins for the tail), as
// sampleTableFrom does.
func (n *normal) pickBin() uint {
	P := n.s.take(uBits)
	e := guide[P>>(uBits-guideBits)]
	j := uint(e & 0xffff)
	if j != uint(e>>16) || n.forceRefine {
		j = n.searchBin(P, uBits, e)
	}
	return j
}

// sampleBin draws |N| given that it lies in bin j < nBins, as
// sampleTableFrom does (with all of x's digit 0).
func (n *normal) sampleBin(j uint) {
	n.k = uint64(j >> binBits)
	n.x.reset()
	n.x.n, n.x.w[0] = 1, uint64(j&(1<<binBits-1))<<(64-binBits)|n.s.take(64-binBits)
	c := n.s.take(8)
	if c >= uint64(squeeze8[subBin(j, n.x.w[0])]) || n.forceExact {
		n.sampleBinSlow(j, c)
	}
}

// absValue returns |N| of the sample in n to 64 fractional bits (the
// midpoint of its first digit).
func (n *normal) absValue(rng *rand.Rand) float64 {
	return float64(n.k) + (float64(n.x.digit(0, rng))+0.5)*0x1p-64
}

// ksHalfNormal returns the Kolmogorov-Smirnov distance of the sorted sample
// ys from the law of |N| given |N| >= from.
func ksHalfNormal(ys []float64, from float64) float64 {
	slices.Sort(ys)
	n := float64(len(ys))
	tail := math.Erfc(from / math.Sqrt2)
	d := 0.0
	for i, y := range ys {
		c := 1 - math.Erfc(y/math.Sqrt2)/tail
		d = max(d, math.Abs(c-float64(i)/n), math.Abs(c-float64(i+1)/n))
	}
	return d
}

func TestBitStream(t *testing.T) {
	ref := testRNG(40)
	s := bitStream{rng: testRNG(40)}
	rng := testRNG(41)
	var want, got []byte // bit strings
	for range 2000 {
		w := uint(1 + rng.IntN(64))
		v := s.take(w)
		for i := int(w) - 1; i >= 0; i-- {
			got = append(got, byte(v>>uint(i)&1))
		}
	}
	for len(want) < len(got) {
		x := ref.Uint64()
		for i := 63; i >= 0; i-- {
			want = append(want, byte(x>>uint(i)&1))
		}
	}
	if !slices.Equal(got, want[:len(got)]) {
		t.Fatal("bitStream does not hand out the generator's bits in order")
	}
}

// TestTableKS checks the table sampler's |N| against the half-normal law
// (Kolmogorov-Smirnov), its bins against the exact bin probabilities
// (chi-square) and its sign.
func TestTableKS(t *testing.T) {
	n := 1_000_000
	if longTests() {
		n = 20_000_000
	}
	rng := testRNG(42)
	nm := newTableNormal(rng)
	ys := make([]float64, n)
	counts := make([]float64, nBins+1)
	neg := 0
	for i := range ys {
		nm.sampleTable()
		ys[i] = nm.absValue(rng)
		j := int(ys[i] * (1 << binBits))
		counts[min(j, nBins)]++
		if nm.negate {
			neg++
		}
	}
	// the bins: p_j = C_{j+1} - C_j from the stored thresholds (to 2^-64)
	c := func(j int) float64 {
		if j > nBins {
			return 1
		}
		return float64(thresholds[j].loHi) * 0x1p-64
	}
	chi2, cells := 0.0, 0
	var o, e float64
	for j := 0; j <= nBins; j++ {
		o += counts[j]
		e += (c(j+1) - c(j)) * float64(n)
		if e >= 20 || j == nBins {
			chi2 += (o - e) * (o - e) / e
			cells++
			o, e = 0, 0
		}
	}
	if df := float64(cells - 1); chi2 > df+5*math.Sqrt(2*df) {
		t.Errorf("bins: chi2 %.1f with %d cells", chi2, cells)
	}
	if d, crit := ksHalfNormal(ys, 0), 1.95/math.Sqrt(float64(n)); d > crit {
		t.Errorf("KS distance %.6f > %.6f", d, crit)
	}
	if f := float64(neg) / float64(n); math.Abs(f-0.5) > 5*0.5/math.Sqrt(float64(n)) {
		t.Errorf("negative fraction %.5f", f)
	}
}

// TestTableTail checks the tail sampler against the law of |N| given |N| >=
// tailK.
func TestTableTail(t *testing.T) {
	const n = 20_000
	rng := testRNG(43)
	nm := newTableNormal(rng)
	ys := make([]float64, n)
	for i := range ys {
		nm.sampleTail()
		if nm.k < tailK {
			t.Fatalf("tail sample with k = %d", nm.k)
		}
		ys[i] = nm.absValue(rng)
	}
	if d, crit := ksHalfNormal(ys, tailK), 1.95/math.Sqrt(n); d > crit {
		t.Errorf("tail KS distance %.5f > %.5f", d, crit)
	}
}

// TestTableAgainstKarney rounds samples of both samplers at a coarse scale
// (as Gaussian.round does) and compares the counts (two-sample chi-square).
func TestTableAgainstKarney(t *testing.T) {
	const n = 300_000
	M := uint64(17<<scaleBits) / 10
	f := uint64(3<<inputBits) / 10
	ga, gb := NewGaussianReference(testRNG(44)), NewGaussian(testRNG(45))
	ca, cb := map[int64]float64{}, map[int64]float64{}
	for range n {
		ga.n.sample(ga.rng)
		ca[ga.round(M, f)]++
		gb.n.sampleTable()
		cb[gb.round(M, f)]++
	}
	chi2, cells := 0.0, 0
	var a, b float64
	for v := int64(-12); v <= 12; v++ {
		a += ca[v]
		b += cb[v]
		if a+b >= 40 || v == 12 {
			chi2 += (a - b) * (a - b) / (a + b)
			cells++
			a, b = 0, 0
		}
	}
	if df := float64(cells - 1); chi2 > df+5*math.Sqrt(2*df) {
		t.Errorf("table vs Karney: chi2 %.1f with %d cells", chi2, cells)
	}
}

// probBelowHi returns C_j to 512 bits (an interval narrower than 2^-500).
func probBelowHi(j uint) ival {
	return certProbBelow(dyadic(int64(j), -binBits), certSqrt2OverPi(512), 512)
}

// TestTableRefine forces the refinement: U's first 128 bits are set to
// floor(C_j 2^128), inside the stored enclosure, so only refine can decide.
// Every decision must hold for every value of U's undrawn digits (checked
// at 512 bits), and U >= C_j must come with probability 1 - frac(C_j 2^128).
func TestTableRefine(t *testing.T) {
	for _, j := range []uint{1, 200, nBins} {
		c := probBelowHi(j)
		scaled := new(big.Float).SetMantExp(c.lo, 128)
		hi, lo := toFixed128(c.lo, false)
		fr := new(big.Float).Sub(scaled, new(big.Float).SetInt(new(big.Int).Or(new(big.Int).Lsh(new(big.Int).SetUint64(hi), 64), new(big.Int).SetUint64(lo))))
		frac, _ := fr.Float64()
		th := thresholds[j]
		if (hi < th.loHi || hi == th.loHi && lo < th.loLo) || (hi > th.hiHi || hi == th.hiHi && lo >= th.hiLo) {
			t.Fatalf("j %d: crafted U is outside the stored enclosure", j)
		}
		rng := testRNG(uint64(46 + j))
		nm := newTableNormal(rng)
		const trials = 100
		ge := 0
		for range trials {
			nm.ub.reset()
			nm.ub.w[0], nm.ub.w[1], nm.ub.n = hi, lo, 2
			r := nm.geqSlow(j)
			if r {
				ge++
			}
			v, v1 := nm.ub.prefix(nm.ub.n, rng)
			if r && v.Cmp(c.hi) < 0 || !r && v1.Cmp(c.lo) > 0 {
				t.Fatalf("j %d: refine decided %v with U in [%s, %s), C = %s", j, r, v.Text('g', 50), v1.Text('g', 50), c.lo.Text('g', 50))
			}
		}
		want := 1 - frac
		if sd := math.Sqrt(want * (1 - want) / trials); math.Abs(float64(ge)/trials-want) > 4*sd+1e-9 {
			t.Errorf("j %d: U >= C_j in %d of %d, want %.3f", j, ge, trials, want)
		}
	}
}

// TestTableRefineAgrees picks bins with every comparison decided by refine
// and checks that it gives the same bin as the fast path on the same U.
func TestTableRefineAgrees(t *testing.T) {
	trials := 40
	if longTests() {
		trials = 1000
	}
	for s := range trials {
		a := newTableNormal(testRNG(uint64(1000 + s)))
		b := newTableNormal(testRNG(uint64(1000 + s)))
		b.forceRefine = true
		if ja, jb := a.pickBin(), b.pickBin(); ja != jb {
			t.Fatalf("seed %d: fast bin %d, refined bin %d", s, ja, jb)
		}
	}
}

// TestAcceptFloat checks the float64 acceptance test at the boundary: with
// U' within a few units of 2^-64 of exp(-t(Y)) it must not decide, and 2^-38
// away it must decide correctly.
func TestAcceptFloat(t *testing.T) {
	rng := testRNG(47)
	for range 2000 {
		j := uint(rng.IntN(nBins))
		d0 := uint64(j&(1<<binBits-1))<<(64-binBits) | rng.Uint64()>>binBits
		// exp(-t) at Y = (d0 mod 2^58) 2^-64, to 200 bits
		k := int64(j >> binBits)
		x := new(big.Float).SetPrec(80).SetUint64(d0)
		x.SetMantExp(x, -64)
		z := new(big.Float).SetPrec(200).Add(x, new(big.Float).SetInt64(k))
		tt := new(big.Float).SetPrec(400).Mul(z, z)
		tt.Sub(tt, dyadic(int64(j*j), -2*binBits))
		tt.SetMantExp(tt, -1)
		e := certExpNeg(tt, 200)
		es := new(big.Float).SetMantExp(e.lo, 64)
		eu, _ := es.Uint64()
		for _, d := range []int64{-3, -1, 0, 1, 3} {
			if r := acceptFloat(j, d0, eu+uint64(d)); r != 0 {
				t.Fatalf("j %d d0 %#x: decided %d at U' = exp(-t) %+d 2^-64", j, d0, r, d)
			}
		}
		if r := acceptFloat(j, d0, eu-1<<26); r != 1 {
			t.Fatalf("j %d d0 %#x: %d below exp(-t) - 2^-38", j, d0, r)
		}
		if r := acceptFloat(j, d0, eu+1<<26); r != -1 {
			t.Fatalf("j %d d0 %#x: %d above exp(-t) + 2^-38", j, d0, r)
		}
	}
}

// TestAcceptExact forces every acceptance through the exact big.Float test
// and checks the law of |N| (KS) and that decisions agree with the float
// path where it decides.
func TestAcceptExact(t *testing.T) {
	n := 2500
	if longTests() {
		n = 100_000
	}
	rng := testRNG(48)
	nm := newTableNormal(rng)
	nm.forceExact = true
	ys := make([]float64, n)
	for i := range ys {
		nm.sampleTable()
		ys[i] = nm.absValue(rng)
	}
	if d, crit := ksHalfNormal(ys, 0), 1.95/math.Sqrt(float64(n)); d > crit {
		t.Errorf("forced exact acceptance: KS distance %.5f > %.5f", d, crit)
	}
	// Same U', same y: the exact test must agree with every decision of
	// the float test.
	for range 1000 {
		j := uint(rng.IntN(nBins))
		d0 := uint64(j&(1<<binBits-1))<<(64-binBits) | rng.Uint64()>>binBits
		u := rng.Uint64() | 0xff00000000000000 // the squeeze does not decide
		u = u>>2 | 0xe000000000000000          // near the acceptance probabilities
		nm.x.reset()
		nm.x.w[0], nm.x.n = d0, 1
		if r := acceptFloat(j, d0, u); r != 0 {
			if ex := nm.acceptExact(j, u); ex != (r > 0) {
				t.Fatalf("j %d d0 %#x u %#x: float %d, exact %v", j, d0, u, r, ex)
			}
		}
	}
}

// TestTableWithinBin checks the rejection step: within bin j the position
// y = |N| - a must follow the density proportional to exp(-(a+y)^2/2) on
// [0, h), a = j h (KS against its exact CDF). Uniform y (no rejection) is
// 0.0078 away from it at j = 255, which n = 200,000 detects.
func TestTableWithinBin(t *testing.T) {
	const n = 200_000
	const h = 1.0 / (1 << binBits)
	for _, j := range []uint{0, 100, 255, 511} {
		rng := testRNG(uint64(50 + j))
		nm := newTableNormal(rng)
		a := float64(j) * h
		ys := make([]float64, n)
		for i := range ys {
			nm.sampleBin(j)
			ys[i] = nm.absValue(rng) - a
		}
		slices.Sort(ys)
		ea := math.Erfc(a / math.Sqrt2)
		mass := ea - math.Erfc((a+h)/math.Sqrt2)
		d := 0.0
		for i, y := range ys {
			c := (ea - math.Erfc((a+y)/math.Sqrt2)) / mass
			d = max(d, math.Abs(c-float64(i)/n), math.Abs(c-float64(i+1)/n))
		}
		if crit := 1.95 / math.Sqrt(n); d > crit {
			t.Errorf("bin %d: KS distance %.5f > %.5f", j, d, crit)
		}
	}
}
