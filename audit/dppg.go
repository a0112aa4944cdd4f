package audit

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"dprl/ledger/accountant"
	"dprl/ledger/accountant/bandsens"
	"dprl/policy"
)

// The DPPG audit's public setting: K local updates per release, each a joint
// [policy; value] vector of dppgPolicy + dppgValue parameters, clip S, the
// default policy clip share, and a horizon of dppgHorizon releases for the
// correlated noise shapes.
const (
	dppgK       = 16
	dppgPolicy  = 3
	dppgValue   = 1
	dppgClip    = 1.0
	dppgShare   = 0.8
	dppgHorizon = 8
	// canaryScale is how far past the clip the large canary is.
	canaryScale = 100
)

// aggScenario is the neighbouring pair of the aggregation audits: the K - 1
// background local updates every release holds, and the canaries.
type aggScenario struct {
	background [][]float64
	large, nan []float64
}

// newAggScenario returns the fixed scenario: background updates drawn once
// from a fixed seed, with norms between S/2 and 3 S (so some are clipped)
// around the common direction (1, ..., 1) (so their mean is far from zero in
// units of the noise, which a canary that wipes the sum out exposes); the
// large canary 100 (S_pi e_1 + S_v e_{n_pi+1}), whose block-wise clip has
// the full norm S; and the NaN canary, a local update that is NaN in every
// coordinate (a diverged local step).
func newAggScenario() aggScenario {
	n := dppgPolicy + dppgValue
	rng := rand.New(rand.NewPCG(0x61756469, 0x74))
	var sc aggScenario
	for range dppgK - 1 {
		u := make([]float64, n)
		ss := 0.0
		for i := range u {
			u[i] = 1 + 0.5*rng.NormFloat64()
			ss += u[i] * u[i]
		}
		r := dppgClip * (0.5 + 2.5*rng.Float64()) / math.Sqrt(ss)
		for i := range u {
			u[i] *= r
		}
		sc.background = append(sc.background, u)
	}
	sc.large = make([]float64, n)
	sc.large[0] = canaryScale * dppgClip * math.Sqrt(dppgShare)
	sc.large[dppgPolicy] = canaryScale * dppgClip * math.Sqrt(1-dppgShare)
	sc.nan = make([]float64, n)
	for i := range sc.nan {
		sc.nan[i] = math.NaN()
	}
	return sc
}

// gaussianClaim returns the noise multiplier z of the smallest noise whose
// Gaussian mechanism is (eps, delta)-DP under the exact analytic accountant
// (Balle & Wang 2018, "Improving the Gaussian mechanism for differential
// privacy", Theorem 8), and the guarantee the accountant gives at z, which
// is what the agent prints for one session.
func gaussianClaim(eps, delta float64) (float64, Claim, error) {
	acc := accountant.Analytic{}
	z, err := accountant.Calibrate(acc, eps, delta, 1, 1)
	if err != nil {
		return 0, Claim{}, fmt.Errorf("audit: calibrating z: %w", err)
	}
	g, err := acc.Epsilon(delta, accountant.Gaussian(z))
	if err != nil {
		return 0, Claim{}, fmt.Errorf("audit: %w", err)
	}
	return z, Claim{Epsilon: g.Epsilon, Delta: delta}, nil
}

// dppgBand is the number of bands of the banded audit (and the releases
// it audits: the canary's whole column).
const dppgBand = 4

