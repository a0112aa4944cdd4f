package qlearn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/floats"

	"dprl/internal/vecmath"
	"dprl/noise"
	"dprl/policy"
	"dprl/policy/qnet"
)

// Algo names a learner (qnet.Algo: the snapshot format names it too).
type Algo = qnet.Algo

// The learners.
const (
	// CQL is discrete conservative Q-learning (Kumar et al. 2020, the DQN
	// variant): one Q-network, loss CQLLoss.
	CQL = qnet.CQL
	// BCQ is discrete batch-constrained Q-learning (Fujimoto et al. 2019):
	// a Q-network and an imitation network, targets BCQTargets, loss
	// BCQLoss.
	BCQ = qnet.BCQ
)

// ParseAlgo returns the learner named s ("cql" or "bcq").
func ParseAlgo(s string) (Algo, error) { return qnet.ParseAlgo(s) }

// Config configures a learner. The zero value is not valid: start from
// DefaultConfig.
type Config struct {
	// Algo is the learner.
	Algo Algo `flag:"algo" usage:"learner: cql or bcq"`
	// Hidden are the hidden widths of the Q-network (and of BCQ's
	// imitation network), ReLU. The expert-level paper: 256, 256.
	Hidden []int `flag:"hidden" usage:"hidden widths of the Q-network (and of BCQ's imitation network)"`
	// Gamma is the discount in [0, 1). Default 0.99.
	Gamma float64 `flag:"gamma" usage:"discount"`
	// Adam is the optimiser of every network (the paper's learning rate
	// eta is Adam.LR).
	Adam policy.AdamConfig
	// Batch is the minibatch size b: the rows of a plain step, and the
	// expected size and fixed denominator of a DP step.
	Batch int `flag:"batch" usage:"batch size b: a plain step's rows, a DP step's expected rows and fixed denominator"`
	// Tau is the Polyak rate of the target Q-network in (0, 1]. Default
	// 0.05: with 0.005, CQL on Acrobot's expert log (3,000 experts) had
	// not propagated its -1 rewards after 10,000 steps (return -500, the
	// step limit; -80 with 0.05 after 4,000 steps; CartPole reached 500
	// with either).
	Tau float64
	// Alpha is CQL's regulariser weight (CQL(H)), >= 0. Default 1.
	Alpha float64 `flag:"alpha" usage:"CQL's regulariser weight"`
	// Threshold is BCQ's action filter tau in (0, 1): actions whose
	// imitation probability relative to the most probable one is at most
	// Threshold are not bootstrapped from nor taken. Default 0.3
	// (Fujimoto et al.'s discrete BCQ).
	Threshold float64 `flag:"threshold" usage:"BCQ's action filter tau"`
	// Reg is BCQ's logit regulariser, >= 0. Default 1e-2.
	Reg float64
}

// DefaultConfig returns CQL with 256 x 256 networks, gamma 0.99, Adam at
// 1e-3, batch 128, tau 0.05, alpha 1, BCQ threshold 0.3 and regulariser
// 1e-2.
func DefaultConfig() Config {
	adam := policy.DefaultAdamConfig()
	adam.LR = 1e-3
	adam.Eps = 1e-8
	return Config{Algo: CQL, Hidden: []int{256, 256}, Gamma: 0.99, Adam: adam, Batch: 128,
		Tau: 0.05, Alpha: 1, Threshold: 0.3, Reg: 1e-2}
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	if _, err := ParseAlgo(string(c.Algo)); err != nil {
		errs = append(errs, err)
	}
	if len(c.Hidden) == 0 {
		errs = append(errs, errors.New("qlearn: no hidden layer"))
	}
	for _, h := range c.Hidden {
		if h < 1 || h > qnet.MaxWidth {
			errs = append(errs, fmt.Errorf("qlearn: hidden width %d, want 1..16384", h))
		}
	}
	if !(c.Gamma >= 0 && c.Gamma < 1) {
		errs = append(errs, fmt.Errorf("qlearn: gamma %v, want [0, 1)", c.Gamma))
	}
	if err := c.Adam.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Batch < 1 || c.Batch > 1<<16 {
		errs = append(errs, fmt.Errorf("qlearn: batch %d, want 1..65536", c.Batch))
	}
	if !(c.Tau > 0 && c.Tau <= 1) {
		errs = append(errs, fmt.Errorf("qlearn: tau %v, want (0, 1]", c.Tau))
	}
	if !(c.Alpha >= 0) || math.IsInf(c.Alpha, 0) {
		errs = append(errs, fmt.Errorf("qlearn: alpha %v, want finite and >= 0", c.Alpha))
	}
	if !(c.Threshold > 0 && c.Threshold < 1) {
		errs = append(errs, fmt.Errorf("qlearn: threshold %v, want (0, 1)", c.Threshold))
	}
	if !(c.Reg >= 0) || math.IsInf(c.Reg, 0) {
		errs = append(errs, fmt.Errorf("qlearn: regulariser %v, want finite and >= 0", c.Reg))
	}
	return errors.Join(errs...)
}

