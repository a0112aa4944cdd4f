// Package gtd2 is differentially private off-policy evaluation with linear
// value functions: GPOPE, gradient-perturbed GTD2 (Xie et al., "Privacy
// preserving off-policy evaluation", Algorithm 1), with the non-private
// LSTD and weighted-importance LSTD baselines and the MSPBE metric.
//
// GTD2 solves the saddle point min_theta max_y <b - A theta, y> - ||y||_M^2/2
// with A = E[rho phi (phi - gamma phi')^T], b = E[rho r phi],
// M = E[phi phi^T], rho = pi(a|s)/mu(a|s).
package gtd2

import (
	"dprl/noise"

	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"dprl/sessionlog"
	"dprl/sims"
)

// Policy is a target policy, queried for pi(a|s).
type Policy interface {
	Prob(obs []float64, a sims.Action) float64
}

// Uniform is the uniform policy over N discrete actions.
type Uniform struct{ N int }

// Prob returns 1/N.
func (u Uniform) Prob(_ []float64, a sims.Action) float64 {
	if a.Vec != nil || a.Index < 0 || a.Index >= u.N {
		return 0
	}
	return 1 / float64(u.N)
}

// Trajectories is random access to a dataset's trajectories in feature
// space: what GPOPE reads. A *Dataset holds them all in memory; an
// *OnDemand builds each from its session when it is asked for, holding one
// at a time.
type Trajectories interface {
	// Shape returns the feature dimension and the discount.
	Shape() (dim int, gamma float64)
	// NumTrajectories is the number of trajectories.
	NumTrajectories() int
	// Trajectory returns trajectory i (0 <= i < NumTrajectories). It may
	// build it in scratch's storage; the result is valid until the next
	// call with the same scratch.
	Trajectory(i int, scratch *Trajectory) (*Trajectory, error)
}

// Dataset is the session log in feature space, in memory: for each
// trajectory, its transitions' features, next features, importance ratios
// and rewards, (2 Dim + 2) float64 per transition.
type Dataset struct {
	Dim   int
	Gamma float64
	Trajs []Trajectory
}

// Shape returns Dim and Gamma.
func (ds *Dataset) Shape() (int, float64) { return ds.Dim, ds.Gamma }

// NumTrajectories is len(Trajs).
func (ds *Dataset) NumTrajectories() int { return len(ds.Trajs) }

// Trajectory returns &Trajs[i]; it never fails.
func (ds *Dataset) Trajectory(i int, _ *Trajectory) (*Trajectory, error) { return &ds.Trajs[i], nil }

// Trajectory is one session's transitions (flat arrays of T x Dim).
type Trajectory struct {
	Phi, Next []float64 // Next is zero after a terminal transition
	Rho, R    []float64
	// Start is phi of the first state.
	Start []float64
}

// Len is the number of transitions.
func (t *Trajectory) Len() int { return len(t.R) }

// Prepare turns sessions into a Dataset: phi of every state, the next
// state's phi (final_obs after the last step; zero when terminal), and
// rho = pi(a|s) / exp(logp). A truncated session without final_obs cannot be
// bootstrapped and is an error.
//
// Every record the log reader accepts is accepted here, including extreme
// ones: a behaviour log-probability of -800 gives rho = +Inf, a huge reward
// a huge gradient. Such a trajectory is not an error (refusing it would
// itself reveal it); GPOPE's Clip bounds its gradient, zeroing it when it is
// not finite. rho is 0 whenever pi(a|s) = 0, even where exp(logp)
// underflows.
func Prepare(sessions []sessionlog.Session, f Features, target Policy, gamma float64) (*Dataset, error) {
	if err := checkGamma(gamma); err != nil {
		return nil, err
	}
	if len(sessions) == 0 {
		return nil, errors.New("gtd2: no sessions")
	}
	ds := &Dataset{Dim: f.Dim(), Gamma: gamma, Trajs: make([]Trajectory, len(sessions))}
	for i := range sessions {
		if err := PrepareSession(&ds.Trajs[i], &sessions[i], f, target); err != nil {
			return nil, err
		}
	}
	return ds, nil
}

