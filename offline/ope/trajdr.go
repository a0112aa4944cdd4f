package ope

import "gonum.org/v1/gonum/mat"

// Names of the doubly robust trajectory estimators.
const (
	// EstTrajDR is the per-decision doubly robust estimate on trajectories
	// (Jiang & Li 2016).
	EstTrajDR = "DR-episode"
	// EstTrajWDR is the weighted doubly robust estimate on trajectories
	// (Thomas & Brunskill 2016).
	EstTrajWDR = "WDR-episode"
)

// fqeMaxIters caps the fitted-Q iterations: min(T, fqeMaxIters), T the
// longest episode's length. T iterations carry the reward of every step
// of a T-step episode back to its start.
const fqeMaxIters = 50

// TrajDRNote qualifies the percentile bootstrap of DR-episode and
// WDR-episode.
const TrajDRNote = "the bootstrap resamples episodes with the cross-fitted action-value model held fixed (not refitted per resample)"

// qModel writes Qhat(s_{i,t}, a) for every action a into dst: the
// model's estimate of the target's expected discounted return from step t
// of trajectory i on, having taken a there.
type qModel func(i, t int, dst []float64)

// drTerms are the doubly robust parts of every trajectory, laid out [i][t]
// for t < T like trajTerms (past an episode's end both are 0: an ended
// episode is absorbing with reward 0 and value 0):
//
//	x_{i,t} = gamma^t rho_{i,t} (r_{i,t} - Qhat(s_{i,t}, a_{i,t}))
//	y_{i,t} = gamma^t rho_{i,t-1} Vhat(s_{i,t}),  Vhat(s) = sum_a pi(a | s) Qhat(s, a),
//
// with rho_{i,-1} = 1.
type drTerms struct {
	tt   *trajTerms
	x, y [][]float64
}

func (tt *trajTerms) drTerms(q qModel) *drTerms {
	d := &drTerms{tt: tt, x: make([][]float64, tt.n), y: make([][]float64, tt.n)}
	qa := make([]float64, tt.actions)
	for i, tr := range tt.ts {
		d.x[i], d.y[i] = make([]float64, tt.T), make([]float64, tt.T)
		disc := 1.0
		for t, s := range tr {
			q(i, t, qa)
			v := 0.0
			for a, p := range s.Targets {
				v += p * qa[a]
			}
			d.x[i][t] = disc * tt.rho[i][t] * (s.Reward - qa[s.Action])
			d.y[i][t] = disc * tt.rhoPrev(i, t) * v
			disc *= tt.gamma
		}
	}
	return d
}

// rhoPrev is rho_{i,t-1}, 1 at t = 0.
func (tt *trajTerms) rhoPrev(i, t int) float64 {
	if t == 0 {
		return 1
	}
	return tt.rho[i][t-1]
}

// perTrajectory returns each trajectory's DR term sum_t (x_{i,t} +
// y_{i,t}), whose mean is DR.
func (d *drTerms) perTrajectory() []float64 {
	out := make([]float64, d.tt.n)
	for i := range out {
		for t := range d.x[i] {
			out[i] += d.x[i][t] + d.y[i][t]
		}
	}
	return out
}

// drMean is the per-decision doubly robust estimate over the trajectories idx
// (Jiang & Li 2016, "Doubly Robust Off-policy Value Evaluation for
// Reinforcement Learning", the DR estimator defined by the
// recursion V_DR^{H+1-t} = Vhat(s_t) + rho_t (r_t + gamma V_DR^{H-t} -
// Qhat(s_t, a_t)), V_DR^0 = 0, averaged over the trajectories), in its
// unrolled form (the same sum as Thomas & Brunskill 2016's DR):
//
//	V_DR = (1/n) sum_i sum_t gamma^t [rho_{i,t} (r_{i,t} - Qhat(s_{i,t}, a_{i,t})) + rho_{i,t-1} Vhat(s_{i,t})].
//
// per are the per-trajectory terms.
func drMean(per []float64, idx []int) float64 {
	s := 0.0
	for _, i := range idx {
		s += per[i]
	}
	return s / float64(len(idx))
}

// wdr is the weighted doubly robust estimate over the trajectories idx
// (Thomas & Brunskill 2016, "Data-Efficient Off-Policy Policy Evaluation
// for Reinforcement Learning", the WDR estimator): DR with the
// per-decision weights rho_{i,t} / n replaced by the self-normalised
// w_{i,t} = rho_{i,t} / sum_j rho_{j,t} (w_{i,-1} = 1/n),
//
//	V_WDR = sum_t gamma^t [ sum_i w_{i,t} (r_{i,t} - Qhat(s_{i,t}, a_{i,t})) + sum_i w_{i,t-1} Vhat(s_{i,t}) ],
//
// an ended episode keeping its last rho with reward, Qhat and Vhat 0, as
// in pdwis. nx, dx, ny, dy are scratch of length T.
func (d *drTerms) wdr(idx []int, nx, dx, ny, dy []float64) float64 {
	d.sums(idx, nx, dx, ny, dy)
	v := 0.0
	for t := range nx {
		if dx[t] > 0 {
			v += nx[t] / dx[t]
		}
		if dy[t] > 0 {
			v += ny[t] / dy[t]
		}
	}
	return v
}