// DP is the noise of a DP step: per-unit clipping to Clip, Gaussian noise
// of standard deviation Sigma Clip, each unit sampled with probability
// SampleRate (the accounting's q).
type DP struct {
	Clip, Sigma, SampleRate float64
}

// Validate reports every invalid field.
func (p DP) Validate() error {
	var errs []error
	if !(p.Clip > 0) || math.IsInf(p.Clip, 0) {
		errs = append(errs, fmt.Errorf("qlearn: clip %v, want finite and > 0", p.Clip))
	}
	if !(p.Sigma > 0) || math.IsInf(p.Sigma, 0) {
		errs = append(errs, fmt.Errorf("qlearn: noise multiplier %v, want finite and > 0", p.Sigma))
	}
	if !(p.SampleRate > 0 && p.SampleRate <= 1) {
		errs = append(errs, fmt.Errorf("qlearn: sample rate %v, want (0, 1]", p.SampleRate))
	}
	return errors.Join(errs...)
}

// Learner is a discrete CQL or BCQ learner: its networks, optimiser state
// and workspaces. Steps allocate nothing once the workspaces have grown. A
// Learner is not safe for concurrent use.
type Learner struct {
	cfg        Config
	obsDim, nA int
	q, qt, g   *policy.MLP // online Q, a second instance for target forwards, BCQ imitation
	theta      []float64   // Q parameters
	target     []float64   // target Q parameters
	phi        []float64   // imitation parameters (BCQ)
	adamQ      *policy.Adam
	adamG      *policy.Adam
	clipQ      *policy.GhostClipper
	clipG      *policy.GhostClipper
	gradQ      []float64
	gradG      []float64
	// batch workspaces
	rows                         []int
	units                        []int
	obs, next                    []float64
	batch                        Batch
	qOut, qNext, tNext, gOut     []float64
	gNext, dq, dg, y, actScratch []float64
	joint                        []policy.JointPart
}

// New returns a learner for observations of length obsDim and nA actions,
// its networks initialised from rng (orthogonal, PPO gains).
func New(cfg Config, obsDim, nA int, rng *rand.Rand) (*Learner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if obsDim < 1 || nA < 2 {
		return nil, fmt.Errorf("qlearn: observation length %d and %d actions, want >= 1 and >= 2", obsDim, nA)
	}
	sizes := append(append([]int{obsDim}, cfg.Hidden...), nA)
	l := &Learner{cfg: cfg, obsDim: obsDim, nA: nA}
	var err error
	if l.q, err = policy.NewMLPActivation(policy.ReLU, sizes...); err != nil {
		return nil, err
	}
	if l.qt, err = policy.NewMLPActivation(policy.ReLU, sizes...); err != nil {
		return nil, err
	}
	l.theta = make([]float64, l.q.NumParams())
	l.q.Init(l.theta, rng, policy.GainValueOut)
	l.target = slices.Clone(l.theta)
	l.gradQ = make([]float64, len(l.theta))
	if l.adamQ, err = policy.NewAdam(len(l.theta), cfg.Adam); err != nil {
		return nil, err
	}
	l.clipQ = policy.NewGhostClipper(l.q)
	if cfg.Algo == BCQ {
		if l.g, err = policy.NewMLPActivation(policy.ReLU, sizes...); err != nil {
			return nil, err
		}
		l.phi = make([]float64, l.g.NumParams())
		l.g.Init(l.phi, rng, policy.GainPolicyOut)
		l.gradG = make([]float64, len(l.phi))
		if l.adamG, err = policy.NewAdam(len(l.phi), cfg.Adam); err != nil {
			return nil, err
		}
		l.clipG = policy.NewGhostClipper(l.g)
	}
	c := 2*cfg.Batch + 64
	l.rows, l.units = make([]int, 0, c), make([]int, 0, c)
	l.grow(c)
	return l, nil
}