func checkGamma(gamma float64) error {
	if !(gamma >= 0 && gamma < 1) {
		return fmt.Errorf("gtd2: gamma = %v, want 0 <= gamma < 1", gamma)
	}
	return nil
}

// PrepareSession builds one session's trajectory into tr, reusing tr's
// storage, exactly as Prepare builds each (the same checks, the same
// values).
func PrepareSession(tr *Trajectory, s *sessionlog.Session, f Features, target Policy) error {
	d := f.Dim()
	n := len(s.Steps)
	if !s.Terminal && s.FinalObs == nil {
		return fmt.Errorf("gtd2: session %q is truncated without final_obs: it cannot be bootstrapped", s.Session)
	}
	tr.Phi, tr.Next = resize(tr.Phi, n*d), resize(tr.Next, n*d)
	tr.Rho, tr.R = resize(tr.Rho, n), resize(tr.R, n)
	for t := range s.Steps {
		st := &s.Steps[t]
		if st.NoProb {
			return fmt.Errorf("gtd2: session %q step %d: no behaviour probability: importance ratios need it", s.Session, t)
		}
		if err := f.Phi(tr.Phi[t*d:(t+1)*d], st.Obs); err != nil {
			return fmt.Errorf("session %q step %d: %w", s.Session, t, err)
		}
		p := target.Prob(st.Obs, st.Action)
		if math.IsNaN(p) || p < 0 || p > 1 {
			return fmt.Errorf("gtd2: session %q step %d: target probability %v", s.Session, t, p)
		}
		tr.Rho[t] = 0
		if p > 0 {
			tr.Rho[t] = math.Exp(math.Log(p) - st.LogP) // +Inf when the ratio overflows
		}
		tr.R[t] = st.Reward
	}
	for t := 0; t+1 < n; t++ {
		copy(tr.Next[t*d:(t+1)*d], tr.Phi[(t+1)*d:(t+2)*d])
	}
	if s.Terminal {
		clear(tr.Next[(n-1)*d:])
	} else if err := f.Phi(tr.Next[(n-1)*d:], s.FinalObs); err != nil {
		return fmt.Errorf("session %q final_obs: %w", s.Session, err)
	}
	tr.Start = tr.Phi[:d]
	return nil
}

// resize returns v with length n, reusing its storage when it has room.
func resize(v []float64, n int) []float64 {
	if cap(v) < n {
		return make([]float64, n)
	}
	return v[:n]
}

// SessionSource is random access to sessions; sessionlog.RecordReader is one.
type SessionSource interface {
	// Len is the number of sessions.
	Len() int
	// Read returns session i.
	Read(i int) (sessionlog.Session, error)
}

// OnDemand is Trajectories built from sessions when asked for: trajectory
// i is PrepareSession of src.Read(i), the same values Prepare would hold,
// built into the caller's scratch. It holds no trajectory itself, so GPOPE
// on it needs memory for one trajectory, plus what src holds; each step
// builds only the trajectories its Poisson sample draws.
type OnDemand struct {
	src    SessionSource
	f      Features
	target Policy
	gamma  float64
}

// NewOnDemand returns the trajectories of src's sessions with features f,
// target and discount gamma.
func NewOnDemand(src SessionSource, f Features, target Policy, gamma float64) (*OnDemand, error) {
	if err := checkGamma(gamma); err != nil {
		return nil, err
	}
	if src.Len() == 0 {
		return nil, errors.New("gtd2: no sessions")
	}
	return &OnDemand{src: src, f: f, target: target, gamma: gamma}, nil
}

// Shape returns the feature dimension and the discount.
func (o *OnDemand) Shape() (int, float64) { return o.f.Dim(), o.gamma }

// NumTrajectories is the number of sessions.
func (o *OnDemand) NumTrajectories() int { return o.src.Len() }

// Trajectory reads session i and builds its trajectory in scratch.
func (o *OnDemand) Trajectory(i int, scratch *Trajectory) (*Trajectory, error) {
	s, err := o.src.Read(i)
	if err != nil {
		return nil, err
	}
	if err := PrepareSession(scratch, &s, o.f, o.target); err != nil {
		return nil, err
	}
	return scratch, nil
}

