package policy

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// ActionKind says whether actions are discrete or continuous.
type ActionKind int

// The action kinds; the zero value is invalid.
const (
	ActionUnset      ActionKind = iota
	ActionDiscrete              // Categorical head over NumActions actions
	ActionContinuous            // DiagGaussian head over ActionDim dimensions
)

// String returns "discrete", "continuous" or "unset".
func (k ActionKind) String() string {
	switch k {
	case ActionDiscrete:
		return "discrete"
	case ActionContinuous:
		return "continuous"
	case ActionUnset:
		return "unset"
	}
	return fmt.Sprintf("ActionKind(%d)", int(k))
}

// Spec is the shape of the problem: what a stored policy must agree with.
type Spec struct {
	ObsDim     int        // observation length, >= 1
	Kind       ActionKind // discrete or continuous
	NumActions int        // discrete: number of actions, >= 2
	ActionDim  int        // continuous: action dimension, >= 1
}

// Validate reports every problem at once.
func (s Spec) Validate() error {
	var errs []error
	if s.ObsDim < 1 {
		errs = append(errs, fmt.Errorf("policy: spec: obs dim %d, must be >= 1", s.ObsDim))
	}
	switch s.Kind {
	case ActionDiscrete:
		if s.NumActions < 2 {
			errs = append(errs, fmt.Errorf("policy: spec: num actions %d, must be >= 2", s.NumActions))
		}
	case ActionContinuous:
		if s.ActionDim < 1 {
			errs = append(errs, fmt.Errorf("policy: spec: action dim %d, must be >= 1", s.ActionDim))
		}
	default:
		errs = append(errs, fmt.Errorf("policy: spec: action kind %v, must be discrete or continuous", s.Kind))
	}
	return errors.Join(errs...)
}

func (s Spec) netOut() int {
	if s.Kind == ActionDiscrete {
		return s.NumActions
	}
	return s.ActionDim
}

// Trajectory is one user's session, T >= 1 steps, as collected under the
// policy version theta the local update starts from. All slices are read only.
type Trajectory struct {
	Obs         []float64 // T*ObsDim, row t is s_t
	Actions     []int     // discrete: T actions in [0, NumActions)
	ContActions []float64 // continuous: T*ActionDim, row t is a_t
	Rewards     []float64 // T rewards, r_t for a_t
	LogProbs    []float64 // T behaviour log pi(a_t|s_t) (log density if continuous)
	FinalObs    []float64 // s_T, ObsDim; used to bootstrap when not Terminal
	Terminal    bool      // true: s_T is terminal; false: truncated
}

// Len returns T.
func (tr *Trajectory) Len() int { return len(tr.Rewards) }

// ErrTrajectory marks an invalid trajectory given to LocalUpdate.
var ErrTrajectory = errors.New("policy: invalid trajectory")

// ErrNonFinite marks a local update that is not finite (NaN or Inf), which
// must not reach the aggregate.
var ErrNonFinite = errors.New("policy: non-finite update")

func (l *Learner) checkTrajectory(tr *Trajectory) error {
	T := tr.Len()
	s := l.spec
	if T < 1 {
		return fmt.Errorf("%w: no steps", ErrTrajectory)
	}
	if len(tr.Obs) != T*s.ObsDim || len(tr.LogProbs) != T || len(tr.FinalObs) != s.ObsDim {
		return fmt.Errorf("%w: obs %d, logprobs %d, final obs %d for T = %d, obs dim %d",
			ErrTrajectory, len(tr.Obs), len(tr.LogProbs), len(tr.FinalObs), T, s.ObsDim)
	}
	if s.Kind == ActionDiscrete {
		if len(tr.Actions) != T {
			return fmt.Errorf("%w: %d actions for T = %d", ErrTrajectory, len(tr.Actions), T)
		}
		for t, a := range tr.Actions {
			if a < 0 || a >= s.NumActions {
				return fmt.Errorf("%w: actions[%d] = %d out of [0, %d)", ErrTrajectory, t, a, s.NumActions)
			}
			if tr.LogProbs[t] > 0 {
				return fmt.Errorf("%w: logprobs[%d] = %v > 0 for a discrete action", ErrTrajectory, t, tr.LogProbs[t])
			}
		}
	} else if len(tr.ContActions) != T*s.ActionDim {
		return fmt.Errorf("%w: %d continuous action values for T = %d, action dim %d", ErrTrajectory, len(tr.ContActions), T, s.ActionDim)
	}
	for _, part := range [...]struct {
		name string
		v    []float64
	}{{"obs", tr.Obs}, {"cont actions", tr.ContActions}, {"rewards", tr.Rewards}, {"logprobs", tr.LogProbs}, {"final obs", tr.FinalObs}} {
		for i, x := range part.v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("%w: %s[%d] = %v", ErrTrajectory, part.name, i, x)
			}
		}
	}
	return nil
}