// Config returns the learner's configuration.
func (l *Learner) Config() Config { return l.cfg }

// grow sizes the batch workspaces for n rows (l.rows and l.units grow by
// append).
func (l *Learner) grow(n int) {
	if len(l.y) >= n {
		return
	}
	d, a := l.obsDim, l.nA
	l.obs, l.next = make([]float64, n*d), make([]float64, n*d)
	l.batch = Batch{Actions: make([]int, n), Rewards: make([]float64, n), Terminal: make([]bool, n)}
	for _, p := range []*[]float64{&l.qOut, &l.qNext, &l.tNext, &l.gOut, &l.gNext, &l.dq, &l.dg} {
		*p = make([]float64, n*a)
	}
	l.y = make([]float64, n)
	l.actScratch = make([]float64, a)
	l.q.Reserve(n)
	l.qt.Reserve(n)
	if l.g != nil {
		l.g.Reserve(n)
	}
}

// gather copies the transitions at l.rows of d into the batch workspaces
// and returns their number.
func (l *Learner) gather(d *Data) int {
	n := len(l.rows)
	dim := l.obsDim
	for j, i := range l.rows {
		copy(l.obs[j*dim:(j+1)*dim], d.Obs[i*dim:(i+1)*dim])
		copy(l.next[j*dim:(j+1)*dim], d.Next[i*dim:(i+1)*dim])
		l.batch.Actions[j] = d.Actions[i]
		l.batch.Rewards[j] = d.Rewards[i]
		l.batch.Terminal[j] = d.Terminal[i]
	}
	return n
}

// gradients runs the forward passes on the gathered n rows and writes the
// loss's gradients with respect to the networks' outputs into l.dq (and
// l.dg), each row scaled by scale (1/n for the mean loss, 1 for per-example
// gradients). It leaves the online networks' caches at the rows' states,
// ready for the backward pass, and returns the mean loss.
func (l *Learner) gradients(n int, scale float64) float64 {
	d, a := l.obsDim, l.nA
	obs, next := l.obs[:n*d], l.next[:n*d]
	b := Batch{Actions: l.batch.Actions[:n], Rewards: l.batch.Rewards[:n], Terminal: l.batch.Terminal[:n]}
	qOut, tNext, dq := l.qOut[:n*a], l.tNext[:n*a], l.dq[:n*a]
	l.qt.ForwardBatch(tNext, l.target, next, n)
	var loss float64
	switch l.cfg.Algo {
	case CQL:
		l.q.ForwardBatch(qOut, l.theta, obs, n)
		loss = CQLLoss(dq, qOut, tNext, a, b, l.cfg.Gamma, l.cfg.Alpha)
		rescale(dq, float64(n)*scale)
	case BCQ:
		qNext, gNext, gOut, dg, y := l.qNext[:n*a], l.gNext[:n*a], l.gOut[:n*a], l.dg[:n*a], l.y[:n]
		l.q.ForwardBatch(qNext, l.theta, next, n)
		l.g.ForwardBatch(gNext, l.phi, next, n)
		BCQTargets(y, qNext, tNext, gNext, a, b, l.cfg.Gamma, l.cfg.Threshold)
		l.q.ForwardBatch(qOut, l.theta, obs, n)
		l.g.ForwardBatch(gOut, l.phi, obs, n)
		loss = BCQLoss(dq, dg, qOut, gOut, y, a, b, l.cfg.Reg)
		rescale(dq, float64(n)*scale)
		rescale(dg, float64(n)*scale)
	}
	return loss
}

func rescale(v []float64, f float64) {
	if f == 1 {
		return
	}
	for i := range v {
		v[i] *= f
	}
}

// Step takes one plain (non-private) step on d: Batch rows drawn uniformly
// with replacement, the mean loss's gradient, an Adam step and a Polyak
// update of the target. It returns the batch's mean loss (a statistic of
// d: not private) and does nothing on an empty d.
func (l *Learner) Step(d *Data, rng *rand.Rand) float64 {
	l.checkData(d)
	if d.Len() == 0 {
		return 0
	}
	n := l.cfg.Batch
	l.rows = l.rows[:0]
	for range n {
		l.rows = append(l.rows, rng.IntN(d.Len()))
	}
	l.gather(d)
	loss := l.gradients(n, 1/float64(n))
	l.q.Backward(l.gradQ, l.theta, l.dq[:n*l.nA])
	l.adamQ.Step(l.theta, l.gradQ)
	if l.g != nil {
		l.g.Backward(l.gradG, l.phi, l.dg[:n*l.nA])
		l.adamG.Step(l.phi, l.gradG)
	}
	l.polyak()
	return loss
}