// Config configures GPOPE. Every field is public: a privacy parameter or a
// choice made without looking at the data.
type Config struct {
	// Iters is T, the number of noisy gradient steps.
	Iters int
	// StepSize is alpha (constant) or alpha_0 (diminishing).
	StepSize float64
	// Diminishing uses alpha_t = alpha_0 / sqrt(t) instead of a constant.
	Diminishing bool
	// Clip is C, the L2 bound of one trajectory's primal-dual gradient.
	Clip float64
	// Z is the noise multiplier: the noise is N(0, (Z C)^2 I) on the sum of
	// the sampled trajectories' clipped gradients. Z = 0 is non-private.
	Z float64
	// Q is the Poisson sampling rate: each step includes each trajectory
	// independently with probability Q (the paper draws one trajectory
	// uniformly; the RDP accountant of the subsampled Gaussian covers Poisson
	// sampling, so that is what runs).
	Q float64
	// Batch is the public expected sample size the noisy sum is divided by:
	// Q times the public number of trajectories. It must not be computed
	// from the private log (dividing by the log's own size would make the
	// step length a function of the data that the noise does not cover),
	// unless the log's size is itself public.
	Batch float64
	// Observe, if set, is called after every step t = 1..Iters with the
	// current primal weights (read only; valid during the call). It sees
	// only what the run releases anyway: the iterates are post-processing of
	// the noisy gradients.
	Observe func(t int, theta []float64)
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	if c.Iters < 1 {
		errs = append(errs, fmt.Errorf("gtd2: iters = %d, want >= 1", c.Iters))
	}
	if !(c.StepSize > 0) || math.IsInf(c.StepSize, 0) {
		errs = append(errs, fmt.Errorf("gtd2: step size = %v, want > 0", c.StepSize))
	}
	if !(c.Clip > 0) || math.IsInf(c.Clip, 0) {
		errs = append(errs, fmt.Errorf("gtd2: clip = %v, want > 0", c.Clip))
	}
	if !(c.Z >= 0) || math.IsInf(c.Z, 0) {
		errs = append(errs, fmt.Errorf("gtd2: noise multiplier z = %v, want >= 0", c.Z))
	} else if std := c.Z * c.Clip; c.Z > 0 && !(std >= 0x1p-900 && std <= 0x1p900) {
		errs = append(errs, fmt.Errorf("gtd2: noise standard deviation z clip = %v, outside the Gaussian sampler's [2^-900, 2^900]", std))
	}
	if !(c.Q > 0 && c.Q <= 1) {
		errs = append(errs, fmt.Errorf("gtd2: sampling rate q = %v, want 0 < q <= 1", c.Q))
	}
	if !(c.Batch > 0) || math.IsInf(c.Batch, 0) {
		errs = append(errs, fmt.Errorf("gtd2: batch = %v, want > 0 (the public expected sample size)", c.Batch))
	}
	return errors.Join(errs...)
}

// Result is GPOPE's release: exactly what its (epsilon, delta) guarantee
// covers. Theta and Y are post-processing of the noisy gradient sums (and
// of public inputs); nothing else about the run is in it. Statistics of the
// private data, such as how many gradients were clipped, are in Diagnostics,
// which the guarantee does not cover.
type Result struct {
	// Theta are the released primal weights.
	Theta []float64 `json:"theta"`
	// Y are the released dual weights.
	Y []float64 `json:"y"`
}

// Diagnostics are statistics of a GPOPE run on the private data. They are
// NOT covered by the privacy guarantee: each is a deterministic function of
// the data and the sampling, released without noise. They are for research
// on data one may look at, never to be printed beside the epsilon of a
// private run.
type Diagnostics struct {
	// Sampled counts the trajectory gradients used over all steps.
	Sampled int `json:"sampled"`
	// Clipped counts those scaled down to the clip.
	Clipped int `json:"clipped"`
	// Zeroed counts those replaced by zero because an entry or the norm was
	// not finite (see Clip).
	Zeroed int `json:"zeroed"`
}

