// Package gtd2 is differentially private off-policy evaluation with linear
// value functions: GPOPE, gradient-perturbed GTD2 (Xie et al., "Privacy
// preserving off-policy evaluation"; ALGORITHMS.md §4), with the non-private
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

	"dprl/offline"
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

// Dataset is the session log in feature space: for each trajectory, its
// transitions' features, next features, importance ratios and rewards.
type Dataset struct {
	Dim   int
	Gamma float64
	Trajs []Trajectory
}

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
func Prepare(sessions []offline.Session, f Features, target Policy, gamma float64) (*Dataset, error) {
	if !(gamma >= 0 && gamma < 1) {
		return nil, fmt.Errorf("gtd2: gamma = %v, want 0 <= gamma < 1", gamma)
	}
	if len(sessions) == 0 {
		return nil, errors.New("gtd2: no sessions")
	}
	d := f.Dim()
	ds := &Dataset{Dim: d, Gamma: gamma, Trajs: make([]Trajectory, len(sessions))}
	for i := range sessions {
		s := &sessions[i]
		n := len(s.Steps)
		if !s.Terminal && s.FinalObs == nil {
			return nil, fmt.Errorf("gtd2: session %q is truncated without final_obs: it cannot be bootstrapped", s.Session)
		}
		tr := Trajectory{Phi: make([]float64, n*d), Next: make([]float64, n*d), Rho: make([]float64, n), R: make([]float64, n)}
		for t := range s.Steps {
			st := &s.Steps[t]
			if err := f.Phi(tr.Phi[t*d:(t+1)*d], st.Obs); err != nil {
				return nil, fmt.Errorf("session %q step %d: %w", s.Session, t, err)
			}
			p := target.Prob(st.Obs, st.Action)
			if math.IsNaN(p) || p < 0 || p > 1 {
				return nil, fmt.Errorf("gtd2: session %q step %d: target probability %v", s.Session, t, p)
			}
			tr.Rho[t] = p / math.Exp(st.LogP)
			tr.R[t] = st.Reward
		}
		for t := 0; t+1 < n; t++ {
			copy(tr.Next[t*d:(t+1)*d], tr.Phi[(t+1)*d:(t+2)*d])
		}
		if !s.Terminal {
			if err := f.Phi(tr.Next[(n-1)*d:], s.FinalObs); err != nil {
				return nil, fmt.Errorf("session %q final_obs: %w", s.Session, err)
			}
		}
		tr.Start = tr.Phi[:d]
		ds.Trajs[i] = tr
	}
	return ds, nil
}

// Config configures GPOPE.
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
	// sampling, so that is what runs). The sum is divided by Q n.
	Q float64
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
	}
	if !(c.Q > 0 && c.Q <= 1) {
		errs = append(errs, fmt.Errorf("gtd2: sampling rate q = %v, want 0 < q <= 1", c.Q))
	}
	return errors.Join(errs...)
}

// Result is GPOPE's output: the released primal weights theta (and the dual
// y, released too), and what ran.
type Result struct {
	Theta []float64 `json:"theta"`
	Y     []float64 `json:"y"`
	// Clipped counts per-trajectory gradients that hit the clip.
	Clipped int `json:"clipped"`
	// Sampled counts trajectory gradients used over all steps.
	Sampled int `json:"sampled"`
}

// GPOPE runs Algorithm 1 of the GPOPE paper (ALGORITHMS.md §4) with Poisson
// sampling; every draw comes from rng.
func GPOPE(ds *Dataset, c Config, rng *rand.Rand) (Result, error) {
	if err := c.Validate(); err != nil {
		return Result{}, err
	}
	d := ds.Dim
	theta, y := make([]float64, d), make([]float64, d)
	g, sum := make([]float64, 2*d), make([]float64, 2*d)
	var res Result
	denom := c.Q * float64(len(ds.Trajs))
	gauss := noise.NewGaussian(rng)
	for t := 1; t <= c.Iters; t++ {
		clear(sum)
		for i := range ds.Trajs {
			if c.Q < 1 && !noise.Bernoulli(rng, c.Q) {
				continue
			}
			ds.gradient(g, &ds.Trajs[i], theta, y)
			if clip(g, c.Clip) {
				res.Clipped++
			}
			res.Sampled++
			for k := range sum {
				sum[k] += g[k]
			}
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
			gk := sum[k] / denom
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
	res.Theta, res.Y = theta, y
	return res, nil
}

// gradient writes one trajectory's primal-dual gradient G = [-A^T y;
// -(b - A theta - M y)] from the averages over its transitions, computed
// without forming A, b or M:
//
//	G_theta = -mean rho (phi - gamma phi') (phi . y)
//	G_y     = -mean phi (rho delta - phi . y),  delta = r + gamma phi'.theta - phi.theta.
func (ds *Dataset) gradient(g []float64, tr *Trajectory, theta, y []float64) {
	d := ds.Dim
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
		delta := tr.R[t] + ds.Gamma*nt - pt
		a := rho * py
		b := rho*delta - py
		for k := 0; k < d; k++ {
			g[k] -= a * (phi[k] - ds.Gamma*next[k])
			g[d+k] -= b * phi[k]
		}
	}
	inv := 1 / float64(n)
	for k := range g {
		g[k] *= inv
	}
}

// clip scales v to L2 norm at most c and reports whether it did.
func clip(v []float64, c float64) bool {
	var s float64
	for _, x := range v {
		s += x * x
	}
	if n := math.Sqrt(s); n > c {
		f := c / n
		for k := range v {
			v[k] *= f
		}
		return true
	}
	return false
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