// DPStep takes one expert-level DP-SGD step on d (Sharma et al.,
// "Preserving Expert-Level Privacy in Offline RL", Algorithm 4): each unit
// of d is sampled independently with probability p.SampleRate
// (noise.Bernoulli, at most the rate), one transition drawn uniformly from
// each sampled unit (a unit without transitions contributes nothing), each
// transition's gradient (all networks jointly) clipped to p.Clip, the sum
// noised with N(0, p.Sigma^2 p.Clip^2 I) (exact sampler g) and divided by
// the fixed denominator Batch, then an Adam step and a Polyak update.
//
// Sensitivity: adding or removing one unit changes the sum by one clipped
// gradient, of norm at most Clip, whatever the unit's data (a non-finite
// one is zero), so each step is the Poisson-subsampled Gaussian mechanism
// with rate SampleRate and multiplier Sigma at the unit. An empty sample
// still takes a noise-only step.
func (l *Learner) DPStep(d *Data, p DP, rng *rand.Rand, g *noise.Gaussian) {
	l.checkData(d)
	l.units = SampleUnits(l.units, d.Units(), p.SampleRate, rng)
	l.grow(len(l.units))
	l.rows = l.rows[:0]
	for _, u := range l.units {
		if lo, hi := d.Start[u], d.Start[u+1]; hi > lo {
			l.rows = append(l.rows, lo+rng.IntN(hi-lo))
		}
	}
	n := l.gather(d)
	clear(l.gradQ)
	clear(l.gradG)
	if n > 0 {
		l.gradients(n, 1)
		a := l.nA
		if l.g == nil {
			l.clipQ.ClippedSum(l.gradQ, l.theta, l.dq[:n*a], nil, p.Clip)
		} else {
			l.joint = append(l.joint[:0],
				policy.JointPart{Clipper: l.clipQ, Grad: l.gradQ, Params: l.theta, DOut: l.dq[:n*a]},
				policy.JointPart{Clipper: l.clipG, Grad: l.gradG, Params: l.phi, DOut: l.dg[:n*a]})
			policy.JointClippedSum(l.joint, nil, p.Clip)
		}
	}
	sd, inv := p.Sigma*p.Clip, 1/float64(l.cfg.Batch)
	// One Gaussian mechanism on the concatenated gradient [Q | G]: noise
	// on every coordinate, then the scaling (post-processing).
	g.Add(l.gradQ, sd)
	rescale(l.gradQ, inv)
	l.adamQ.Step(l.theta, l.gradQ)
	if l.g != nil {
		g.Add(l.gradG, sd)
		rescale(l.gradG, inv)
		l.adamG.Step(l.phi, l.gradG)
	}
	l.polyak()
}

// SampleUnits appends to dst[:0] the units 0..n-1 each included
// independently with probability q (Poisson sampling; noise.Bernoulli, so
// with probability at most q, as the accounting assumes) and returns it.
func SampleUnits(dst []int, n int, q float64, rng *rand.Rand) []int {
	dst = dst[:0]
	for u := range n {
		if noise.Bernoulli(rng, q) {
			dst = append(dst, u)
		}
	}
	return dst
}

// checkData panics on a dataset of other dimensions (a programming error:
// callers build both from the same log).
func (l *Learner) checkData(d *Data) {
	if d.ObsDim != l.obsDim || d.NumActions != l.nA {
		panic(fmt.Sprintf("qlearn: data of %d x %d actions for a learner of %d x %d", d.ObsDim, d.NumActions, l.obsDim, l.nA))
	}
}

// polyak moves the target towards the online Q-network.
func (l *Learner) polyak() {
	vecmath.Polyak(l.target, l.theta, l.cfg.Tau)
}

// Act returns the learner's greedy action at obs: argmax_a Q(obs, a) for
// CQL; for BCQ the argmax over the actions the imitation network allows
// (probability ratio to the most probable action above Threshold;
// qnet.FilteredArgmax). It allocates nothing.
func (l *Learner) Act(obs []float64) int {
	q := l.qOut[:l.nA]
	l.q.Forward(q, l.theta, obs)
	if l.g == nil {
		return floats.MaxIdx(q)
	}
	g := l.actScratch
	l.g.Forward(g, l.phi, obs)
	return qnet.FilteredArgmax(q, g, l.cfg.Threshold)
}