// Learner computes per-user local updates (Algorithm 3) over the joint
// parameter vector theta = [policy params; value params], where the policy
// params are the actor MLP's followed, for a continuous policy, by ActionDim
// state-independent log standard deviations.
//
// A Learner owns all its workspaces: after the first LocalUpdate with the
// longest trajectory it allocates nothing. It is not safe for concurrent use;
// run one Learner per goroutine to process users in parallel (they are
// independent within an iteration).
type Learner struct {
	spec Spec
	cfg  Config

	actor, critic *MLP
	nActor        int // actor MLP params
	nPi, nV       int // policy block (actor + log std), value block

	base *Adam // the iteration's optimiser state, set by ResetMoments
	adam *Adam // working optimiser, restored from base for every user

	theta0, theta, grad []float64

	// per-trajectory workspaces (capacity grown to the longest T seen)
	tcap                   int
	vobs, values, adv, ret []float64
	perm                   []int
	mbObs, mbAct, mbOut    []float64
	stats                  LocalStats
	mbEnt                  float64 // mean entropy of the last lossGrad's minibatch
	mbDOut, mbV, mbDV      []float64
	mbAdv, mbRet, mbOld    []float64
	mbA                    []int
}

// NewLearner validates spec and cfg and returns a Learner with zero Adam
// moments (bias correction on) and workspaces sized for cfg.PPO.StepsPerUser.
func NewLearner(spec Spec, cfg Config) (*Learner, error) {
	if err := errors.Join(spec.Validate(), cfg.Validate()); err != nil {
		return nil, err
	}
	if err := checkObsScale(cfg.PPO.ObsScale, spec); err != nil {
		return nil, err
	}
	cfg.PPO.Hidden = append([]int(nil), cfg.PPO.Hidden...)
	cfg.PPO.ObsScale = append([]float64(nil), cfg.PPO.ObsScale...)
	l := &Learner{spec: spec, cfg: cfg}
	sizes := append(append([]int{spec.ObsDim}, cfg.PPO.Hidden...), spec.netOut())
	var err error
	if l.actor, err = NewMLP(sizes...); err != nil {
		return nil, err
	}
	sizes[len(sizes)-1] = 1
	if l.critic, err = NewMLP(sizes...); err != nil {
		return nil, err
	}
	l.nActor = l.actor.NumParams()
	l.nPi = l.nActor
	if spec.Kind == ActionContinuous {
		l.nPi += spec.ActionDim
	}
	l.nV = l.critic.NumParams()
	n := l.nPi + l.nV
	if l.base, err = NewAdam(n, cfg.PPO.Adam); err != nil {
		return nil, err
	}
	l.adam, _ = NewAdam(n, cfg.PPO.Adam)
	l.theta0 = make([]float64, n)
	l.theta = make([]float64, n)
	l.grad = make([]float64, n)
	l.growT(cfg.PPO.StepsPerUser)
	return l, nil
}

// growT sizes the per-trajectory workspaces for T steps.
func (l *Learner) growT(T int) {
	if T <= l.tcap {
		return
	}
	s := l.spec
	l.tcap = T
	l.vobs = make([]float64, (T+1)*s.ObsDim)
	l.values = make([]float64, T+1)
	l.adv = make([]float64, T)
	l.ret = make([]float64, T)
	l.perm = make([]int, T)
	l.mbObs = make([]float64, T*s.ObsDim)
	l.mbAct = make([]float64, T*max(s.ActionDim, 1))
	l.mbA = make([]int, T)
	l.mbOut = make([]float64, T*s.netOut())
	l.mbDOut = make([]float64, T*s.netOut())
	l.mbV = make([]float64, T)
	l.mbDV = make([]float64, T)
	l.mbAdv = make([]float64, T)
	l.mbRet = make([]float64, T)
	l.mbOld = make([]float64, T)
	l.actor.Reserve(T)
	l.critic.Reserve(T + 1)
}

// Spec returns the problem shape.
func (l *Learner) Spec() Spec { return l.spec }

