package sac

import (
	"fmt"
	"math"
	"math/rand/v2"

	"dprl/internal/vecmath"
	"dprl/policy"
)

// log(2) and 0.5 log(2 pi).
const (
	ln2         = math.Ln2
	halfLog2Pi  = 0.91893853320467274178032973640561763986139747363778
	logStdRange = LogStdMax - LogStdMin
)

// Agent is one SAC learner: the actor, twin critics and their targets, the
// temperature, their optimisers and the update's workspaces. It is not
// safe for concurrent use.
type Agent struct {
	cfg            Config
	obsDim, actDim int
	scale, bias    []float64 // env action = scale tanh(u) + bias
	targetEntropy  float64

	actor     *policy.MLP
	actorP    []float64
	actorAdam *policy.Adam
	q         [2]*policy.MLP
	qP, qT    [2][]float64
	qAdam     [2]*policy.Adam
	logAlpha  []float64 // one value, a slice for policy.Adam
	gAlpha    []float64 // its gradient
	alphaAdam *policy.Adam

	// Workspaces, sized for cfg.Batch at construction.
	aOut, aD            []float64 // actor outputs and their gradient (B x 2A)
	qIn, dx             []float64 // critic inputs (B x (S+A)) and input gradient
	qOut, qOut2, dq     []float64 // critic outputs (B) and output gradient
	y, logp             []float64 // targets, log-probabilities (B)
	eps, act            []float64 // noise and squashed actions (B x A)
	gA, gQ0, gQ1, aGrad []float64
	minIdx              []uint8
	rows                []int     // the rows whose minimum is the critic at hand
	one                 []float64 // single-observation actor output (2A)

	stats UpdateStats
}

// UpdateStats describes the last Update: simulation diagnostics of the
// learner's own minibatch (SAC is not a private mechanism).
type UpdateStats struct {
	QLoss, ActorLoss, Alpha, Entropy, QMean float64
}

