package policy

import (
	"math"
	"testing"
)

func TestCategoricalGradFiniteDifference(t *testing.T) {
	rng := testRNG(t)
	c := Categorical{N: 4}
	logits := randSlice(rng, 4, 1.5)
	for a := 0; a < 4; a++ {
		g := make([]float64, 4)
		c.AddGrad(g, logits, a, 1, 0)
		fdCheck(t, "categorical logp", func(z []float64) float64 { return c.LogProb(z, a) }, logits, g, 1e-6)
	}
	g := make([]float64, 4)
	c.AddGrad(g, logits, 0, 0, 1)
	fdCheck(t, "categorical entropy", c.Entropy, logits, g, 1e-6)
	// Combined weights are the weighted sum.
	g = make([]float64, 4)
	c.AddGrad(g, logits, 2, -0.7, 0.3)
	f := func(z []float64) float64 { return -0.7*c.LogProb(z, 2) + 0.3*c.Entropy(z) }
	fdCheck(t, "categorical combined", f, logits, g, 1e-6)
}

func TestCategoricalValues(t *testing.T) {
	c := Categorical{N: 3}
	z := []float64{0, 0, 0}
	if got, want := c.Entropy(z), math.Log(3); math.Abs(got-want) > 1e-15 {
		t.Errorf("uniform entropy %v, want %v", got, want)
	}
	if got, want := c.LogProb([]float64{1000, 0, 0}, 0), 0.0; math.Abs(got-want) > 1e-12 {
		t.Errorf("stable logprob %v, want %v", got, want)
	}
}

func TestCategoricalSample(t *testing.T) {
	rng := testRNG(t)
	c := Categorical{N: 3}
	logits := []float64{math.Log(0.2), math.Log(0.5), math.Log(0.3)}
	var counts [3]int
	const n = 200000
	for range n {
		counts[c.Sample(rng, logits)]++
	}
	for j, p := range []float64{0.2, 0.5, 0.3} {
		got := float64(counts[j]) / n
		if sd := math.Sqrt(p * (1 - p) / n); math.Abs(got-p) > 5*sd {
			t.Errorf("action %d frequency %v, want %v", j, got, p)
		}
	}
}

func TestGaussianGradFiniteDifference(t *testing.T) {
	rng := testRNG(t)
	g := DiagGaussian{Dim: 3}
	mean := randSlice(rng, 3, 1)
	logStd := randSlice(rng, 3, 0.3)
	a := randSlice(rng, 3, 1)
	dm, ds := make([]float64, 3), make([]float64, 3)
	g.AddGrad(dm, ds, mean, logStd, a, 1, 0)
	fdCheck(t, "gaussian logp/mean", func(m []float64) float64 { return g.LogProb(m, logStd, a) }, mean, dm, 1e-6)
	fdCheck(t, "gaussian logp/logstd", func(s []float64) float64 { return g.LogProb(mean, s, a) }, logStd, ds, 1e-6)
	dm, ds = make([]float64, 3), make([]float64, 3)
	g.AddGrad(dm, ds, mean, logStd, a, 0, 1)
	fdCheck(t, "gaussian entropy/logstd", g.Entropy, logStd, ds, 1e-6)
	for _, v := range dm {
		if v != 0 {
			t.Fatalf("entropy gradient with respect to the mean %v, want 0", dm)
		}
	}
}

func TestGaussianValues(t *testing.T) {
	g := DiagGaussian{Dim: 1}
	// Standard normal at 0: log(1/sqrt(2 pi)); entropy 0.5 log(2 pi e).
	if got, want := g.LogProb([]float64{0}, []float64{0}, []float64{0}), -0.5*math.Log(2*math.Pi); math.Abs(got-want) > 1e-15 {
		t.Errorf("logprob %v, want %v", got, want)
	}
	if got, want := g.Entropy([]float64{0}), 0.5*math.Log(2*math.Pi*math.E); math.Abs(got-want) > 1e-15 {
		t.Errorf("entropy %v, want %v", got, want)
	}
	rng := testRNG(t)
	x := make([]float64, 1)
	const n = 100000
	var s, s2 float64
	for range n {
		g.Sample(x, rng, []float64{2}, []float64{math.Log(3)})
		s += x[0]
		s2 += x[0] * x[0]
	}
	m := s / n
	sd := math.Sqrt(s2/n - m*m)
	if math.Abs(m-2) > 5*3/math.Sqrt(n) || math.Abs(sd-3) > 0.05 {
		t.Errorf("sample mean %v sd %v, want 2 and 3", m, sd)
	}
}
