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

// DQNConfig configures DP-SGD DQN (Mnih et al. 2015: replay buffer, target
// network, epsilon-greedy exploration, Huber TD loss). The privacy unit is
// one transition; each step Poisson-samples the buffer with rate q =
// BatchSize/BufferSize and adds N(0, z^2 C^2 I) to the clipped sum, and the
// run is accounted as the composition of Updates subsampled Gaussian
// mechanisms with the PLD accountant (the RDP accountant's figure is kept
// beside it as a cross-check). The argument, and the eviction caveat
// (set BufferSize >= Steps for a guarantee free of it), are in
// docs/privacy.md, section 6.
type DQNConfig struct {
	// Steps is the number of environment steps, >= 1. Default 50000.
	Steps int
	// BufferSize is the replay capacity in transitions, >= BatchSize;
	// min(BufferSize, Steps), the largest possible Poisson minibatch, is at
	// most MaxUsersPerUpdate (2^15). Default 10000.
	BufferSize int
	// BatchSize is the expected minibatch size; q = BatchSize/BufferSize.
	// >= 1. Default 64.
	BatchSize int
	// LearningStarts is how many environment steps are taken before the
	// first update, >= 0. Default 1000.
	LearningStarts int
	// TrainEvery is the number of environment steps per update, >= 1.
	// Default 1.
	TrainEvery int
	// TargetEvery is the number of environment steps between copies of the
	// online parameters into the target network, >= 1. Default 500.
	TargetEvery int
	// Gamma is the discount factor, in [0, 1]. Default 0.99.
	Gamma float64
	// EpsStart and EpsEnd bound the exploration rate, in [0, 1]; it decays
	// linearly from EpsStart to EpsEnd over EpsDecaySteps (>= 1)
	// environment steps. Default 1, 0.05, 10000.
	EpsStart, EpsEnd float64
	EpsDecaySteps    int
	// HuberDelta is the Huber loss threshold, > 0 (the TD error's gradient
	// is clamped to [-HuberDelta, HuberDelta]). Default 1.
	HuberDelta float64
	// Adam configures the optimiser. Default LR 3e-3, betas 0.9, 0.999,
	// eps 1e-8.
	Adam AdamConfig
	// Privacy holds C, z and delta. Default C = 1, z = 1, delta = 1e-5.
	Privacy DPSGDPrivacy
}

// DefaultDQNConfig returns a fresh default configuration.
func DefaultDQNConfig() DQNConfig {
	return DQNConfig{
		Steps: 50000, BufferSize: 10000, BatchSize: 64, LearningStarts: 1000,
		TrainEvery: 1, TargetEvery: 500, Gamma: 0.99,
		EpsStart: 1, EpsEnd: 0.05, EpsDecaySteps: 10000, HuberDelta: 1,
		Adam:    AdamConfig{LR: 3e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8},
		Privacy: DPSGDPrivacy{ClipNorm: 1, NoiseMultiplier: 1, Delta: 1e-5},
	}
}

// Validate reports every invalid field.
func (c DQNConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("policy: dqn: "+format, args...)) }
	if c.Steps < 1 {
		bad("steps %d, must be >= 1", c.Steps)
	}
	if c.BatchSize < 1 {
		bad("batch size %d, must be >= 1", c.BatchSize)
	}
	if c.BufferSize < c.BatchSize || c.BufferSize < 1 {
		bad("buffer size %d, must be >= batch size %d", c.BufferSize, c.BatchSize)
	}
	if n := min(c.BufferSize, c.Steps); n > MaxUsersPerUpdate {
		bad("buffer size %d over %d steps: a Poisson minibatch may hold %d transitions, at most %d (2^15: the exact sampler's floating-point precondition on the clipped sum, docs/privacy.md, section 2)", c.BufferSize, c.Steps, n, MaxUsersPerUpdate)
	}
	if c.LearningStarts < 0 {
		bad("learning starts %d, must be >= 0", c.LearningStarts)
	}
	if c.TrainEvery < 1 {
		bad("train every %d, must be >= 1", c.TrainEvery)
	}
	if c.TargetEvery < 1 {
		bad("target every %d, must be >= 1", c.TargetEvery)
	}
	if !(c.Gamma >= 0 && c.Gamma <= 1) {
		bad("gamma %v, must be in [0, 1]", c.Gamma)
	}
	if !(c.EpsStart >= 0 && c.EpsStart <= 1) || !(c.EpsEnd >= 0 && c.EpsEnd <= 1) {
		bad("exploration %v -> %v, must be in [0, 1]", c.EpsStart, c.EpsEnd)
	}
	if c.EpsDecaySteps < 1 {
		bad("exploration decay steps %d, must be >= 1", c.EpsDecaySteps)
	}
	if !(c.HuberDelta > 0) || math.IsInf(c.HuberDelta, 0) {
		bad("huber delta %v, must be finite and > 0", c.HuberDelta)
	}
	if err := c.Adam.Validate(); err != nil {
		bad("%w", err)
	}
	if err := c.Privacy.Validate(); err != nil {
		bad("%w", err)
	}
	return errors.Join(errs...)
}

