package audit

import (
	"fmt"
	"math"
	"math/rand/v2"

	"dprl/noise"
)

// Defect is the one deliberate error of a mutant aggregation step.
//
// The mutants exist only to validate the auditor's power: each is a small
// copy of the aggregation step every Gaussian release in dprl performs (sum
// the per-unit contributions, each clipped to L2 norm S with non-finite
// contributions counted as zero; divide by the fixed denominator K; add
// Gaussian noise of std z S / K with the exact sampler) with exactly one
// defect, the kind of error the real code once had or could regress to. An
// audit that does not flag every mutant lacks the power to vouch for the
// real mechanisms. No production path uses them.
type Defect int

// The defects.
const (
	// DefectNone is the copy without a defect: a control that must not be
	// flagged, so that a flagged mutant is flagged for its defect.
	DefectNone Defect = iota
	// DefectNoNoise releases the clipped average without noise.
	DefectNoNoise
	// DefectNoiseTenth adds a tenth of the calibrated noise.
	DefectNoiseTenth
	// DefectUnclipped does not scale contributions down to S.
	DefectUnclipped
	// DefectNaNPassThrough clips with "if norm > S", which is false for a
	// NaN norm, so a NaN contribution enters the sum (and the exact
	// sampler, which reads a NaN coordinate as 0, releases noise around 0
	// in place of the sum of everyone else).
	DefectNaNPassThrough
	// DefectFloatLattice adds the noise as x + sigma * rand.NormFloat64(),
	// whose floating-point value betrays x (ZigguratLattice).
	DefectFloatLattice
)

// Defects lists every defect, the control first.
var Defects = []Defect{DefectNone, DefectNoNoise, DefectNoiseTenth, DefectUnclipped, DefectNaNPassThrough, DefectFloatLattice}

// String names the defect.
func (d Defect) String() string {
	switch d {
	case DefectNone:
		return "none (control)"
	case DefectNoNoise:
		return "no noise"
	case DefectNoiseTenth:
		return "noise / 10"
	case DefectUnclipped:
		return "unclipped"
	case DefectNaNPassThrough:
		return "NaN pass-through"
	case DefectFloatLattice:
		return "float lattice"
	}
	return fmt.Sprintf("Defect(%d)", int(d))
}

// Mutant returns the audit of the aggregation step with the defect, on the
// same neighbouring inputs as DPPG's independent-noise audit (K - 1
// background contributions; canaries "large update" and "NaN update"),
// claiming what the correct step claims: the analytic accountant's epsilon
// at the noise multiplier z calibrated to (eps, delta), and mu = 1 / z.
func Mutant(d Defect, eps, delta float64) (Target, error) {
	if d < DefectNone || d > DefectFloatLattice {
		return Target{}, fmt.Errorf("audit: unknown defect %d", int(d))
	}
	z, claim, err := gaussianClaim(eps, delta)
	if err != nil {
		return Target{}, err
	}
	claim.Mu = 1 / z
	sc := newAggScenario()
	sigma := z * dppgClip / dppgK
	t := Target{Name: "mutant: " + d.String(), Claim: claim}
	for _, cn := range []struct {
		name   string
		update []float64
	}{{"large update", sc.large}, {"NaN update", sc.nan}} {
		out := make([]float64, len(sc.large))
		c := Canary{Name: cn.name}
		c.Release = func(in bool, rng *rand.Rand) ([]float64, error) {
			mutantStep(d, out, sc.background, cn.update, in, sigma, noise.NewGaussian(rng), rng)
			return out, nil
		}
		l := &Lattice{Sigma: sigma, Out: make([]float64, len(out)), In: make([]float64, len(out))}
		mutantSum(d, l.Out, sc.background, cn.update, false)
		mutantSum(d, l.In, sc.background, cn.update, true)
		for i := range l.In {
			if l.In[i] != l.Out[i] && !math.IsNaN(l.In[i]) && !math.IsNaN(l.Out[i]) {
				c.Lattice = l
				break
			}
		}
		t.Canaries = append(t.Canaries, c)
	}
	return t, nil
}

// mutantStep writes the release of the mutant step into out.
func mutantStep(d Defect, out []float64, background [][]float64, canary []float64, in bool, sigma float64, g *noise.Gaussian, rng *rand.Rand) {
	mutantSum(d, out, background, canary, in)
	switch d {
	case DefectNoNoise:
	case DefectNoiseTenth:
		g.Add(out, sigma/10)
	case DefectFloatLattice:
		for i := range out {
			out[i] += sigma * rng.NormFloat64()
		}
	default:
		g.Add(out, sigma)
	}
}

// mutantSum writes the un-noised part of the mutant step: the sum of the
// clipped contributions divided by K.
func mutantSum(d Defect, out []float64, background [][]float64, canary []float64, in bool) {
	clear(out)
	c := make([]float64, len(out))
	add := func(u []float64) {
		copy(c, u)
		switch d {
		case DefectUnclipped:
			zeroNonFinite(c)
		case DefectNaNPassThrough:
			clipPassingNaN(c, dppgClip)
		default:
			clipMutant(c, dppgClip)
		}
		for i, x := range c {
			out[i] += x
		}
	}
	for _, u := range background {
		add(u)
	}
	if in {
		add(canary)
	}
	for i := range out {
		out[i] /= dppgK
	}
}

// clipMutant is the correct clip of the mutants: a contribution with a
// non-finite entry or norm counts as zero, and one of norm above s is scaled
// to s.
func clipMutant(v []float64, s float64) {
	if zeroNonFinite(v) {
		return
	}
	clipPassingNaN(v, s)
}

// zeroNonFinite sets v to zero and returns true if an entry or the norm is
// not finite.
func zeroNonFinite(v []float64) bool {
	ss := 0.0
	for _, x := range v {
		ss += x * x
	}
	if math.IsNaN(ss) || math.IsInf(ss, 0) {
		clear(v)
		return true
	}
	return false
}

// clipPassingNaN scales v to norm s if its norm exceeds s: a NaN norm fails
// the comparison and passes through (the defect of DefectNaNPassThrough).
func clipPassingNaN(v []float64, s float64) {
	ss := 0.0
	for _, x := range v {
		ss += x * x
	}
	if n := math.Sqrt(ss); n > s {
		for i := range v {
			v[i] *= s / n
		}
	}
}
