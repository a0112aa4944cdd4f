package noise_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"dprl/audit"
	"dprl/noise"
)

func testRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6e6f6973)) }

// guess returns true for "b = v + delta": which candidate input the output
// o fits on the ziggurat lattice (audit.ZigguratLattice), a coin when both or
// neither fit.
func guess(d *audit.ZigguratLattice, o, v, delta, sigma float64, rng *rand.Rand) bool {
	a, b := d.Fits(o, v, sigma), d.Fits(o, v+delta, sigma)
	if a != b {
		return b
	}
	return rng.IntN(2) == 1
}

// accuracy runs n trials: a fair coin picks v or v + delta, mech releases it,
// and the distinguisher guesses.
func accuracy(n int, v, delta, sigma float64, mech func(x float64) float64, rng *rand.Rand) float64 {
	d := audit.NewZigguratLattice()
	right := 0
	for range n {
		shifted := rng.IntN(2) == 1
		x := v
		if shifted {
			x += delta
		}
		if guess(d, mech(x), v, delta, sigma, rng) == shifted {
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

	g := noise.NewGaussian(testRNG(12))
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
	gamma := noise.Grid(sigma)
	rng := testRNG(13)
	g := noise.NewGaussian(testRNG(14))
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