// SampleRate returns q = BatchSize / BufferSize.
func (c DQNConfig) SampleRate() float64 { return float64(c.BatchSize) / float64(c.BufferSize) }

// Epsilon returns the per-transition guarantee after updates DP-SGD steps
// (0 for none), by the PLD accountant.
func (c DQNConfig) Epsilon(updates int) (float64, error) {
	return c.epsilon(accountant.PLD{}, updates)
}

// EpsilonRDP returns the same guarantee by the RDP accountant: an upper
// bound too, looser, and about a hundred times cheaper to compute. It is
// the cross-check printed beside Epsilon, and the running figure of the
// progress reports (one per training episode).
func (c DQNConfig) EpsilonRDP(updates int) (float64, error) {
	return c.epsilon(accountant.RDP{}, updates)
}

func (c DQNConfig) epsilon(acc accountant.Accountant, updates int) (float64, error) {
	if updates == 0 {
		return 0, nil
	}
	g, err := acc.Epsilon(c.Privacy.Delta, accountant.Event{Q: c.SampleRate(), Z: c.Privacy.NoiseMultiplier, Steps: updates})
	return g.Epsilon, err
}

// replay is a ring buffer of transitions.
type replay struct {
	d, cap, size, next int
	obs, obs2          []float64
	act                []int
	rew, done          []float64 // done: 1 if terminated (not truncated)
}

func newReplay(d, capacity int) *replay {
	return &replay{d: d, cap: capacity, obs: make([]float64, capacity*d), obs2: make([]float64, capacity*d),
		act: make([]int, capacity), rew: make([]float64, capacity), done: make([]float64, capacity)}
}

func (r *replay) add(obs []float64, a int, rew float64, obs2 []float64, terminated bool) {
	i := r.next
	copy(r.obs[i*r.d:(i+1)*r.d], obs)
	copy(r.obs2[i*r.d:(i+1)*r.d], obs2)
	r.act[i], r.rew[i], r.done[i] = a, rew, 0
	if terminated {
		r.done[i] = 1
	}
	r.next = (r.next + 1) % r.cap
	r.size = min(r.size+1, r.cap)
}

// poissonSample appends to idx the indices of the stored transitions, each
// included independently by noise.Bernoulli(rng, q), in index order: with
// probability floor(q 2^64)/2^64, which is at most q, so the accountant's
// rate q covers the rate used (docs/privacy.md, section 2). It draws one
// word per stored transition (geometric gaps from a float logarithm would
// draw fewer, but their rounding can put the inclusion probability above
// q).
func (r *replay) poissonSample(idx []int, q float64, rng *rand.Rand) []int {
	idx = idx[:0]
	for i := 0; i < r.size; i++ {
		if noise.Bernoulli(rng, q) {
			idx = append(idx, i)
		}
	}
	return idx
}

// dqnUpdater takes DP-SGD steps on the Huber TD loss; its workspaces are
// sized at construction for any plausible Poisson batch, so a step allocates
// nothing.
type dqnUpdater struct {
	gauss                          *noise.Gaussian
	gaussRNG                       *rand.Rand
	cfg                            DQNConfig
	m, tm                          *MLP // online network and a second instance for the target
	clipper                        *GhostClipper
	adam                           *Adam
	grad                           []float64
	idx                            []int
	bObs, bObs2, qOut, qNext, dOut []float64
}

func newDQNUpdater(m *MLP, cfg DQNConfig) (*dqnUpdater, error) {
	tm, err := NewMLP(m.Sizes()...)
	if err != nil {
		return nil, err
	}
	adam, err := NewAdam(m.NumParams(), cfg.Adam)
	if err != nil {
		return nil, err
	}
	// A Poisson batch above 2B + 64 has probability below 1e-9 for any B;
	// larger ones only grow the workspaces once.
	c := 2*cfg.BatchSize + 64
	d, k := m.In(), m.Out()
	u := &dqnUpdater{cfg: cfg, m: m, tm: tm, clipper: NewGhostClipper(m), adam: adam,
		grad: make([]float64, m.NumParams()), idx: make([]int, 0, c),
		bObs: make([]float64, 0, c*d), bObs2: make([]float64, 0, c*d),
		qOut: make([]float64, 0, c*k), qNext: make([]float64, 0, c*k), dOut: make([]float64, 0, c*k)}
	m.Reserve(c)
	tm.Reserve(c)
	u.clipper.grow(c)
	return u, nil
}