// DPPG returns the audit of DPPG's server step through the real
// policy.Aggregator with the given noise shape, at the smallest noise
// multiplier z that the analytic accountant prices at (eps, delta): the
// claim is the accountant's epsilon at z, what the agent prints per session,
// and mu = 1 / z, the Gaussian-DP guarantee of one participation that the
// accounting rests on (docs/privacy.md: one release is exactly the Gaussian
// mechanism of multiplier z, whatever the noise's shape).
//
// D holds K - 1 fixed background local updates and the canary, D' the
// background only; both are divided by the fixed K (the canary replaced by
// nothing, which the fixed denominator makes the same as a zero update).
// With independent noise the release is g~ of one Release. With tree, sqrt
// or bandmf noise the canary joins the first of several releases (the
// background joins every one), and the release audited is all of them,
// post-processed into the values whose noise is independent (so that the
// projection test is the optimal one): for the tree (dppgHorizon
// releases), the prefix sums at releases 1, 2, 4, 8 (each a single noisy
// tree node holding the first release); for sqrt (dppgHorizon releases),
// y = C g~, the factorization's noisy releases; for bandmf (dppgBand
// bands, as many releases, each committed as the agent commits it), y =
// C g~ likewise, the rows of the stream that hold the canary's column.
// Canaries: "large update" (norm 100 S) and "NaN update", which Add
// counts as zero. The first len(g~) coordinates are the first release, the
// un-noised value plus the sampler's noise, so the float-lattice test gets
// the exact un-noised values on both sides (from the same Aggregator in
// mode clip-only), and the projection test gets the exact un-noised
// difference (Canary.Shift, likewise).
func DPPG(noise policy.Noise, eps, delta float64) (Target, error) {
	return dppgTarget(noise, eps, delta, FaultNone)
}

// dppgTarget is DPPG with the fault applied to the aggregator's
// configuration (Fault; the claim stays the correct one's).
func dppgTarget(noise policy.Noise, eps, delta float64, fault Fault) (Target, error) {
	ns, cs, err := fault.scales()
	if err != nil {
		return Target{}, err
	}
	z, claim, err := gaussianClaim(eps, delta)
	if err != nil {
		return Target{}, err
	}
	claim.Mu = 1 / z
	cfg := policy.DPConfig{Mode: policy.ModeDP, NoiseMultiplier: z * ns, ClipNorm: dppgClip * cs, UsersPerUpdate: dppgK, PolicyClipShare: dppgShare, Noise: noise}
	releases := 1
	switch noise {
	case policy.NoiseTree, policy.NoiseSqrt:
		cfg.Horizon, releases = dppgHorizon, dppgHorizon
	case policy.NoiseBandedSqrt:
		cfg.Band, releases = dppgBand, dppgBand
	}
	if err := cfg.Validate(); err != nil {
		return Target{}, fmt.Errorf("audit: %w", err)
	}
	clipOnly := cfg
	clipOnly.Mode, clipOnly.NoiseMultiplier = policy.ModeClipOnly, 0
	sc := newAggScenario()
	name := "dppg/" + noise.String()
	switch {
	case noise == policy.NoiseBandedSqrt:
		name = fmt.Sprintf("bandmf (b = %d, %d releases)", dppgBand, releases)
	case releases > 1:
		name += fmt.Sprintf(" (%d releases)", releases)
	}
	t := Target{Name: fault.name(name), Claim: claim}
	canaries := []struct {
		name   string
		update []float64
	}{{"large update", sc.large}, {"NaN update", sc.nan}}
	if fault != FaultNone {
		canaries = canaries[:1] // the faults scale the noise and the clip: the NaN canary does not see them
	}
	for _, cn := range canaries {
		h := newDPPGHarness(sc, cn.update, releases)
		c := Canary{Name: cn.name}
		c.Release = func(in bool, rng *rand.Rand) ([]float64, error) { return h.release(cfg, in, rng) }
		var vs [2][]float64
		for i, in := range []bool{true, false} {
			v, err := h.release(clipOnly, in, nil)
			if err != nil {
				return Target{}, err
			}
			vs[i] = slices.Clone(v)
		}
		c.Shift = shift(vs[0], vs[1])
		lat, err := dppgLattice(cfg, sc, cn.update)
		if err != nil {
			return Target{}, err
		}
		c.Lattice = lat
		t.Canaries = append(t.Canaries, c)
	}
	return t, nil
}

// dppgHarness runs one canary's releases through a fresh Aggregator and
// post-processes them (DPPG); its buffers are reused across calls.
type dppgHarness struct {
	sc       aggScenario
	update   []float64
	releases int
	gs, outv []float64
}

func newDPPGHarness(sc aggScenario, update []float64, releases int) *dppgHarness {
	n := len(sc.large)
	return &dppgHarness{sc: sc, update: update, releases: releases, gs: make([]float64, releases*n), outv: make([]float64, releases*n)}
}