// GPOPE runs Algorithm 1 of the GPOPE paper (Xie et al., "Privacy preserving
// off-policy evaluation") with Poisson sampling; every draw comes from rng.
//
// Each step t: draw the Poisson sample S_t (rate Q), compute each sampled
// trajectory's primal-dual gradient g_i, clip it (Clip), and update
//
//	(theta, y) -= alpha_t (sum_{i in S_t} clip(g_i) + N(0, (Z C)^2 I)) / Batch.
//
// Adding or removing one trajectory changes the clipped sum by at most C in
// L2 whatever the trajectory holds (Clip maps non-finite gradients to zero),
// so the run is the subsampled Gaussian mechanism composed over Iters steps
// (Mironov, Talwar & Zhang 2019, "Rényi differential privacy of the sampled
// Gaussian mechanism") with rate Q and multiplier Z, under add/remove
// adjacency of one trajectory, provided Q and Batch are public.
func GPOPE(ds Trajectories, c Config, rng *rand.Rand) (Result, error) {
	return gpope(ds, c, rng, nil)
}

// GPOPEWithDiagnostics runs GPOPE exactly as GPOPE does (the same draws from
// rng, the same Result) and also returns the run's Diagnostics, which the
// privacy guarantee does NOT cover.
func GPOPEWithDiagnostics(ds Trajectories, c Config, rng *rand.Rand) (Result, Diagnostics, error) {
	var diag Diagnostics
	res, err := gpope(ds, c, rng, &diag)
	return res, diag, err
}

func gpope(ds Trajectories, c Config, rng *rand.Rand, diag *Diagnostics) (Result, error) {
	if err := c.Validate(); err != nil {
		return Result{}, err
	}
	d, _ := ds.Shape()
	theta, y := make([]float64, d), make([]float64, d)
	g, sum := make([]float64, 2*d), make([]float64, 2*d)
	var scratch Trajectory
	gauss := noise.NewGaussian(rng)
	for t := 1; t <= c.Iters; t++ {
		if err := clippedSum(ds, &scratch, sum, g, theta, y, c.Clip, func() bool { return c.Q >= 1 || noise.Bernoulli(rng, c.Q) }, diag); err != nil {
			return Result{}, err
		}
		std := c.Z * c.Clip
		alpha := c.StepSize
		if c.Diminishing {
			alpha /= math.Sqrt(float64(t))
		}
		if std > 0 {
			gauss.Add(sum, std) // exact, on a grid fixed by std (package noise)
		}
		for k := range sum {
			gk := sum[k] / c.Batch
			if k < d {
				theta[k] -= alpha * gk
			} else {
				y[k-d] -= alpha * gk
			}
		}
		if c.Observe != nil {
			c.Observe(t, theta)
		}
	}
	return Result{Theta: theta, Y: y}, nil
}

// clippedSum writes into sum the sum over the trajectories that sampled()
// includes (asked once per trajectory, in order) of their primal-dual
// gradients at (theta, y), each clipped by Clip; g is scratch of length
// 2 Dim, and scratch the storage of trajectories built on demand. It counts
// into diag when diag is not nil. Only the sampled trajectories are read;
// an error reading one stops the sum.
func clippedSum(ds Trajectories, scratch *Trajectory, sum, g, theta, y []float64, c float64, sampled func() bool, diag *Diagnostics) error {
	clear(sum)
	d, gamma := ds.Shape()
	n := ds.NumTrajectories()
	for i := range n {
		if !sampled() {
			continue
		}
		tr, err := ds.Trajectory(i, scratch)
		if err != nil {
			return fmt.Errorf("gtd2: trajectory %d: %w", i, err)
		}
		gradient(g, tr, theta, y, d, gamma)
		out := Clip(g, c)
		if diag != nil {
			diag.Sampled++
			switch out {
			case Clipped:
				diag.Clipped++
			case Zeroed:
				diag.Zeroed++
			}
		}
		for k := range sum {
			sum[k] += g[k]
		}
	}
	return nil
}