// Config returns the configuration (a copy).
func (l *Learner) Config() Config {
	c := l.cfg
	c.PPO.Hidden = append([]int(nil), c.PPO.Hidden...)
	c.PPO.ObsScale = append([]float64(nil), c.PPO.ObsScale...)
	return c
}

// NumParams returns the length of the joint vector theta.
func (l *Learner) NumParams() int { return l.nPi + l.nV }

// NumPolicyParams returns the length of the policy block theta[:NumPolicyParams()].
func (l *Learner) NumPolicyParams() int { return l.nPi }

// Init writes a fresh initialisation of theta: orthogonal actor (output gain
// 0.01) and critic (output gain 1), zero biases, log std = InitLogStd.
func (l *Learner) Init(theta []float64, rng *rand.Rand) {
	l.checkTheta(theta)
	l.actor.Init(theta[:l.nActor], rng, GainPolicyOut)
	for i := l.nActor; i < l.nPi; i++ {
		theta[i] = l.cfg.PPO.InitLogStd
	}
	l.critic.Init(theta[l.nPi:], rng, GainValueOut)
}

func (l *Learner) checkTheta(theta []float64) {
	if len(theta) != l.NumParams() {
		panic(fmt.Sprintf("policy: theta length %d, want %d", len(theta), l.NumParams()))
	}
}

// ResetMoments starts a new iteration's optimiser state from the noised
// global update gTilde as PPOConfig.MomentReset says. ResetPaper (DPPG App.
// C.2.3): Adam's first moment is set to -gTilde and its second to gTilde^2,
// with bias correction off (see Adam). The sign: gTilde is an ascent
// displacement (theta <- theta + eta g~) while Adam's moments track the
// gradient of the loss being minimised, so the gradient-like quantity is
// -gTilde. ResetSecond: first moment 0, second gTilde^2. ResetZero: zero
// moments, bias correction on. gTilde is released (noised) data, so no reset
// carries raw user information. Every LocalUpdate until the next
// ResetMoments starts from this same state. It allocates nothing.
func (l *Learner) ResetMoments(gTilde []float64) {
	l.checkTheta(gTilde)
	switch l.cfg.PPO.MomentReset {
	case ResetZero:
		l.base.Reset()
		return
	case ResetSecond:
		l.base.SetSecondMoment(gTilde)
		return
	}
	for i, g := range gTilde {
		l.grad[i] = -g
	}
	l.base.SetMoments(l.grad)
}

