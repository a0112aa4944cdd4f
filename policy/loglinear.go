package policy

import (
	"dprl/noise"

	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// TabularMDP is a finite-horizon MDP given by its tables, as RiverSwim
// exposes them.
type TabularMDP interface {
	NumStates() int
	NumActions() int
	Horizon() int
	// Start is the initial state.
	Start() int
	// Transition is the next-state distribution of (s, a).
	Transition(s, a int) []float64
	// Reward is the reward of taking a in s (before the transition).
	Reward(s, a int) float64
}

// TrustRegion selects how log-linear DPPG sets the clipping norm S of each
// update (Rio et al., Section 4.2).
type TrustRegion int

// The trust regions.
const (
	// RegionL2 uses Proposition 4.4: S = (1/(eta z)) sqrt(2 alpha /
	// q_{1-beta}), q the (1-beta)-quantile of the noncentral chi-square with
	// d degrees of freedom and noncentrality z^-2.
	RegionL2 TrustRegion = iota
	// RegionL2Markov uses Proposition 4.5: S = (1/eta) sqrt(2 alpha beta /
	// (1 + z^2 d)).
	RegionL2Markov
	// RegionKL uses Proposition 4.7: S = (1/eta) sqrt(2 alpha beta /
	// (max eig(F) + z^2 tr(F))), F the Fisher matrix estimated on public
	// episodes simulated with the current policy.
	RegionKL
)

// String names the region.
func (r TrustRegion) String() string {
	switch r {
	case RegionL2:
		return "l2"
	case RegionL2Markov:
		return "l2-markov"
	case RegionKL:
		return "kl"
	}
	return fmt.Sprintf("TrustRegion(%d)", int(r))
}

// LogLinearConfig configures log-linear DPPG. DefaultLogLinearConfig
// returns the paper's Table 2 values.
type LogLinearConfig struct {
	// Gamma discounts returns in the policy gradient. Table 2: 0.99.
	Gamma float64
	// LR0 is the initial policy learning rate eta_0. Table 2: 12.
	LR0 float64
	// LREvery, LRFactor and LRMin: every LREvery episodes eta /= LRFactor,
	// never below LRMin. Table 2: 50, 5, 0.06.
	LREvery  int
	LRFactor float64
	LRMin    float64
	// Alpha is the trust region size. Table 2: 3.5.
	Alpha float64
	// Confidence is 1 - beta. Table 2: 0.6.
	Confidence float64
	// Region picks the clipping rule.
	Region TrustRegion
	// FisherEpisodes and FisherRidge: public episodes per Fisher estimate
	// and the ridge added to it (KL only). Table 2: 25, 1e-3.
	FisherEpisodes int
	FisherRidge    float64
	// FisherExact replaces the Monte Carlo estimate on FisherEpisodes
	// public episodes by its expectation under the public model: the
	// state-visit distribution of the current policy propagated through the
	// transition tables (the limit of infinitely many public episodes). S
	// depends only on the released policy and the public model either way,
	// so the privacy guarantee is the same; the exact form removes the
	// estimate's sampling noise from S and costs O(H S A^2) per update
	// instead of FisherEpisodes x H sampled steps. Not in the paper.
	FisherExact bool
	// ClipAtLR0 computes the trust-region clipping norm with the initial
	// learning rate eta_0 instead of the current eta. The bounds of
	// Propositions 4.4-4.7 are upper bounds on S that grow as 1/eta, so S
	// computed at eta_0 satisfies them at every later eta <= eta_0. With S
	// recomputed at the current eta (false) the noise step eta z S stays
	// constant while eta decays, and only the signal eta clip(g, S)
	// shrinks; at eta_0 both shrink with eta.
	ClipAtLR0 bool
	// Z is the noise multiplier of each block (policy and baseline), > 0.
	Z float64
	// BaselineLR and BaselineClip are the linear baseline's learning rate
	// and clipping norm; its update is clipped and noised with Z too, so the
	// baseline, which feeds every later update, is private as well.
	BaselineLR   float64
	BaselineClip float64
	// UsersPerUpdate K >= 1 is the number of episodes (users) per update,
	// with Algorithm 2's fixed denominator: theta <- theta + (eta / K)
	// (sum_k clip(g_k, S) + N(0, z^2 S^2 I)), and the baseline likewise.
	// App. C.2.2 uses K = 1 (the default). Each episode enters exactly one
	// update, and the sum's sensitivity to it is S, so the privacy of an
	// episode does not depend on K; the noise on the mean gradient is z S /
	// K, so the trust-region bounds take z / K in place of z (ClipNorm).
	// With eta scaled by K, the mean step per episode is that of K = 1 and
	// the noise variance per episode is K times smaller.
	UsersPerUpdate int
}

// DefaultLogLinearConfig returns Table 2 of Rio et al. with the L2 trust
// region; Z must still be set.
func DefaultLogLinearConfig() LogLinearConfig {
	return LogLinearConfig{
		Gamma: 0.99, LR0: 12, LREvery: 50, LRFactor: 5, LRMin: 0.06,
		Alpha: 3.5, Confidence: 0.6, Region: RegionL2,
		FisherEpisodes: 25, FisherRidge: 1e-3,
		BaselineLR: 0.1, BaselineClip: 1, UsersPerUpdate: 1,
	}
}

// Validate reports every invalid field.
func (c LogLinearConfig) Validate() error {
	var errs []error
	bad := func(name string, v any, want string) {
		errs = append(errs, fmt.Errorf("policy: log-linear %s = %v, want %s", name, v, want))
	}
	if !(c.Gamma >= 0 && c.Gamma <= 1) {
		bad("gamma", c.Gamma, "0 <= gamma <= 1")
	}
	if !(c.LR0 > 0) || !(c.LRMin > 0) || c.LRMin > c.LR0 {
		bad("learning rates", [2]float64{c.LR0, c.LRMin}, "0 < min <= start")
	}
	if c.LREvery < 1 || !(c.LRFactor >= 1) {
		bad("learning-rate schedule", [2]float64{float64(c.LREvery), c.LRFactor}, "every >= 1, factor >= 1")
	}
	if !(c.Alpha > 0) {
		bad("alpha", c.Alpha, "> 0")
	}
	if !(c.Confidence > 0 && c.Confidence < 1) {
		bad("confidence", c.Confidence, "0 < 1-beta < 1")
	}
	if !(c.Z > 0) || math.IsInf(c.Z, 0) {
		bad("z", c.Z, "a finite z > 0 (privacy needs noise)")
	}
	if c.Region == RegionKL && ((!c.FisherExact && c.FisherEpisodes < 1) || !(c.FisherRidge >= 0) || math.IsInf(c.FisherRidge, 0)) {
		bad("fisher", [2]float64{float64(c.FisherEpisodes), c.FisherRidge}, "episodes >= 1 (unless exact), a finite ridge >= 0")
	}
	if c.UsersPerUpdate < 1 {
		bad("users per update K", c.UsersPerUpdate, ">= 1")
	}
	if !(c.BaselineLR >= 0) || !(c.BaselineClip > 0) {
		bad("baseline", [2]float64{c.BaselineLR, c.BaselineClip}, "lr >= 0, clip > 0")
	}
	return errors.Join(errs...)
}

// LogLinear is the log-linear policy pi(a|s) ∝ exp(theta . phi(s,a)) with
// phi the one-hot of (s, a), and the linear baseline V(s) = psi . phi(s)
// (Rio et al., App. C.2.2).
type LogLinear struct {
	S, A       int
	Theta, Psi []float64
}

// NewLogLinear returns the uniform policy and a zero baseline.
func NewLogLinear(states, actions int) *LogLinear {
	return &LogLinear{S: states, A: actions, Theta: make([]float64, states*actions), Psi: make([]float64, states)}
}

// Probs writes pi(.|s) into dst.
func (p *LogLinear) Probs(dst []float64, s int) {
	row := p.Theta[s*p.A : (s+1)*p.A]
	m := math.Inf(-1)
	for _, v := range row {
		m = math.Max(m, v)
	}
	var z float64
	for a, v := range row {
		dst[a] = math.Exp(v - m)
		z += dst[a]
	}
	for a := range dst {
		dst[a] /= z
	}
}

// Episode is one finite-horizon episode of a tabular MDP.
type Episode struct {
	States, Actions []int
	Rewards         []float64
	probs           []float64 // Rollout's scratch
}

// Rollout runs the policy for one episode of the MDP.
func (p *LogLinear) Rollout(m TabularMDP, rng *rand.Rand, ep *Episode) {
	ep.States, ep.Actions, ep.Rewards = ep.States[:0], ep.Actions[:0], ep.Rewards[:0]
	if len(ep.probs) != p.A {
		ep.probs = make([]float64, p.A)
	}
	probs := ep.probs
	s := m.Start()
	for t := 0; t < m.Horizon(); t++ {
		p.Probs(probs, s)
		a := sample(rng, probs)
		ep.States, ep.Actions = append(ep.States, s), append(ep.Actions, a)
		ep.Rewards = append(ep.Rewards, m.Reward(s, a))
		s = sample(rng, m.Transition(s, a))
	}
}

func sample(rng *rand.Rand, probs []float64) int {
	u := rng.Float64()
	for i, p := range probs {
		u -= p
		if u < 0 {
			return i
		}
	}
	return len(probs) - 1
}

// LogLinearLearner runs log-linear DPPG: one noisy, clipped policy-gradient
// step per UsersPerUpdate episodes (the paper: one per episode), with the
// clipping norm recomputed at every update from the trust region.
type LogLinearLearner struct {
	gauss    *noise.Gaussian
	gaussRNG *rand.Rand
	Policy   *LogLinear
	Config   LogLinearConfig
	episodes int

	// The batch being collected: held episodes, their summed clipped
	// gradients, and the S and eta fixed at its first episode.
	held             int
	batchS, batchLR  float64
	sumTheta, sumPsi []float64

	gTheta, gPsi, probs []float64
	fisherBlk, fisherG  []float64 // Fisher blocks (S x A x A) and one score
	fisherPi            []float64 // pi tabulated (S x A)
	fisherD, fisherNext []float64 // state-visit distributions (exact Fisher)
	quantile            float64   // cached q_{1-beta}: it depends only on the config
}

// NewLogLinearLearner validates the configuration.
func NewLogLinearLearner(states, actions int, c LogLinearConfig) (*LogLinearLearner, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if states < 1 || actions < 2 {
		return nil, fmt.Errorf("policy: log-linear needs >= 1 state and >= 2 actions, got %d, %d", states, actions)
	}
	p := NewLogLinear(states, actions)
	return &LogLinearLearner{Policy: p, Config: c,
		gTheta: make([]float64, len(p.Theta)), gPsi: make([]float64, len(p.Psi)),
		sumTheta: make([]float64, len(p.Theta)), sumPsi: make([]float64, len(p.Psi)),
		probs: make([]float64, actions)}, nil
}

// LR is the policy learning rate of the next update.
func (l *LogLinearLearner) LR() float64 {
	c := l.Config
	eta := c.LR0 / math.Pow(c.LRFactor, float64(l.episodes/c.LREvery))
	return math.Max(eta, c.LRMin)
}

// ClipNorm returns the clipping norm S of the next update under the
// configured trust region; m and rng are used only for the KL region's
// Fisher estimate on public simulated episodes.
//
// Propositions 4.4, 4.5 and 4.7 of Rio et al. bound the step eta (gbar +
// xi) with ||gbar|| <= S and xi ~ N(0, z^2 S^2 I). With UsersPerUpdate K
// the step is eta (mean_k clip(g_k, S) + N(0, (z S / K)^2 I)): the same
// form with the mean in place of gbar (its norm is at most S too) and z / K
// in place of z, so the bounds are applied with z_K = z / K (K = 1: the
// paper's).
func (l *LogLinearLearner) ClipNorm(m TabularMDP, rng *rand.Rand) (float64, error) {
	c := l.Config
	eta := l.LR()
	if c.ClipAtLR0 {
		eta = c.LR0
	}
	d := float64(len(l.Policy.Theta))
	beta := 1 - c.Confidence
	z := c.Z / float64(c.UsersPerUpdate) // >= 1: Validate
	switch c.Region {
	case RegionL2:
		if l.quantile == 0 {
			// Prop. 4.4: noncentrality ||gbar||^2 / (z S)^2 <= z^-2.
			q, err := NoncentralChi2Quantile(c.Confidence, len(l.Policy.Theta), 1/(z*z))
			if err != nil {
				return 0, err
			}
			l.quantile = q
		}
		return math.Sqrt(2*c.Alpha/l.quantile) / (eta * z), nil // Prop. 4.4
	case RegionL2Markov:
		return math.Sqrt(2*c.Alpha*beta/(1+z*z*d)) / eta, nil // Prop. 4.5, Eq. (4)
	case RegionKL:
		maxEig, tr, err := l.fisherMoments(m, rng)
		if err != nil {
			return 0, err
		}
		return math.Sqrt(2*c.Alpha*beta/(maxEig+z*z*tr)) / eta, nil // Prop. 4.7, Eq. (7)
	}
	return 0, fmt.Errorf("policy: unknown trust region %v", c.Region)
}

// AlphaForClip returns the trust-region size alpha for which ClipNorm,
// at the learner's current policy and step size, is S. Every bound ClipNorm
// applies (Props. 4.4, 4.5, 4.7) is sqrt(alpha) times a factor that does
// not depend on alpha, so alpha = (S / S_1)^2 with S_1 the norm at alpha =
// 1. The KL region needs FisherExact: a sampled Fisher estimate would make
// alpha depend on the draw. alpha is public (it depends on the policy, the
// public model and the configuration only), so choosing it costs no
// privacy.
func (l *LogLinearLearner) AlphaForClip(m TabularMDP, S float64) (float64, error) {
	if !(S > 0) || math.IsInf(S, 0) {
		return 0, fmt.Errorf("policy: log-linear clipping norm %v, want a finite S > 0", S)
	}
	if l.Config.Region == RegionKL && !l.Config.FisherExact {
		return 0, errors.New("policy: choosing alpha for a clipping norm needs the exact Fisher matrix with the KL region")
	}
	saved := l.Config.Alpha
	l.Config.Alpha = 1
	S1, err := l.ClipNorm(m, nil)
	l.Config.Alpha = saved
	if err != nil {
		return 0, err
	}
	if !(S1 > 0) || math.IsInf(S1, 0) {
		return 0, fmt.Errorf("policy: log-linear clipping norm %v at alpha 1, want a finite S > 0 (with the KL region, use a Fisher ridge > 0)", S1)
	}
	return (S / S1) * (S / S1), nil
}

// fisherMoments estimates the Fisher matrix F = E[grad log pi grad log
// pi^T] + ridge I over the state-action visits of FisherEpisodes public
// episodes (or its expectation under the model, FisherExact) and returns its
// largest eigenvalue and its trace (Prop. 4.7). grad log pi(a|s) = e_(s,a) -
// pi(.|s) lives on state s's coordinates, so F is block diagonal with one
// A x A block per state, and its eigenvalues are those of the blocks: closed
// form for A = 2, a small eigendecomposition otherwise. It allocates nothing
// for A = 2.
func (l *LogLinearLearner) fisherMoments(m TabularMDP, rng *rand.Rand) (maxEig, trace float64, err error) {
	p := l.Policy
	A := p.A
	if len(l.fisherBlk) != p.S*A*A {
		l.fisherBlk, l.fisherG, l.fisherPi = make([]float64, p.S*A*A), make([]float64, A), make([]float64, p.S*A)
		l.fisherD, l.fisherNext = make([]float64, p.S), make([]float64, p.S)
	}
	blk, pt := l.fisherBlk, l.fisherPi
	clear(blk)
	// The policy is fixed during the estimate: tabulate pi once.
	for s := range p.S {
		p.Probs(pt[s*A:(s+1)*A], s)
	}
	if l.Config.FisherExact {
		l.exactFisherBlocks(m)
	} else {
		l.sampledFisherBlocks(m, rng)
	}
	ridge := l.Config.FisherRidge
	maxEig = math.Inf(-1)
	for s := range p.S {
		b := blk[s*A*A : (s+1)*A*A]
		for i := range A {
			for j := i; j < A; j++ {
				b[j*A+i] = b[i*A+j]
			}
			b[i*A+i] += ridge
			trace += b[i*A+i]
		}
		var top float64
		if A == 2 {
			// [[a, c], [c, d]]: (a+d)/2 + sqrt(((a-d)/2)^2 + c^2).
			top = (b[0]+b[3])/2 + math.Hypot((b[0]-b[3])/2, b[1])
		} else {
			var eig mat.EigenSym
			if !eig.Factorize(mat.NewSymDense(A, b), false) {
				return 0, 0, errors.New("policy: Fisher eigendecomposition failed")
			}
			vals := eig.Values(nil)
			top = vals[len(vals)-1] // ascending
		}
		maxEig = math.Max(maxEig, top)
	}
	return maxEig, trace, nil
}

// sampledFisherBlocks fills the upper triangles of the Fisher blocks with
// the mean of g g^T, g = e_a - pi(.|s), over the state-action visits of
// FisherEpisodes episodes drawn from rng exactly as Rollout draws them.
func (l *LogLinearLearner) sampledFisherBlocks(m TabularMDP, rng *rand.Rand) {
	A := l.Policy.A
	blk, g, pt := l.fisherBlk, l.fisherG, l.fisherPi
	n := 0
	for e := 0; e < l.Config.FisherEpisodes; e++ {
		s := m.Start()
		for t := 0; t < m.Horizon(); t++ {
			row := pt[s*A : (s+1)*A]
			a := sample(rng, row)
			for b := range g {
				g[b] = -row[b]
			}
			g[a]++
			b := blk[s*A*A : (s+1)*A*A]
			for i := range A {
				for j := i; j < A; j++ {
					b[i*A+j] += g[i] * g[j]
				}
			}
			n++
			s = sample(rng, m.Transition(s, a))
		}
	}
	for i := range blk {
		blk[i] /= float64(n)
	}
}

// exactFisherBlocks fills the upper triangles of the Fisher blocks with the
// expectation of what sampledFisherBlocks averages: the visit frequency
// w(s) = (1/H) sum_t P(s_t = s) of the current policy from the start state,
// times E_{a~pi(.|s)}[g g^T] = diag(pi) - pi pi^T.
func (l *LogLinearLearner) exactFisherBlocks(m TabularMDP) {
	S, A := l.Policy.S, l.Policy.A
	blk, pt, d, next := l.fisherBlk, l.fisherPi, l.fisherD, l.fisherNext
	clear(d)
	d[m.Start()] = 1
	H := m.Horizon()
	for t := 0; t < H; t++ {
		clear(next)
		for s := range S {
			if d[s] == 0 {
				continue
			}
			w := d[s] / float64(H)
			row := pt[s*A : (s+1)*A]
			b := blk[s*A*A : (s+1)*A*A]
			for i := range A {
				b[i*A+i] += w * row[i]
				for j := i; j < A; j++ {
					b[i*A+j] -= w * row[i] * row[j]
				}
				if t+1 < H {
					for s2, q := range m.Transition(s, i) {
						next[s2] += d[s] * row[i] * q
					}
				}
			}
		}
		d, next = next, d
	}
}

// UpdateInfo describes one call of Update.
type UpdateInfo struct {
	// S and LR are the clipping norm and step size of the update the
	// episode is part of (fixed at the batch's first episode).
	S, LR float64
	// Clipped reports whether the episode's policy gradient was clipped.
	Clipped bool
	// Released reports whether this episode completed a batch of
	// UsersPerUpdate episodes, so that the policy and baseline changed.
	Released bool
}

// Update adds the episode to the current batch and, once it holds
// UsersPerUpdate = K episodes, applies one DP policy-gradient step (Rio et
// al., Eq. 1; Algorithm 2's fixed denominator K):
//
//	theta <- theta + (eta / K) (sum_k clip(g_k, S) + N(0, z^2 S^2 I)),
//	g_k = sum_t grad log pi(a_t|s_t) (G_t - V(s_t)),
//
// and the baseline's regression gradients are clipped to BaselineClip,
// summed and noised with the same z. Each episode enters one update, where
// the sum's sensitivity to it is S (BaselineClip for the baseline), so its
// privacy is that of two Gaussian mechanisms with multiplier z for every K.
// S and eta are fixed at the batch's first episode (the policy does not
// change within a batch); a batch that never fills releases nothing.
func (l *LogLinearLearner) Update(m TabularMDP, ep *Episode, rng *rand.Rand) (UpdateInfo, error) {
	p, c := l.Policy, l.Config
	if l.held == 0 {
		S, err := l.ClipNorm(m, rng)
		if err != nil {
			return UpdateInfo{}, err
		}
		if !(S > 0) || math.IsInf(S, 0) {
			// A Fisher estimate without a ridge is 0 at a deterministic policy.
			return UpdateInfo{}, fmt.Errorf("policy: log-linear clipping norm S = %v, want a finite S > 0 (with the KL region, use a Fisher ridge > 0)", S)
		}
		l.batchS, l.batchLR = S, l.LR()
		clear(l.sumTheta)
		clear(l.sumPsi)
	}
	S, eta := l.batchS, l.batchLR
	clear(l.gTheta)
	clear(l.gPsi)
	var G float64
	for t := len(ep.States) - 1; t >= 0; t-- {
		G = ep.Rewards[t] + c.Gamma*G
		s, a := ep.States[t], ep.Actions[t]
		adv := G - p.Psi[s]
		p.Probs(l.probs, s)
		for b := 0; b < p.A; b++ {
			l.gTheta[s*p.A+b] -= l.probs[b] * adv
		}
		l.gTheta[s*p.A+a] += adv
		l.gPsi[s] += adv
	}
	clipped := clipTo(l.gTheta, S)
	clipTo(l.gPsi, c.BaselineClip)
	for i, v := range l.gTheta {
		l.sumTheta[i] += v
	}
	for i, v := range l.gPsi {
		l.sumPsi[i] += v
	}
	l.held++
	l.episodes++
	info := UpdateInfo{S: S, LR: eta, Clipped: clipped}
	if l.held < c.UsersPerUpdate {
		return info, nil
	}
	K := float64(l.held)
	// The noised sums are exact Gaussian mechanisms on a data-independent
	// grid (package noise); the steps are post-processing.
	if sd := c.Z * S; sd > 0 {
		samplerFor(&l.gauss, &l.gaussRNG, rng).Add(l.sumTheta, sd)
	}
	if sd := c.Z * c.BaselineClip; sd > 0 {
		samplerFor(&l.gauss, &l.gaussRNG, rng).Add(l.sumPsi, sd)
	}
	for i := range p.Theta {
		p.Theta[i] += eta / K * l.sumTheta[i]
	}
	for i := range p.Psi {
		p.Psi[i] += c.BaselineLR / K * l.sumPsi[i]
	}
	l.held = 0
	info.Released = true
	return info, nil
}

// clipTo scales v to L2 norm at most s (Clip: a v with a NaN or ±Inf
// coordinate becomes zero, and the exact norm of the result is at most s)
// and reports whether it changed v, for diagnostics only.
func clipTo(v []float64, s float64) bool {
	return clipL2(v, s) != clipInside
}

// EvaluateTabular returns the undiscounted finite-horizon value at the start
// state of the policy given by probs(s) (backward induction on the model).
// Repeated evaluations on one MDP should reuse a TabularEvaluator.
func EvaluateTabular(m TabularMDP, probs func(dst []float64, s int)) float64 {
	return NewTabularEvaluator(m).Value(probs)
}

// TabularEvaluator computes finite-horizon values of stationary policies on
// one MDP, reusing its buffers: Value allocates nothing.
type TabularEvaluator struct {
	m           TabularMDP
	v, next, pr []float64
}

// NewTabularEvaluator returns an evaluator for m.
func NewTabularEvaluator(m TabularMDP) *TabularEvaluator {
	nS, nA := m.NumStates(), m.NumActions()
	return &TabularEvaluator{m: m, v: make([]float64, nS), next: make([]float64, nS), pr: make([]float64, nS*nA)}
}

// Value returns the undiscounted finite-horizon value at the start state of
// the stationary policy probs(s) (backward induction on the model).
func (e *TabularEvaluator) Value(probs func(dst []float64, s int)) float64 {
	m := e.m
	nS, nA := m.NumStates(), m.NumActions()
	for s := 0; s < nS; s++ {
		probs(e.pr[s*nA:(s+1)*nA], s)
	}
	v, next := e.v, e.next
	clear(v)
	for h := 0; h < m.Horizon(); h++ {
		for s := 0; s < nS; s++ {
			var val float64
			for a := 0; a < nA; a++ {
				q := m.Reward(s, a)
				for s2, p := range m.Transition(s, a) {
					q += p * v[s2]
				}
				val += e.pr[s*nA+a] * q
			}
			next[s] = val
		}
		v, next = next, v
	}
	return v[m.Start()]
}

// OptimalTabular returns the optimal undiscounted finite-horizon value at the
// start state (backward induction).
func OptimalTabular(m TabularMDP) float64 {
	nS, nA := m.NumStates(), m.NumActions()
	v := make([]float64, nS)
	next := make([]float64, nS)
	for h := 0; h < m.Horizon(); h++ {
		for s := 0; s < nS; s++ {
			best := math.Inf(-1)
			for a := 0; a < nA; a++ {
				q := m.Reward(s, a)
				for s2, p := range m.Transition(s, a) {
					q += p * v[s2]
				}
				best = math.Max(best, q)
			}
			next[s] = best
		}
		v, next = next, v
	}
	return v[m.Start()]
}
