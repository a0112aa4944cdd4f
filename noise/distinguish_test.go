package noise

import (
	"math"
	"math/rand/v2"
	"testing"
)

// zigguratWidths returns the 128 float32 strip widths of Go's ziggurat normal
// sampler (math/rand/v2 NormFloat64 returns float64(j) * float64(w[i]) for an
// int32 j in more than 99% of draws), recomputed with Marsaglia & Tsang's
// recurrence ("The Ziggurat Method for Generating Random Variables", 2000),
// which reproduces Go's table bit for bit.
func zigguratWidths() [128]float32 {
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

// latticeDistinguisher guesses whether o = b + sigma N came from b = v or
// b = v + delta by asking which candidate noise (o - b)/sigma is a ziggurat
// lattice point float64(j) w[i], up to the rounding of the arithmetic; when
// both or neither fit it guesses at random.
type latticeDistinguisher struct {
	wn  [128]float32
	rng *rand.Rand
}

func ulp(x float64) float64 { return math.Nextafter(math.Abs(x), math.Inf(1)) - math.Abs(x) }

func (d *latticeDistinguisher) fits(o, b, sigma float64) bool {
	r := (o - b) / sigma
	slack := (ulp(o) + ulp(o-b)) / sigma
	for _, w := range d.wn {
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

// guess returns true for "b = v + delta".
func (d *latticeDistinguisher) guess(o, v, delta, sigma float64) bool {
	a, b := d.fits(o, v, sigma), d.fits(o, v+delta, sigma)
	if a != b {
		return b
	}
	return d.rng.IntN(2) == 1
}

// accuracy runs n trials: a fair coin picks v or v + delta, mech releases it,
// and the distinguisher guesses.
func accuracy(n int, v, delta, sigma float64, mech func(x float64) float64, rng *rand.Rand) float64 {
	d := &latticeDistinguisher{wn: zigguratWidths(), rng: rng}
	right := 0
	for range n {
		shifted := rng.IntN(2) == 1
		x := v
		if shifted {
			x += delta
		}
		if d.guess(mech(x), v, delta, sigma) == shifted {
			right++
		}
	}
	return float64(right) / float64(n)
}

// TestFloatLatticeDistinguisher is the attack on floating-point Gaussian
// noise: against x + sigma*NormFloat64() it tells neighbouring inputs at
// distance sigma apart almost always, far beyond what any (epsilon, delta)
// worth printing allows for a single coordinate at z = 1 (the optimal test
// of the real Gaussian mechanism is right with probability
// Phi(1/2) = 0.69); against Add it does no better than a coin.
func TestFloatLatticeDistinguisher(t *testing.T) {
	const n, sigma, v = 20_000, 1.0, 0.3
	rng := testRNG(11)

	float := accuracy(n, v, sigma, sigma, func(x float64) float64 {
		return x + sigma*rng.NormFloat64()
	}, rng)
	if float < 0.99 {
		t.Fatalf("the distinguisher is right %.4f of the time against float noise; the attack should succeed (>= 0.99)", float)
	}

	g := NewGaussian(testRNG(12))
	buf := make([]float64, 1)
	exact := accuracy(n, v, sigma, sigma, func(x float64) float64 {
		buf[0] = x
		g.Add(buf, sigma)
		return buf[0]
	}, rng)
	// A coin is within 0.5 +- 0.0106 (3 sd) for n = 20,000.
	if math.Abs(exact-0.5) > 0.0106 {
		t.Fatalf("the distinguisher is right %.4f of the time against Add (a coin: 0.5)", exact)
	}
	t.Logf("lattice distinguisher accuracy: float noise %.4f, exact sampler %.4f (n = %d, delta = sigma)", float, exact, n)
}

// TestGridDistinguisher: Add's outputs lie on a grid fixed by sigma, so a
// distinguisher that asks which candidate lies on a grid shifted by the
// input learns nothing whether or not the inputs are on the grid.
func TestGridDistinguisher(t *testing.T) {
	const n, sigma = 20_000, 1.0
	gamma := Grid(sigma)
	rng := testRNG(13)
	g := NewGaussian(testRNG(14))
	buf := make([]float64, 1)
	for _, v := range []float64{0.3, 0.25, 1 + gamma/3} {
		right := 0
		for range n {
			shifted := rng.IntN(2) == 1
			x := v
			if shifted {
				x += sigma
			}
			buf[0] = x
			g.Add(buf, sigma)
			onV := math.Mod(buf[0]-v, gamma) == 0
			onW := math.Mod(buf[0]-v-sigma, gamma) == 0
			guess := rng.IntN(2) == 1
			if onV != onW {
				guess = onW
			}
			if guess == shifted {
				right++
			}
		}
		if acc := float64(right) / n; math.Abs(acc-0.5) > 0.0106 {
			t.Errorf("v = %v: grid distinguisher right %.4f of the time", v, acc)
		}
	}
}