// LocalUpdate runs Algorithm 3 for one user and writes g_u = theta_u - theta
// into gu (len NumParams()); theta is not modified.
//
// Advantages come from GAE(lambda) with the value function V = c net_v at
// theta, c = ValueScale (optionally standardised). Then for E epochs the trajectory is shuffled with rng and
// split into the configured number of minibatches; for each, one Adam step on
// the joint loss
//
//	L = -(1/B) sum_t ratio_t A_t - c_ent (1/B) sum_t H(pi(.|s_t))
//	    + c_v (1/B) sum_t 0.5 (net_v(s_t) - R_t/c)^2,
//	ratio_t = pi_theta(a_t|s_t) / exp(LogProbs[t]),
//
// with no PPO ratio clipping (Remark 5.2: the DP clip is the trust region),
// followed by the projection theta_pi <- theta0_pi + Clip(.; S_pi),
// theta_v <- theta0_v + Clip(.; S_v) (none in ModePPO). Adam starts from the
// state set by the last ResetMoments (zero moments before the first), the
// same for every user of an iteration.
//
// It returns an error wrapping ErrTrajectory for a malformed trajectory, or
// ErrNonFinite if the update overflowed (gu must then not be aggregated), and
// allocates nothing once its workspaces fit the trajectory length.
func (l *Learner) LocalUpdate(gu, theta []float64, tr *Trajectory, rng *rand.Rand) error {
	l.checkTheta(theta)
	l.checkTheta(gu)
	if err := l.checkTrajectory(tr); err != nil {
		return err
	}
	p := &l.cfg.PPO
	T := tr.Len()
	l.growT(T)
	copy(l.theta0, theta)
	copy(l.theta, theta)

	// Advantages from the value network at theta0.
	od := l.spec.ObsDim
	copy(l.vobs, tr.Obs)
	copy(l.vobs[T*od:], tr.FinalObs)
	scaleObs(l.vobs[:(T+1)*od], p.ObsScale)
	values := l.values[:T+1]
	l.critic.ForwardBatch(values, l.theta0[l.nPi:], l.vobs[:(T+1)*od], T+1)
	if c := p.valueScale(); c != 1 {
		for i := range values {
			values[i] *= c
		}
	}
	adv, ret := l.adv[:T], l.ret[:T]
	GAE(adv, ret, tr.Rewards, values, tr.Terminal, p.Gamma, p.Lambda)
	if p.NormalizeAdvantages {
		standardize(adv)
	}

	l.stats = LocalStats{Steps: T}
	for t := range T {
		l.stats.AdvMean += adv[t]
		l.stats.AdvAbs += math.Abs(adv[t])
		l.stats.ReturnMean += ret[t]
		e := values[t] - ret[t]
		l.stats.ValueLoss += 0.5 * e * e
	}
	invT := 1 / float64(T)
	l.stats.AdvMean *= invT
	l.stats.AdvAbs *= invT
	l.stats.ReturnMean *= invT
	l.stats.ValueLoss *= invT

	l.adam.CopyStateFrom(l.base)
	sPi, sV := l.cfg.DP.clipNorms()
	nmb := min(p.Minibatches, T)
	perm := l.perm[:T]
	for i := range perm {
		perm[i] = i
	}
	for e := range p.Epochs {
		for i := T - 1; i > 0; i-- { // Fisher-Yates
			j := rng.IntN(i + 1)
			perm[i], perm[j] = perm[j], perm[i]
		}
		for k := 0; k < nmb; k++ {
			idx := perm[k*T/nmb : (k+1)*T/nmb]
			l.gather(tr, idx)
			l.lossGrad(l.grad, l.theta, len(idx))
			if e == 0 {
				l.stats.Entropy += l.mbEnt / float64(nmb)
			}
			l.adam.Step(l.theta, l.grad)
			if l.cfg.DP.Mode != ModePPO {
				if projectBall(l.theta[:l.nPi], l.theta0[:l.nPi], sPi) {
					l.stats.PolicyProjections++
				}
				if projectBall(l.theta[l.nPi:], l.theta0[l.nPi:], sV) {
					l.stats.ValueProjections++
				}
			}
		}
	}
	ss, ssPi := 0.0, 0.0
	for i := range gu {
		d := l.theta[i] - l.theta0[i]
		gu[i] = d
		ss += d * d
		if i == l.nPi-1 {
			ssPi = ss
		}
	}
	l.stats.PolicyNorm, l.stats.ValueNorm = math.Sqrt(ssPi), math.Sqrt(ss-ssPi)
	if math.IsNaN(ss) || math.IsInf(ss, 0) {
		return fmt.Errorf("%w: local update norm %v", ErrNonFinite, math.Sqrt(ss))
	}
	return nil
}

// LocalStats describes the last LocalUpdate, for diagnostics (it is the
// user's raw data: never release it).
type LocalStats struct {
	Steps int // T
	// Before the epochs, at theta: mean advantage, mean |advantage|, mean
	// value target and mean 0.5 (V - R)^2.
	AdvMean, AdvAbs, ReturnMean, ValueLoss float64
	// Entropy is the mean policy entropy over the first epoch's minibatches.
	Entropy float64
	// PolicyNorm and ValueNorm are the norms of the two blocks of g_u.
	PolicyNorm, ValueNorm float64
	// PolicyProjections and ValueProjections count the optimiser steps
	// after which the block was projected back onto its clipping ball.
	PolicyProjections, ValueProjections int
}

// Stats returns the diagnostics of the last LocalUpdate.
func (l *Learner) Stats() LocalStats { return l.stats }

// gather copies the rows idx of the trajectory into the minibatch buffers.
func (l *Learner) gather(tr *Trajectory, idx []int) {
	od, ad := l.spec.ObsDim, l.spec.ActionDim
	for i, t := range idx {
		row := l.mbObs[i*od : (i+1)*od]
		copy(row, tr.Obs[t*od:(t+1)*od])
		scaleObs(row, l.cfg.PPO.ObsScale)
		if l.spec.Kind == ActionDiscrete {
			l.mbA[i] = tr.Actions[t]
		} else {
			copy(l.mbAct[i*ad:(i+1)*ad], tr.ContActions[t*ad:(t+1)*ad])
		}
		l.mbAdv[i] = l.adv[t]
		l.mbRet[i] = l.ret[t]
		l.mbOld[i] = tr.LogProbs[t]
	}
}

