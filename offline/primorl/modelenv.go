package primorl

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"dprl/sims"
)

// Uncertainty is the penalty's estimator u(s, a) (the paper's Section 4.3).
type Uncertainty int

const (
	// MPD is u_MPD = max_{i,j} ||mu_i - mu_j||_2, the largest disagreement
	// between two models' means.
	MPD Uncertainty = iota
	// MA is u_MA = max_i ||Sigma_i||_F, the largest predicted covariance
	// (diagonal: the Frobenius norm is the norm of the variances).
	MA
)

// String returns "mpd" or "ma".
func (u Uncertainty) String() string {
	if u == MA {
		return "ma"
	}
	return "mpd"
}

// ParseUncertainty returns the Uncertainty named s (as String names it).
func ParseUncertainty(s string) (Uncertainty, error) {
	for _, u := range []Uncertainty{MPD, MA} {
		if u.String() == s {
			return u, nil
		}
	}
	return 0, fmt.Errorf("%q: want mpd or ma", s)
}

// ModelEnv is the pessimistic MDP in which PriMORL's policy is trained
// (Algorithm 4): a sims.Env whose start states come from the real
// environment's public reset distribution and whose transitions are the
// released ensemble's. At each step one model i is drawn uniformly, the
// scaled (s' - s, r) is sampled from N(mu_i, diag exp(v_i)), and the reward
// is r - Lambda u(s, a), u computed on the scaled targets. Next
// observations are clipped to the real observation box and their cosine
// and sine pairs put back on the unit circle (Scales.Circle: public), and an
// episode is truncated after Horizon steps. Only the ensemble's released
// parameters and public knowledge enter it, so whatever is trained on it
// is post-processing of the release. Not safe for concurrent use.
type ModelEnv struct {
	real    sims.Env
	e       *Ensemble
	params  []float64
	scales  Scales
	u       Uncertainty
	lambda  float64
	horizon int

	starts     []float64 // rows of start observations; nil: the reset distribution
	mirror     bool      // average each prediction with its mirror image (SetMirror)
	pubReward  bool      // reward from Scales.Reward, not the ensemble (SetPublicReward)
	perRollout bool      // one model per rollout, not per step (SetModelPerRollout)
	meanStep   bool      // step to the ensemble's mean prediction, no draw (SetMeanStep)
	member     int       // the rollout's model (perRollout)
	mx         []float64 // the mirrored scaled input
	mmean, mlv []float64 // N x Out predictions at mx
	branch     float64   // probability of a rollout from a visited state (SetBranch)
	pool       []float64 // rows of states earlier rollouts reached (a reservoir)
	poolCap    int       // rows the pool holds at most
	visited    int       // states offered to the pool
	rng        *rand.Rand
	steps      int
	x          []float64 // the scaled input
	mean, lv   []float64 // N x Out
	pred       []float64 // the sampled scaled target
	obs        []float64
	low, high  []float64
	obsD, actD int
}

// NewModelEnv returns the pessimistic MDP of the released ensemble (e,
// params) over real's spaces and start states.
func NewModelEnv(real sims.Env, e *Ensemble, params []float64, scales Scales, u Uncertainty, lambda float64, horizon int) (*ModelEnv, error) {
	os, as := real.ObservationSpace(), real.ActionSpace()
	if as.Kind != sims.Box {
		return nil, errors.New("primorl: the model environment needs continuous actions")
	}
	od, ad := os.Dim(), as.Dim()
	if err := scales.Validate(od, ad); err != nil {
		return nil, err
	}
	if e.In() != od+ad || e.Out() != od+1 || len(params) != e.NumParams() {
		return nil, fmt.Errorf("primorl: ensemble of %d inputs, %d targets and %d parameters for %d observations and %d actions", e.In(), e.Out(), len(params), od, ad)
	}
	if !(lambda >= 0) || math.IsInf(lambda, 0) || horizon < 1 || (u != MPD && u != MA) {
		return nil, fmt.Errorf("primorl: penalty %v (want finite >= 0), horizon %d (want >= 1), uncertainty %d", lambda, horizon, int(u))
	}
	N := e.Models()
	return &ModelEnv{real: real, e: e, params: params, scales: scales, u: u, lambda: lambda, horizon: horizon,
		x: make([]float64, od+ad), mean: make([]float64, N*(od+1)), lv: make([]float64, N*(od+1)), pred: make([]float64, od+1),
		obs: make([]float64, od), low: os.Low, high: os.High, obsD: od, actD: ad}, nil
}

// ObservationSpace is the real environment's.
func (m *ModelEnv) ObservationSpace() sims.Space { return m.real.ObservationSpace() }

// ActionSpace is the real environment's.
func (m *ModelEnv) ActionSpace() sims.Space { return m.real.ActionSpace() }

// MaxSteps is the rollout horizon h.
func (m *ModelEnv) MaxSteps() int { return m.horizon }

