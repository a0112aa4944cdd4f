package policy

import (
	"dprl/noise"

	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"dprl/ledger/accountant"
	"dprl/sims"
)

// ReinforceConfig configures DP-SGD REINFORCE (Williams 1992). The privacy
// unit is one episode: each episode enters one update, its gradient
// (returns-to-go normalised within the episode) clipped to C, the sum noised
// with N(0, z^2 C^2 I), so an episode is protected by one Gaussian mechanism
// of multiplier z (docs/privacy.md, section 6).
type ReinforceConfig struct {
	// Updates is the number of DP-SGD steps, >= 1. Default 300.
	Updates int
	// EpisodesPerUpdate is the batch size B (episodes per step), 1 to
	// MaxUsersPerUpdate (2^15).
	// Default 32.
	EpisodesPerUpdate int
	// Gamma is the discount factor, in (0, 1]. Default 0.99.
	Gamma float64
	// Adam configures the optimiser. Default LR 1e-2, betas 0.9, 0.999,
	// eps 1e-8.
	Adam AdamConfig
	// Privacy holds C, z and delta. Default C = 1, z = 1, delta = 1e-5.
	Privacy DPSGDPrivacy
}

// DefaultReinforceConfig returns a fresh default configuration.
func DefaultReinforceConfig() ReinforceConfig {
	return ReinforceConfig{
		Updates:           300,
		EpisodesPerUpdate: 32,
		Gamma:             0.99,
		Adam:              AdamConfig{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8},
		Privacy:           DPSGDPrivacy{ClipNorm: 1, NoiseMultiplier: 1, Delta: 1e-5},
	}
}

// Validate reports every invalid field.
func (c ReinforceConfig) Validate() error {
	var errs []error
	if c.Updates < 1 {
		errs = append(errs, fmt.Errorf("policy: reinforce: updates %d, must be >= 1", c.Updates))
	}
	if c.EpisodesPerUpdate < 1 || c.EpisodesPerUpdate > MaxUsersPerUpdate {
		errs = append(errs, fmt.Errorf("policy: reinforce: episodes per update %d, must be 1 to %d (2^15: the exact sampler's floating-point precondition on the clipped sum, docs/privacy.md, section 2)", c.EpisodesPerUpdate, MaxUsersPerUpdate))
	}
	if !(c.Gamma > 0 && c.Gamma <= 1) {
		errs = append(errs, fmt.Errorf("policy: reinforce: gamma %v, must be in (0, 1]", c.Gamma))
	}
	if err := c.Adam.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("policy: reinforce: %w", err))
	}
	if err := c.Privacy.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("policy: reinforce: %w", err))
	}
	return errors.Join(errs...)
}

// reinforceEpsilon is the per-episode guarantee: one Gaussian mechanism.
func reinforceEpsilon(p DPSGDPrivacy) (float64, error) {
	g, err := accountant.Analytic{}.Epsilon(p.Delta, accountant.Gaussian(p.NoiseMultiplier))
	return g.Epsilon, err
}

// reinforceBatch holds one update's episodes, grown as needed and reused.
type reinforceBatch struct {
	obs    []float64 // rows x obsDim
	act    []int
	rew    []float64
	ret    []float64 // normalised returns-to-go
	bounds []int     // episode row offsets
	logits []float64
	dOut   []float64
}