// lossGrad returns the joint minibatch loss at theta over the B gathered rows
// and writes its gradient into grad.
func (l *Learner) lossGrad(grad, theta []float64, B int) float64 {
	p := &l.cfg.PPO
	od, no := l.spec.ObsDim, l.spec.netOut()
	obs := l.mbObs[:B*od]
	out, dOut := l.mbOut[:B*no], l.mbDOut[:B*no]
	piNet, logStd := theta[:l.nActor], theta[l.nActor:l.nPi]
	dLogStd := grad[l.nActor:l.nPi]
	clear(dLogStd)
	clear(dOut)
	l.actor.ForwardBatch(out, piNet, obs, B)
	invB := 1 / float64(B)
	loss := 0.0
	l.mbEnt = 0
	for i := 0; i < B; i++ {
		row, drow := out[i*no:(i+1)*no], dOut[i*no:(i+1)*no]
		var logp, ent float64
		if l.spec.Kind == ActionDiscrete {
			c := Categorical{N: no}
			logp = c.LogProb(row, l.mbA[i])
			ent = c.Entropy(row)
			l.mbEnt += invB * ent
			ratio := math.Exp(logp - l.mbOld[i])
			loss -= invB * (ratio*l.mbAdv[i] + p.EntropyCoef*ent)
			c.AddGrad(drow, row, l.mbA[i], -invB*ratio*l.mbAdv[i], -invB*p.EntropyCoef)
		} else {
			g := DiagGaussian{Dim: no}
			a := l.mbAct[i*no : (i+1)*no]
			logp = g.LogProb(row, logStd, a)
			ent = g.Entropy(logStd)
			l.mbEnt += invB * ent
			ratio := math.Exp(logp - l.mbOld[i])
			loss -= invB * (ratio*l.mbAdv[i] + p.EntropyCoef*ent)
			g.AddGrad(drow, dLogStd, row, logStd, a, -invB*ratio*l.mbAdv[i], -invB*p.EntropyCoef)
		}
	}
	l.actor.Backward(grad[:l.nActor], piNet, dOut)

	v, dv := l.mbV[:B], l.mbDV[:B]
	vNet := theta[l.nPi:]
	l.critic.ForwardBatch(v, vNet, obs, B)
	invC := 1 / p.valueScale()
	for i := range v {
		e := v[i] - invC*l.mbRet[i]
		loss += p.ValueCoef * invB * 0.5 * e * e
		dv[i] = p.ValueCoef * invB * e
	}
	l.critic.Backward(grad[l.nPi:], vNet, dv)
	return loss
}

// checkObsScale reports whether scale suits spec (empty, or one value per
// observation component).
func checkObsScale(scale []float64, spec Spec) error {
	if len(scale) != 0 && len(scale) != spec.ObsDim {
		return fmt.Errorf("policy: obs scale has %d values, want %d (the observation dimension) or none", len(scale), spec.ObsDim)
	}
	return nil
}

// scaleObs multiplies every row of obs (rows of len(scale)) by scale
// elementwise; nothing if scale is empty.
func scaleObs(obs, scale []float64) {
	if len(scale) == 0 {
		return
	}
	for i := range obs {
		obs[i] *= scale[i%len(scale)]
	}
}

// standardize makes x mean 0 and std 1 (population std; left centred if the
// std is below 1e-8).
func standardize(x []float64) {
	if len(x) == 0 {
		return
	}
	m := 0.0
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	s := 0.0
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	s = math.Sqrt(s / float64(len(x)))
	inv := 1.0
	if s > 1e-8 {
		inv = 1 / s
	}
	for i, v := range x {
		x[i] = (v - m) * inv
	}
}

// projectBall sets x <- x0 + Clip(x - x0; s), where Clip(d; s) = d min(1, s/||d||).
// The result satisfies ||x - x0|| <= s and x is unchanged when already inside.
// It reports whether it moved x.
func projectBall(x, x0 []float64, s float64) bool {
	if math.IsInf(s, 1) {
		return false
	}
	ss := 0.0
	for i := range x {
		d := x[i] - x0[i]
		ss += d * d
	}
	n := math.Sqrt(ss)
	if n <= s {
		return false
	}
	f := s / n
	for i := range x {
		x[i] = x0[i] + (x[i]-x0[i])*f
	}
	return true
}

// Clip scales d in place to L2 norm at most s >= 0: d <- d min(1, s/||d||).
// A d with a NaN or ±Inf coordinate becomes the zero vector, and the
// result's exact norm is at most s despite rounding (huge and subnormal
// coordinates included); it panics if s is NaN or negative.
func Clip(d []float64, s float64) { clipL2(d, s) }