// SetStartStates makes Reset draw its start observations uniformly from the
// rows of states (len a multiple of the observation dimension, >= 1 row)
// instead of the reset distribution. MOPO starts its rollouts from logged
// states; PriMORL must not (they are private data) unless they are public.
func (m *ModelEnv) SetStartStates(states []float64) error {
	if len(states) == 0 || len(states)%m.obsD != 0 {
		return fmt.Errorf("primorl: %d start-state values for observations of %d", len(states), m.obsD)
	}
	m.starts = states
	return nil
}

// SetMirror makes every model's prediction the average of its prediction
// at (s, a) and the mirror image of its prediction at the mirrored (s, a)
// (Scales.Mirror: the environment's public symmetry; the log-variances
// are averaged too). The real system is exactly symmetric, so this keeps
// what the model learned of it and cancels what breaks the symmetry: the
// private training's noise gives each model a random drift (on Pendulum,
// a constant push on the speed worth up to a quarter of the motor's torque),
// which a policy trained in the model learns to lean on and which fails it
// on the real system. It uses only the release and public knowledge, so
// it is post-processing. It fails if the scales have no mirror.
func (m *ModelEnv) SetMirror(on bool) error {
	if on && m.scales.Mirror == nil {
		return errors.New("primorl: the environment's scales declare no mirror symmetry")
	}
	m.mirror = on
	if on && m.mx == nil {
		m.mx, m.mmean, m.mlv = make([]float64, len(m.x)), make([]float64, len(m.mean)), make([]float64, len(m.lv))
	}
	return nil
}

// SetPublicReward makes Step's reward the environment's public reward
// function (Scales.Reward) at the observation, the action and the model's
// next observation, instead of the reward the ensemble predicts; the
// penalty still applies. The ensemble's reward head is trained on private
// data with noise, and far from the logged states it can predict rewards
// the task never gives (outside its public range), which a policy learns
// to chase; the task's own reward function is public knowledge, so using
// it is post-processing. The ensemble's predicted reward still counts in
// the penalty's disagreement. It fails if the scales have no reward
// function.
func (m *ModelEnv) SetPublicReward(on bool) error {
	if on && m.scales.Reward == nil {
		return errors.New("primorl: the environment's scales declare no public reward function")
	}
	m.pubReward = on
	return nil
}

// SetModelPerRollout makes each rollout follow one model of the ensemble,
// drawn uniformly at Reset, instead of a model drawn afresh at every step
// (trajectory sampling, as in PETS: Chua et al., "Deep reinforcement
// learning in a handful of trials using probabilistic dynamics models",
// 2018). Drawn per step, the models' differences average out along a
// rollout and the policy learns the ensemble's mean dynamics; drawn per
// rollout, it must act well in each model's, which is what a policy needs
// on the real system when each model errs in its own way (the private
// training's noise differs by model). The penalty still uses every model.
func (m *ModelEnv) SetModelPerRollout(on bool) { m.perRollout = on }

// SetMeanStep makes every step go to the ensemble's mean prediction (the
// average of the models' means, mirrored if SetMirror; with
// SetModelPerRollout, the rollout's model's mean), without drawing a
// model or a Gaussian sample: the model's best guess of the real
// system's deterministic dynamics. PriMORL rates its policy's checkpoints
// on whole episodes of it (Config.Select): the draws of a stochastic
// rollout compound over a thousand steps, and they rate a policy that
// balances a cart-pole on the real system no better than one that drops
// it, while the mean dynamics tell them apart.
func (m *ModelEnv) SetMeanStep(on bool) { m.meanStep = on }

// symmetrize replaces the n rows of predictions mean, lv (n x Out, Out =
// obsD + 1) with their averages with the mirror images of the predictions
// at the mirrored inputs, mmean and mlv: a change of observation component
// j mirrors with sign mirror[j], the reward and the log-variances not at
// all.
func symmetrize(mean, lv, mmean, mlv []float64, n int, mirror []float64) {
	O := len(mean) / n
	for r := range n {
		for j := range O {
			k := r*O + j
			sgn := 1.0
			if j < O-1 {
				sgn = mirror[j]
			}
			mean[k] = 0.5 * (mean[k] + sgn*mmean[k])
			lv[k] = 0.5 * (lv[k] + mlv[k])
		}
	}
}

// mirrorInputs writes the mirror image of the n scaled input rows of x
// into dst.
func mirrorInputs(dst, x []float64, n int, mirror []float64) {
	in := len(mirror)
	for r := range n {
		for k, sgn := range mirror {
			dst[r*in+k] = sgn * x[r*in+k]
		}
	}
}