// sums fills, for every t, nx = sum_i x_{i,t}, dx = sum_i rho_{i,t}, ny =
// sum_i y_{i,t} and dy = sum_i rho_{i,t-1} over idx.
func (d *drTerms) sums(idx []int, nx, dx, ny, dy []float64) {
	for _, s := range [][]float64{nx, dx, ny, dy} {
		clear(s)
	}
	tt := d.tt
	for _, i := range idx {
		for t := range nx {
			nx[t] += d.x[i][t]
			dx[t] += tt.rho[i][t]
			ny[t] += d.y[i][t]
			dy[t] += tt.rhoPrev(i, t)
		}
	}
}

// wdrInfluence returns each trajectory's influence term of WDR (the delta
// method on each ratio of means, as pdwisInfluence for PDWIS):
//
//	psi_i = sum_t [ (x_{i,t} - X_t rho_{i,t}) / mean_i rho_{i,t} + (y_{i,t} - Y_t rho_{i,t-1}) / mean_i rho_{i,t-1} ],
//
// X_t and Y_t the two ratios at t, so that Var(WDR) ~ Var(psi) / n.
func (d *drTerms) wdrInfluence() []float64 {
	tt := d.tt
	all := make([]int, tt.n)
	for i := range all {
		all[i] = i
	}
	nx, dx, ny, dy := make([]float64, tt.T), make([]float64, tt.T), make([]float64, tt.T), make([]float64, tt.T)
	d.sums(all, nx, dx, ny, dy)
	n := float64(tt.n)
	psi := make([]float64, tt.n)
	for i := range psi {
		for t := range nx {
			if dx[t] > 0 {
				psi[i] += (d.x[i][t] - nx[t]/dx[t]*tt.rho[i][t]) / (dx[t] / n)
			}
			if dy[t] > 0 {
				psi[i] += (d.y[i][t] - ny[t]/dy[t]*tt.rhoPrev(i, t)) / (dy[t] / n)
			}
		}
	}
	return psi
}

// fqeFeatures writes the model's features of step t of trajectory i:
// (1, Obs, t/T), T the longest episode's length (the step index, since the
// episodes have a finite horizon and the values depend on the steps left).
func (tt *trajTerms) fqeFeatures(dst []float64, i, t int) {
	dst[0] = 1
	copy(dst[1:], tt.ts[i][t].Obs)
	dst[len(dst)-1] = float64(t) / float64(tt.T)
}

// valueRange is the range of the return from step t to an episode's end,
// at most T - t steps of rewards in [rmin, rmax]: [min(rmin, rmin S),
// max(rmax, rmax S)], S = sum_{s < T-t} gamma^s (an episode may end after
// any number of steps).
func (tt *trajTerms) valueRange(o Options) (lo, hi []float64) {
	lo, hi = make([]float64, tt.T), make([]float64, tt.T)
	s := 0.0
	for t := tt.T - 1; t >= 0; t-- {
		s = 1 + tt.gamma*s
		lo[t], hi[t] = min(o.RewardMin, o.RewardMin*s), max(o.RewardMax, o.RewardMax*s)
	}
	return lo, hi
}

// crossFitQ fits the target's action values by fitted-Q evaluation on
// every fold's complement and returns the model that answers for each
// trajectory with the fit that did not see it: the folds are a random
// partition of the trajectories into K = min(Options.Folds, n) near-equal
// parts, as crossFit does for one-step decisions (Chernozhukov et al.
// 2018, "Double/debiased machine learning for treatment and structural
// parameters"), so that no trajectory's Qhat was fitted on its own
// rewards and DR's unbiasedness holds whatever the model.
func (tt *trajTerms) crossFitQ(o Options) qModel {
	K := min(o.Folds, tt.n)
	fold := make([]int, tt.n)
	for i, j := range o.Rand.Perm(tt.n) {
		fold[j] = i % K
	}
	fits := make([]*fqeFit, K)
	for k := range K {
		fits[k] = tt.fitFQE(o, func(i int) bool { return fold[i] != k })
	}
	return func(i, t int, dst []float64) { fits[fold[i]].predict(i, t, dst) }
}