// New returns an agent for observations of dimension obsDim and actions in
// the box [low, high] (every bound finite, low < high), initialised from
// rng.
func New(cfg Config, obsDim int, low, high []float64, rng *rand.Rand) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if obsDim < 1 || len(low) < 1 || len(low) != len(high) {
		return nil, fmt.Errorf("sac: observation dimension %d, action bounds %d and %d: want >= 1 and equal lengths", obsDim, len(low), len(high))
	}
	A := len(low)
	a := &Agent{cfg: cfg, obsDim: obsDim, actDim: A, scale: make([]float64, A), bias: make([]float64, A)}
	for j := range low {
		if math.IsInf(low[j], 0) || math.IsInf(high[j], 0) || !(low[j] < high[j]) {
			return nil, fmt.Errorf("sac: action bound %d is [%v, %v], want finite with low < high", j, low[j], high[j])
		}
		a.scale[j], a.bias[j] = (high[j]-low[j])/2, (high[j]+low[j])/2
	}
	a.targetEntropy = cfg.TargetEntropy
	if math.IsNaN(a.targetEntropy) {
		a.targetEntropy = -float64(A)
	}
	var err error
	sizes := func(in, out int) []int { return append(append([]int{in}, cfg.Hidden...), out) }
	if a.actor, err = policy.NewMLPActivation(policy.ReLU, sizes(obsDim, 2*A)...); err != nil {
		return nil, err
	}
	a.actorP = make([]float64, a.actor.NumParams())
	a.actor.Init(a.actorP, rng, 0.01)
	adam := func(n int, lr float64) *policy.Adam {
		if err != nil {
			return nil
		}
		var o *policy.Adam
		o, err = policy.NewAdam(n, policy.AdamConfig{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
		return o
	}
	a.actorAdam = adam(len(a.actorP), cfg.ActorLR)
	for i := range a.q {
		var m *policy.MLP
		if m, err = policy.NewMLPActivation(policy.ReLU, sizes(obsDim+A, 1)...); err != nil {
			return nil, err
		}
		a.q[i] = m
		a.qP[i] = make([]float64, m.NumParams())
		m.Init(a.qP[i], rng, 1)
		a.qT[i] = append([]float64(nil), a.qP[i]...)
		a.qAdam[i] = adam(m.NumParams(), cfg.CriticLR)
	}
	a.logAlpha, a.gAlpha = []float64{math.Log(cfg.InitAlpha)}, make([]float64, 1)
	a.alphaAdam = adam(1, cfg.AlphaLR)
	if err != nil {
		return nil, err
	}
	B := cfg.Batch
	a.actor.Reserve(B)
	for _, m := range a.q {
		m.Reserve(B)
	}
	a.aOut, a.aD = make([]float64, B*2*A), make([]float64, B*2*A)
	a.qIn, a.dx = make([]float64, B*(obsDim+A)), make([]float64, B*(obsDim+A))
	a.qOut, a.qOut2, a.dq = make([]float64, B), make([]float64, B), make([]float64, B)
	a.y, a.logp = make([]float64, B), make([]float64, B)
	a.eps, a.act = make([]float64, B*A), make([]float64, B*A)
	a.gA = make([]float64, B*A)
	a.gQ0, a.gQ1 = make([]float64, len(a.qP[0])), make([]float64, len(a.qP[1]))
	a.aGrad = make([]float64, len(a.actorP))
	a.minIdx = make([]uint8, B)
	a.rows = make([]int, 0, B)
	a.one = make([]float64, 2*A)
	return a, nil
}

// ObsDim and ActDim return the dimensions the agent was built for.
func (a *Agent) ObsDim() int { return a.obsDim }

// ActDim returns the action dimension.
func (a *Agent) ActDim() int { return a.actDim }

// LogScale returns sum_j log Scale_j: the log-density of an action in the
// box is Act's log-probability (of tanh(u)) less this.
func (a *Agent) LogScale() float64 {
	var s float64
	for _, v := range a.scale {
		s += math.Log(v)
	}
	return s
}

// Alpha returns the current temperature.
func (a *Agent) Alpha() float64 { return math.Exp(a.logAlpha[0]) }

// ActorParams returns the actor's parameters (the agent's; read only): an
// MLP of ActorSizes whose outputs are the mean and the unsquashed log
// standard deviation of u, the action being Scale tanh(u) + Bias.
func (a *Agent) ActorParams() []float64 { return a.actorP }

// ActorSizes returns the actor MLP's layer widths.
func (a *Agent) ActorSizes() []int { return a.actor.Sizes() }

// Stats returns the statistics of the last Update.
func (a *Agent) Stats() UpdateStats { return a.stats }

// logStd squashes the actor's raw output into [LogStdMin, LogStdMax].
func logStd(raw float64) float64 { return LogStdMin + 0.5*logStdRange*(math.Tanh(raw)+1) }

// softplus is log(1 + e^x), stable for large |x|.
func softplus(x float64) float64 {
	if x > 30 {
		return x
	}
	return math.Log1p(math.Exp(x))
}

// Act writes a sampled action for obs into dst (len ActDim, the
// environment's scale) and returns its log-probability under the policy.
// It allocates nothing.
func (a *Agent) Act(dst []float64, rng *rand.Rand, obs []float64) float64 {
	a.actor.Forward(a.one, a.actorP, obs)
	A := a.actDim
	var logp float64
	for j := range A {
		ls := logStd(a.one[A+j])
		e := rng.NormFloat64()
		u := a.one[j] + math.Exp(ls)*e
		t := math.Tanh(u)
		dst[j] = a.scale[j]*t + a.bias[j]
		logp += -0.5*e*e - ls - halfLog2Pi - 2*(ln2-u-softplus(-2*u))
	}
	return logp
}

// ActDeterministic writes the policy's mean action, Scale tanh(mu) + Bias,
// for obs into dst (evaluation). It allocates nothing.
func (a *Agent) ActDeterministic(dst, obs []float64) {
	a.actor.Forward(a.one, a.actorP, obs)
	for j := range a.actDim {
		dst[j] = a.scale[j]*math.Tanh(a.one[j]) + a.bias[j]
	}
}

// Batch is a minibatch of transitions, row-major: S and S2 B x ObsDim, A
// B x ActDim (the environment's scale), R and Terminated (1 or 0) B.
type Batch struct {
	S, A, R, S2, Terminated []float64
}

// sample draws the squashed policy action for the B states whose actor
// outputs are in a.aOut, filling a.eps, a.act (tanh(u)), a.logp and the
// action columns of a.qIn (the environment's scale).
func (a *Agent) sample(rng *rand.Rand, B int) {
	A, od := a.actDim, a.obsDim
	w := od + A
	for b := range B {
		out := a.aOut[b*2*A : (b+1)*2*A]
		var lp float64
		for j := range A {
			ls := logStd(out[A+j])
			e := rng.NormFloat64()
			u := out[j] + math.Exp(ls)*e
			t := math.Tanh(u)
			a.eps[b*A+j], a.act[b*A+j] = e, t
			a.qIn[b*w+od+j] = a.scale[j]*t + a.bias[j]
			lp += -0.5*e*e - ls - halfLog2Pi - 2*(ln2-u-softplus(-2*u))
		}
		a.logp[b] = lp
	}
}

// setStates copies B states into the observation columns of a.qIn.
func (a *Agent) setStates(s []float64, B int) {
	od, w := a.obsDim, a.obsDim+a.actDim
	for b := range B {
		copy(a.qIn[b*w:b*w+od], s[b*od:(b+1)*od])
	}
}

// Update applies one SAC update (the package documentation's losses) on the
// minibatch, drawing the policy's noise from rng. Non-finite inputs are the
// caller's to refuse; the update allocates nothing.
func (a *Agent) Update(batch Batch, rng *rand.Rand) {
	B, A, od := a.cfg.Batch, a.actDim, a.obsDim
	w := od + A
	if len(batch.S) != B*od || len(batch.S2) != B*od || len(batch.A) != B*A || len(batch.R) != B || len(batch.Terminated) != B {
		panic(fmt.Sprintf("sac: batch S %d A %d R %d S2 %d T %d, want B = %d rows", len(batch.S), len(batch.A), len(batch.R), len(batch.S2), len(batch.Terminated), B))
	}
	alpha := math.Exp(a.logAlpha[0])
	invB := 1 / float64(B)

	// Targets: y = r + gamma (1 - d) (min_i Q'_i(s', a') - alpha log pi(a'|s')).
	a.actor.ForwardBatch(a.aOut, a.actorP, batch.S2, B)
	a.setStates(batch.S2, B)
	a.sample(rng, B)
	a.q[0].ForwardBatch(a.qOut, a.qT[0], a.qIn, B)
	a.q[1].ForwardBatch(a.qOut2, a.qT[1], a.qIn, B)
	for b := range B {
		v := min(a.qOut[b], a.qOut2[b]) - alpha*a.logp[b]
		a.y[b] = batch.R[b] + a.cfg.Gamma*(1-batch.Terminated[b])*v
	}

	// Critics: L_Q = sum_i mean (Q_i(s, a) - y)^2.
	for b := range B {
		copy(a.qIn[b*w:b*w+od], batch.S[b*od:(b+1)*od])
		copy(a.qIn[b*w+od:(b+1)*w], batch.A[b*A:(b+1)*A])
	}
	var qLoss, qMean float64
	for i, g := range [2][]float64{a.gQ0, a.gQ1} {
		a.q[i].ForwardBatch(a.qOut, a.qP[i], a.qIn, B)
		for b, v := range a.qOut {
			e := v - a.y[b]
			qLoss += e * e * invB
			qMean += v * invB / 2
			a.dq[b] = 2 * e * invB
		}
		a.q[i].Backward(g, a.qP[i], a.dq)
		a.qAdam[i].Step(a.qP[i], g)
	}

	// Actor: L_pi = mean (alpha log pi(a~|s) - min_i Q_i(s, a~)).
	actorLoss, meanLogp := a.actorLossGrad(batch.S, alpha, rng)
	a.actorAdam.Step(a.actorP, a.aGrad)

	// Temperature: d/d log alpha of -alpha (log pi + H) is -alpha (log pi + H).
	a.gAlpha[0] = -alpha * (meanLogp + a.targetEntropy)
	a.alphaAdam.Step(a.logAlpha, a.gAlpha)

	// Targets: theta' <- tau theta + (1 - tau) theta'.
	tau := a.cfg.Tau
	for i := range a.qT {
		vecmath.Polyak(a.qT[i], a.qP[i], tau)
	}
	a.stats = UpdateStats{QLoss: qLoss, ActorLoss: actorLoss, Alpha: alpha, Entropy: -meanLogp, QMean: qMean}
}

// actorLossGrad computes the actor's loss L_pi on the states s (B rows) at
// temperature alpha, drawing the reparameterisation noise from rng, writes
// its gradient with respect to the actor's parameters into a.aGrad, and
// returns the loss and the mean log-probability of the sampled actions.
func (a *Agent) actorLossGrad(s []float64, alpha float64, rng *rand.Rand) (actorLoss, meanLogp float64) {
	B, A, od := a.cfg.Batch, a.actDim, a.obsDim
	w := od + A
	invB := 1 / float64(B)
	a.actor.ForwardBatch(a.aOut, a.actorP, s, B)
	a.setStates(s, B)
	a.sample(rng, B)
	a.q[0].ForwardBatch(a.qOut, a.qP[0], a.qIn, B)
	a.q[1].ForwardBatch(a.qOut2, a.qP[1], a.qIn, B)
	for b := range B {
		m := a.qOut[b]
		a.minIdx[b] = 0
		if a.qOut2[b] < m {
			m, a.minIdx[b] = a.qOut2[b], 1
		}
		actorLoss += (alpha*a.logp[b] - m) * invB
		meanLogp += a.logp[b] * invB
	}
	// Each row's gradient flows through the critic that is its minimum:
	// critic i runs its backward pass on its own rows alone (KeepRows; the
	// other rows' gradients through it are zero), half the work of a pass
	// over every row with zeros, and the same bits.
	clear(a.gA)
	for i := range a.q {
		rows := a.rows[:0]
		for b := range B {
			if int(a.minIdx[b]) == i {
				rows = append(rows, b)
			}
		}
		if len(rows) == 0 {
			continue
		}
		a.q[i].KeepRows(rows)
		dq, dx := a.dq[:len(rows)], a.dx[:len(rows)*w]
		for k := range dq {
			dq[k] = -invB // d(-min Q)/dQ_i, averaged
		}
		a.q[i].BackwardInput(nil, dx, a.qP[i], dq)
		for k, b := range rows {
			for j := range A {
				a.gA[b*A+j] += dx[k*w+od+j] * a.scale[j] // dL/d tanh(u)
			}
		}
	}
	for b := range B {
		out := a.aOut[b*2*A : (b+1)*2*A]
		d := a.aD[b*2*A : (b+1)*2*A]
		for j := range A {
			t, e := a.act[b*A+j], a.eps[b*A+j]
			th := math.Tanh(out[A+j])
			sigma := math.Exp(LogStdMin + 0.5*logStdRange*(th+1))
			gu := a.gA[b*A+j] * (1 - t*t) // through tanh
			// d log pi / d mu = 2 tanh(u); d log pi / d logstd = -1 + 2 tanh(u) sigma eps
			dMu := alpha*invB*2*t + gu
			dLs := alpha*invB*(-1+2*t*sigma*e) + gu*sigma*e
			d[j] = dMu
			d[A+j] = dLs * 0.5 * logStdRange * (1 - th*th)
		}
	}
	a.actor.Backward(a.aGrad, a.actorP, a.aD)
	return actorLoss, meanLogp
}