// SetBranch makes Reset start a rollout, with probability p in [0, 1],
// from a state an earlier rollout of this environment reached: a uniform
// draw from a reservoir of up to capacity (>= 1) of them (Vitter's
// algorithm R, with the rollouts' own generator). Those states come from
// the released ensemble, the public start states and the policy's actions
// only, so this is post-processing too. It lets rollouts of h steps carry
// on where earlier ones stopped: states many steps from any start state
// (a pendulum's swing after the first pumps) are then visited and learned,
// as MOPO's rollouts from logged states visit them, without reading a
// logged state. p = 0 turns it off.
func (m *ModelEnv) SetBranch(p float64, capacity int) error {
	if !(p >= 0 && p <= 1) || capacity < 1 {
		return fmt.Errorf("primorl: branch probability %v (want [0, 1]) and capacity %d (want >= 1)", p, capacity)
	}
	m.branch, m.poolCap = p, capacity
	if m.pool == nil && p > 0 {
		m.pool = make([]float64, 0, min(capacity, 1<<12)*m.obsD)
	}
	return nil
}

// Reset draws a start state with rng, which the model keeps for its
// transitions: from a state an earlier rollout reached (SetBranch), from
// the real environment's reset distribution, or from the start states if
// set.
func (m *ModelEnv) Reset(rng *rand.Rand, obs []float64) {
	m.rng, m.steps = rng, 0
	if n := len(m.pool) / m.obsD; n > 0 && m.branch > 0 && rng.Float64() < m.branch {
		i := rng.IntN(n)
		copy(obs, m.pool[i*m.obsD:(i+1)*m.obsD])
	} else if m.starts != nil {
		i := rng.IntN(len(m.starts) / m.obsD)
		copy(obs, m.starts[i*m.obsD:(i+1)*m.obsD])
	} else {
		m.real.Reset(rng, obs)
	}
	copy(m.obs, obs)
	if m.perRollout {
		m.member = rng.IntN(m.e.Models())
	}
}

// Step samples the model's transition from the current observation under
// a and returns the penalised reward; it never terminates, and truncates
// at the horizon.
func (m *ModelEnv) Step(a sims.Action, obs []float64) (float64, bool, bool) {
	od, O, N := m.obsD, m.obsD+1, m.e.Models()
	for i, v := range m.obs {
		m.x[i] = v / m.scales.In[i]
	}
	for j, v := range a.Vec[:m.actD] {
		m.x[od+j] = v / m.scales.In[od+j]
	}
	for i := range N {
		m.e.Predict(m.params, i, m.x, 1, m.mean[i*O:(i+1)*O], m.lv[i*O:(i+1)*O])
	}
	if m.mirror {
		mirrorInputs(m.mx, m.x, 1, m.scales.Mirror)
		for i := range N {
			m.e.Predict(m.params, i, m.mx, 1, m.mmean[i*O:(i+1)*O], m.mlv[i*O:(i+1)*O])
		}
		symmetrize(m.mean, m.lv, m.mmean, m.mlv, N, m.scales.Mirror)
	}
	u := m.uncertainty()
	if m.meanStep && m.perRollout {
		copy(m.pred, m.mean[m.member*O:(m.member+1)*O])
	} else if m.meanStep {
		clear(m.pred)
		for i := range N {
			for j := range O {
				m.pred[j] += m.mean[i*O+j] / float64(N)
			}
		}
	} else {
		k := m.member
		if !m.perRollout {
			k = m.rng.IntN(N)
		}
		for j := range O {
			m.pred[j] = m.mean[k*O+j] + math.Exp(0.5*m.lv[k*O+j])*m.rng.NormFloat64()
		}
	}
	r := m.scales.Decode(obs, m.obs, m.pred)
	for i := range obs {
		obs[i] = min(max(obs[i], m.low[i]), m.high[i])
	}
	m.scales.project(obs)
	if m.pubReward {
		r = m.scales.Reward(m.obs, a.Vec[:m.actD], obs)
	}
	copy(m.obs, obs)
	m.steps++
	if m.branch > 0 {
		m.remember(obs)
	}
	return r - m.lambda*u, false, m.steps >= m.horizon
}

// remember offers a visited state to the pool (reservoir sampling: every
// state offered so far is in it with the same probability).
func (m *ModelEnv) remember(obs []float64) {
	m.visited++
	if n := len(m.pool) / m.obsD; n < m.poolCap {
		m.pool = append(m.pool, obs...)
		return
	}
	if i := m.rng.IntN(m.visited); i < m.poolCap {
		copy(m.pool[i*m.obsD:(i+1)*m.obsD], obs)
	}
}

// uncertainty computes u from the N models' predictions in m.mean, m.lv.
func (m *ModelEnv) uncertainty() float64 {
	O, N := m.obsD+1, m.e.Models()
	var u float64
	if m.u == MA {
		for i := range N {
			var s float64
			for _, v := range m.lv[i*O : (i+1)*O] {
				s += math.Exp(2 * v) // (variance)^2
			}
			u = max(u, math.Sqrt(s))
		}
		return u
	}
	for i := range N {
		for j := i + 1; j < N; j++ {
			var s float64
			for c := range O {
				d := m.mean[i*O+c] - m.mean[j*O+c]
				s += d * d
			}
			u = max(u, math.Sqrt(s))
		}
	}
	return u
}