// fqeFit is one fitted-Q model: beta[a] per action on fqeFeatures,
// predictions clipped to the value range of their step.
type fqeFit struct {
	tt     *trajTerms
	beta   [][]float64
	lo, hi []float64
	phi    []float64
}

func (f *fqeFit) predict(i, t int, dst []float64) {
	f.tt.fqeFeatures(f.phi, i, t)
	f.predictPhi(f.phi, t, dst)
}

// fitFQE is fitted-Q evaluation of the target on the trajectories with
// use(i) (Le, Voloshin & Yue 2019, "Batch Policy Learning under
// Constraints", FQE): starting from Qhat_0 = 0, iteration k
// regresses, for each action a, the targets
//
//	y_{i,t} = r_{i,t} + gamma sum_a' pi(a' | s_{i,t+1}) Qhat_{k-1}(s_{i,t+1}, a')   (0 after the episode's last step)
//
// of the steps that took a on their features (1, Obs, t/T) by ridge
// regression, beta_a = (Phi_a' Phi_a + Lambda)^{-1} Phi_a' y, Lambda =
// Options.Ridge on every coefficient but the intercept's (unpenalised),
// for min(T, fqeMaxIters) iterations; the Gram matrices do not change
// between iterations and are factorised once (gonum's Cholesky). An action
// no training step took predicts 0.
func (tt *trajTerms) fitFQE(o Options, use func(int) bool) *fqeFit {
	dim := tt.obsDim + 2
	lo, hi := tt.valueRange(o)
	f := &fqeFit{tt: tt, beta: make([][]float64, tt.actions), lo: lo, hi: hi, phi: make([]float64, dim)}
	for a := range f.beta {
		f.beta[a] = make([]float64, dim)
	}
	// The training steps, in order within each trajectory.
	type row struct {
		a, t int
		r    float64
		last bool // the episode's last step
		tg   []float64
		phi  []float64
	}
	var rows []row
	for i, tr := range tt.ts {
		if !use(i) {
			continue
		}
		for t, s := range tr {
			phi := make([]float64, dim)
			tt.fqeFeatures(phi, i, t)
			rows = append(rows, row{a: s.Action, t: t, r: s.Reward, last: t == len(tr)-1, tg: s.Targets, phi: phi})
		}
	}
	if len(rows) == 0 {
		return f
	}
	gram := make([][]float64, tt.actions)
	for a := range gram {
		gram[a] = make([]float64, dim*dim)
	}
	for _, rw := range rows {
		g := gram[rw.a]
		for j, pj := range rw.phi {
			for k := j; k < dim; k++ {
				g[j*dim+k] += pj * rw.phi[k]
			}
		}
	}
	lam := max(o.Ridge, 1e-8)
	chol := make([]*mat.Cholesky, tt.actions)
	for a, g := range gram {
		if g[0] == 0 { // no training step took a
			continue
		}
		for j := range dim {
			if j > 0 {
				g[j*dim+j] += lam
			}
			for k := range j {
				g[j*dim+k] = g[k*dim+j]
			}
		}
		var ch mat.Cholesky
		if ch.Factorize(mat.NewSymDense(dim, g)) {
			chol[a] = &ch
		}
	}
	q := make([]float64, tt.actions)
	next := make([]float64, len(rows)) // Vhat_{k-1} of each row's state
	rhs := make([][]float64, tt.actions)
	for a := range rhs {
		rhs[a] = make([]float64, dim)
	}
	var sol mat.VecDense
	for range min(tt.T, fqeMaxIters) {
		for r := range rows {
			rw := &rows[r]
			// Vhat_{k-1}(s) = sum_a pi(a | s) Qhat_{k-1}(s, a)
			f.predictPhi(rw.phi, rw.t, q)
			v := 0.0
			for a, p := range rw.tg {
				v += p * q[a]
			}
			next[r] = v
		}
		for a := range rhs {
			clear(rhs[a])
		}
		for r := range rows {
			rw := &rows[r]
			y := rw.r
			if !rw.last {
				y += tt.gamma * next[r+1] // the next row is the episode's next step
			}
			b := rhs[rw.a]
			for j, p := range rw.phi {
				b[j] += p * y
			}
		}
		for a, ch := range chol {
			if ch == nil {
				continue
			}
			if err := ch.SolveVecTo(&sol, mat.NewVecDense(dim, rhs[a])); err == nil {
				for j := range dim {
					f.beta[a][j] = sol.AtVec(j)
				}
			}
		}
	}
	return f
}

// predictPhi is predict on given features of a step t.
func (f *fqeFit) predictPhi(phi []float64, t int, dst []float64) {
	for a, b := range f.beta {
		v := 0.0
		for j, p := range phi {
			v += p * b[j]
		}
		dst[a] = min(f.hi[t], max(f.lo[t], v))
	}
}