func trainReinforce(ctx context.Context, env sims.Env, m *MLP, cfg ReinforceConfig, rng *rand.Rand, progress func(DPSGDProgress)) (DPSGDResult, error) {
	eps, err := reinforceEpsilon(cfg.Privacy)
	if err != nil {
		return DPSGDResult{}, err
	}
	params := make([]float64, m.NumParams())
	m.Init(params, rng, GainPolicyOut)
	adam, err := NewAdam(m.NumParams(), cfg.Adam)
	if err != nil {
		return DPSGDResult{}, err
	}
	clipper := NewGhostClipper(m)
	gauss := noise.NewGaussian(rng)
	grad := make([]float64, m.NumParams())
	head := Categorical{N: m.Out()}
	d, k := m.In(), m.Out()
	obs := make([]float64, d)
	logits := make([]float64, k)
	var b reinforceBatch
	res := DPSGDResult{
		Delta: cfg.Privacy.Delta, NoiseMultiplier: cfg.Privacy.NoiseMultiplier, ClipNorm: cfg.Privacy.ClipNorm,
		PrivacyUnit: "episode", Accountant: string(accountant.Analytic{}.Method()), SampleRate: 1,
	}
	B := cfg.EpisodesPerUpdate
	for u := 0; u < cfg.Updates; u++ {
		if err := ctx.Err(); err != nil {
			return DPSGDResult{}, err
		}
		// Roll out B fresh episodes with the current (released) policy.
		b.obs, b.act, b.rew = b.obs[:0], b.act[:0], b.rew[:0]
		b.bounds = append(b.bounds[:0], 0)
		totalRet := 0.0
		for e := 0; e < B; e++ {
			env.Reset(rng, obs)
			for {
				b.obs = append(b.obs, obs...)
				m.Forward(logits, params, obs)
				a := head.Sample(rng, logits)
				r, term, trunc := env.Step(sims.Action{Index: a}, obs)
				b.act = append(b.act, a)
				b.rew = append(b.rew, r)
				totalRet += r
				res.Steps++
				if term || trunc {
					break
				}
			}
			b.bounds = append(b.bounds, len(b.act))
		}
		res.Episodes += B
		n := len(b.act)
		b.ret = growF(b.ret, n)
		for e := 0; e < B; e++ {
			normalisedReturns(b.ret[b.bounds[e]:b.bounds[e+1]], b.rew[b.bounds[e]:b.bounds[e+1]], cfg.Gamma)
		}
		// Per-episode loss gradient with respect to the logits.
		b.logits, b.dOut = growF(b.logits, n*k), growF(b.dOut, n*k)
		m.ForwardBatch(b.logits, params, b.obs, n)
		clear(b.dOut)
		for i := 0; i < n; i++ {
			head.AddGrad(b.dOut[i*k:(i+1)*k], b.logits[i*k:(i+1)*k], b.act[i], -b.ret[i], 0)
		}
		clipper.ClippedSum(grad, params, b.dOut, b.bounds, cfg.Privacy.ClipNorm)
		addNoiseAndScale(grad, cfg.Privacy.NoiseMultiplier*cfg.Privacy.ClipNorm, 1/float64(B), gauss)
		adam.Step(params, grad)
		res.Updates++
		if progress != nil {
			progress(DPSGDProgress{Algo: AlgoDPSGDReinforce, Updates: res.Updates, Episodes: res.Episodes, Steps: res.Steps, Return: totalRet / float64(B), Epsilon: eps})
		}
	}
	res.Epsilon = eps
	res.Params = params
	return res, nil
}

// normalisedReturns writes into dst the discounted returns-to-go of rew,
// G_t = sum_{s>=t} gamma^{s-t} r_s, standardised to mean 0 and standard
// deviation 1 within the episode (left centred only when the deviation is
// below 1e-8).
func normalisedReturns(dst, rew []float64, gamma float64) {
	g := 0.0
	for t := len(rew) - 1; t >= 0; t-- {
		g = rew[t] + gamma*g
		dst[t] = g
	}
	mean := 0.0
	for _, v := range dst {
		mean += v
	}
	mean /= float64(len(dst))
	sd := 0.0
	for _, v := range dst {
		sd += (v - mean) * (v - mean)
	}
	sd = math.Sqrt(sd / float64(len(dst)))
	if sd < 1e-8 {
		sd = 1
	}
	for t, v := range dst {
		dst[t] = (v - mean) / sd
	}
}

// growF returns s resliced to n, reallocating only when its capacity is short.
func growF(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n, 2*n)
	}
	return s[:n]
}