// step takes one DP-SGD step on params: a Poisson sample from buf, the
// clipped sum of per-transition Huber TD-loss gradients (targets from the
// target parameters), noise N(0, z^2 C^2 I), division by the expected batch
// size, and an Adam step.
func (u *dqnUpdater) step(params, target []float64, buf *replay, rng *rand.Rand) {
	cfg := u.cfg
	d, k := u.m.In(), u.m.Out()
	u.idx = buf.poissonSample(u.idx, cfg.SampleRate(), rng)
	n := len(u.idx)
	clear(u.grad)
	if n > 0 {
		u.bObs, u.bObs2 = growF(u.bObs, n*d), growF(u.bObs2, n*d)
		u.qOut, u.qNext, u.dOut = growF(u.qOut, n*k), growF(u.qNext, n*k), growF(u.dOut, n*k)
		for j, i := range u.idx {
			copy(u.bObs[j*d:(j+1)*d], buf.obs[i*d:(i+1)*d])
			copy(u.bObs2[j*d:(j+1)*d], buf.obs2[i*d:(i+1)*d])
		}
		u.tm.ForwardBatch(u.qNext, target, u.bObs2, n)
		u.m.ForwardBatch(u.qOut, params, u.bObs, n)
		clear(u.dOut)
		for j, i := range u.idx {
			qn := u.qNext[j*k : (j+1)*k]
			y := buf.rew[i] + cfg.Gamma*(1-buf.done[i])*qn[argmax(qn)]
			td := u.qOut[j*k+buf.act[i]] - y
			u.dOut[j*k+buf.act[i]] = max(-cfg.HuberDelta, min(cfg.HuberDelta, td))
		}
		u.clipper.ClippedSum(u.grad, params, u.dOut, nil, cfg.Privacy.ClipNorm)
	}
	// An empty sample still releases a noise-only step (Poisson DP-SGD).
	addNoiseAndScale(u.grad, cfg.Privacy.NoiseMultiplier*cfg.Privacy.ClipNorm, 1/float64(cfg.BatchSize), samplerFor(&u.gauss, &u.gaussRNG, rng))
	u.adam.Step(params, u.grad)
}

func trainDQN(ctx context.Context, env sims.Env, m *MLP, cfg DQNConfig, rng *rand.Rand, progress func(DPSGDProgress)) (DPSGDResult, error) {
	// Validate the accounting up front so a bad setting fails before training.
	if _, err := cfg.EpsilonRDP(1); err != nil {
		return DPSGDResult{}, err
	}
	upd, err := newDQNUpdater(m, cfg)
	if err != nil {
		return DPSGDResult{}, err
	}
	params := make([]float64, m.NumParams())
	m.Init(params, rng, GainValueOut)
	target := append([]float64(nil), params...)
	d, k := m.In(), m.Out()
	buf := newReplay(d, cfg.BufferSize)
	obs, obs2 := make([]float64, d), make([]float64, d)
	qv := make([]float64, k)
	res := DPSGDResult{
		Delta: cfg.Privacy.Delta, NoiseMultiplier: cfg.Privacy.NoiseMultiplier, ClipNorm: cfg.Privacy.ClipNorm,
		PrivacyUnit: "transition", Accountant: string(accountant.MethodPLD), SampleRate: cfg.SampleRate(),
	}
	env.Reset(rng, obs)
	epRet, recent, recentN := 0.0, 0.0, 0
	for step := 0; step < cfg.Steps; step++ {
		frac := min(1, float64(step)/float64(cfg.EpsDecaySteps))
		explore := cfg.EpsStart + frac*(cfg.EpsEnd-cfg.EpsStart)
		var a int
		if rng.Float64() < explore {
			a = rng.IntN(k)
		} else {
			m.Forward(qv, params, obs)
			a = argmax(qv)
		}
		r, term, trunc := env.Step(sims.Action{Index: a}, obs2)
		buf.add(obs, a, r, obs2, term)
		res.Steps++
		epRet += r
		copy(obs, obs2)
		if term || trunc {
			res.Episodes++
			recent += epRet
			recentN++
			epRet = 0
			env.Reset(rng, obs)
			if err := ctx.Err(); err != nil {
				return DPSGDResult{}, err
			}
			if progress != nil {
				eps, err := cfg.EpsilonRDP(res.Updates)
				if err != nil {
					return DPSGDResult{}, err
				}
				progress(DPSGDProgress{Algo: AlgoDPSGDDQN, Updates: res.Updates, Episodes: res.Episodes, Steps: res.Steps, Return: recent / float64(recentN), Epsilon: eps})
			}
			if recentN >= 10 {
				recent, recentN = 0, 0
			}
		}
		if step+1 >= cfg.LearningStarts && (step+1)%cfg.TrainEvery == 0 {
			upd.step(params, target, buf, rng)
			res.Updates++
		}
		if (step+1)%cfg.TargetEvery == 0 {
			copy(target, params)
		}
	}
	eps, err := cfg.Epsilon(res.Updates)
	if err != nil {
		return DPSGDResult{}, err
	}
	if res.RDPEpsilon, err = cfg.EpsilonRDP(res.Updates); err != nil {
		return DPSGDResult{}, err
	}
	res.Epsilon = eps
	res.Params = params
	return res, nil
}