// release runs the releases with cfg (rng nil in mode clip-only) on D (in)
// or D' and returns the post-processed release.
func (h *dppgHarness) release(cfg policy.DPConfig, in bool, rng *rand.Rand) ([]float64, error) {
	n := len(h.sc.large)
	agg, err := policy.NewAggregator(cfg, dppgPolicy, dppgValue, rng)
	if err != nil {
		return nil, err
	}
	gs, outv := h.gs, h.outv
	for r := range h.releases {
		if err := addAll(agg, h.sc.background, h.update, in && r == 0); err != nil {
			return nil, err
		}
		if err := agg.Release(gs[r*n : (r+1)*n]); err != nil {
			return nil, err
		}
		agg.Commit()
	}
	// y_t = sum_k c_k g~_{t-k}: undoes g~ = C^{-1} y (post-processing).
	factor := func(c []float64) []float64 {
		clear(outv)
		for r := range h.releases {
			for k := range min(r+1, len(c)) {
				for i := range n {
					outv[r*n+i] += c[k] * gs[(r-k)*n+i]
				}
			}
		}
		return outv
	}
	switch cfg.Noise {
	case policy.NoiseTree: // prefix sums at 1, 2, 4, ..., H
		clear(outv)
		p := make([]float64, n)
		j := 0
		for r := range h.releases {
			for i := range p {
				p[i] += gs[r*n+i]
			}
			if (r+1)&r == 0 { // r + 1 a power of two
				copy(outv[j*n:(j+1)*n], p)
				j++
			}
		}
		return outv[:j*n], nil
	case policy.NoiseSqrt:
		return factor(sqrtCoefficients(h.releases)), nil
	case policy.NoiseBandedSqrt:
		return factor(bandsens.SqrtCoefficients(cfg.Band)), nil
	}
	return gs, nil
}

// sqrtCoefficients returns c_0 .. c_{n-1} of the square root of the
// prefix-sum matrix, c_k = binom(2k, k) / 4^k (Fichtenberger, Henzinger &
// Upadhyay 2023, "Constant matters: fine-grained error bound on
// differentially private continual observation").
func sqrtCoefficients(n int) []float64 {
	c := make([]float64, n)
	for k := range c {
		c[k] = 1
		if k > 0 {
			c[k] = c[k-1] * float64(2*k-1) / float64(2*k)
		}
	}
	return c
}

// addAll adds the background updates, and the canary if in, to agg; an
// update Add refuses as non-finite is left out, as the agent leaves it out.
func addAll(agg *policy.Aggregator, background [][]float64, canary []float64, in bool) error {
	for _, u := range background {
		if err := agg.Add(u); err != nil {
			return err
		}
	}
	if in {
		if err := agg.Add(canary); err != nil && !errors.Is(err, policy.ErrNonFinite) {
			return err
		}
	}
	return nil
}

// dppgLattice returns the white-box knowledge of the first release for the
// float-lattice test: the un-noised averages on D and D', computed by the
// same aggregator code in mode clip-only, and the noise std of one draw. It
// returns nil when the two are the same (the canary had no effect).
func dppgLattice(cfg policy.DPConfig, sc aggScenario, canary []float64) (*Lattice, error) {
	clipOnly := cfg
	clipOnly.Mode, clipOnly.NoiseMultiplier, clipOnly.Noise, clipOnly.Horizon, clipOnly.Band = policy.ModeClipOnly, 0, policy.NoiseIndependent, 0, 0
	n := dppgPolicy + dppgValue
	l := &Lattice{Out: make([]float64, n), In: make([]float64, n)}
	for _, side := range []struct {
		in  bool
		dst []float64
	}{{false, l.Out}, {true, l.In}} {
		agg, err := policy.NewAggregator(clipOnly, dppgPolicy, dppgValue, nil)
		if err != nil {
			return nil, err
		}
		if err := addAll(agg, sc.background, canary, side.in); err != nil {
			return nil, err
		}
		if err := agg.Release(side.dst); err != nil {
			return nil, err
		}
	}
	noisy, err := policy.NewAggregator(cfg, dppgPolicy, dppgValue, rand.New(rand.NewPCG(0, 0)))
	if err != nil {
		return nil, err
	}
	l.Sigma = noisy.NoiseStd()
	for i := range l.In {
		if l.In[i] != l.Out[i] {
			return l, nil
		}
	}
	return nil, nil
}