// gradient writes one trajectory's primal-dual gradient G = [-A^T y;
// -(b - A theta - M y)] from the averages over its transitions, computed
// without forming A, b or M:
//
//	G_theta = -mean rho (phi - gamma phi') (phi . y)
//	G_y     = -mean phi (rho delta - phi . y),  delta = r + gamma phi'.theta - phi.theta.
func gradient(g []float64, tr *Trajectory, theta, y []float64, d int, gamma float64) {
	clear(g)
	n := tr.Len()
	for t := 0; t < n; t++ {
		phi := tr.Phi[t*d : (t+1)*d]
		next := tr.Next[t*d : (t+1)*d]
		var py, pt, nt float64
		for k := 0; k < d; k++ {
			py += phi[k] * y[k]
			pt += phi[k] * theta[k]
			nt += next[k] * theta[k]
		}
		rho := tr.Rho[t]
		delta := tr.R[t] + gamma*nt - pt
		a := rho * py
		b := rho*delta - py
		for k := 0; k < d; k++ {
			g[k] -= a * (phi[k] - gamma*next[k])
			g[d+k] -= b * phi[k]
		}
	}
	inv := 1 / float64(n)
	for k := range g {
		g[k] *= inv
	}
}

// ClipOutcome says what Clip did to a vector.
type ClipOutcome int

// The outcomes of Clip.
const (
	Kept    ClipOutcome = iota // the norm was at most the clip: unchanged
	Clipped                    // scaled down to the clip
	Zeroed                     // not finite: replaced by zero
)

// Clip bounds one unit's contribution v to L2 norm at most c (c > 0,
// finite), in place:
//
//   - if an entry of v is NaN or infinite, or its norm overflows to +Inf,
//     v is set to zero (Zeroed): a contribution whose norm is not finite
//     counts as zero. Scaling it instead would give Inf * 0 = NaN, and a
//     NaN would pass any "norm > c" test and turn the noisy sum into NaN,
//     telling neighbouring datasets apart with probability 1;
//   - else if its norm exceeds c, v is scaled to norm at most c (Clipped);
//   - else v is unchanged (Kept).
//
// Rounding is never allowed to let a contribution exceed the bound the
// noise is calibrated to: the computed norm of a vector of n entries is
// within a relative (n+2) 2^-53 of the exact one (the error of a sum of n
// squares and a square root; Higham, "Accuracy and stability of numerical
// algorithms", §3.1), so Clip compares with c' = c (1 - (n+4) 2^-52), twice
// that margin below c, and after scaling checks the computed norm of the
// scaled vector against c', lowering the factor ulp by ulp until it holds.
// The norm is computed with scaling (as LAPACK's dnrm2), so it does not
// overflow for finite entries whose norm is representable.
func Clip(v []float64, c float64) ClipOutcome {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			clear(v)
			return Zeroed
		}
	}
	n := Norm(v)
	if math.IsNaN(n) || math.IsInf(n, 0) {
		clear(v)
		return Zeroed
	}
	cc := c * (1 - float64(len(v)+4)*0x1p-52)
	if n <= cc {
		return Kept
	}
	f := cc / n
	for range 64 {
		if scaledNorm(v, f) <= cc {
			for k := range v {
				v[k] *= f
			}
			return Clipped
		}
		f = math.Nextafter(f, 0)
	}
	clear(v) // not reached in practice: zero is within any bound
	return Zeroed
}

// Norm is the L2 norm of v, computed with scaling so that it does not
// overflow or underflow needlessly. It is NaN or +Inf when an entry is not
// finite, and +Inf when the norm of finite entries is not representable.
func Norm(v []float64) float64 {
	return scaledNorm(v, 1)
}

// scaledNorm is the L2 norm of f v, with every product f v_k rounded as
// the scaling in Clip rounds it.
func scaledNorm(v []float64, f float64) float64 {
	scale, ssq := 0.0, 1.0
	for _, x := range v {
		x *= f
		if x == 0 {
			continue
		}
		ax := math.Abs(x)
		if math.IsNaN(ax) {
			return math.NaN()
		}
		if scale < ax {
			r := scale / ax
			ssq = 1 + ssq*r*r
			scale = ax
		} else {
			r := ax / scale
			ssq += r * r
		}
	}
	return scale * math.Sqrt(ssq)
}

// StartValue returns theta . mean(startPhi): the value estimate at a start
// distribution given by public start features (never the private data's).
func StartValue(theta []float64, startPhi [][]float64) float64 {
	var v float64
	for _, p := range startPhi {
		for k, x := range p {
			v += theta[k] * x
		}
	}
	return v / float64(len(startPhi))
}
