package ope

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// crossFit returns qhat[i][a], the reward model's prediction for decision
// i's context and every action, each from a model fitted on the other
// folds only: the folds are a random partition of the log into K near-equal
// parts (cross-fitting; Chernozhukov et al. 2018, "Double/debiased machine
// learning for treatment and structural parameters"). The
// model of each action is ridge regression of the reward on the context
// (intercept unpenalised, fitted on centred data), clipped to the reward
// range; an action with no training decision predicts their mean reward.
func crossFit(p *prepared, o Options) [][]float64 {
	K := min(o.Folds, p.n)
	fold := make([]int, p.n)
	for i, j := range o.Rand.Perm(p.n) {
		fold[j] = i % K
	}
	q := make([][]float64, p.n)
	for i := range q {
		q[i] = make([]float64, p.actions)
	}
	for k := range K {
		models := fitRidge(p, o, func(i int) bool { return fold[i] != k })
		for i := range p.n {
			if fold[i] != k {
				continue
			}
			for a := range p.actions {
				q[i][a] = min(o.RewardMax, max(o.RewardMin, models[a].predict(p.x[i])))
			}
		}
	}
	return q
}

// ridgeModel predicts ybar + (x - xbar) . beta.
type ridgeModel struct {
	ybar       float64
	xbar, beta []float64
}

func (m ridgeModel) predict(x []float64) float64 {
	v := m.ybar
	for j, b := range m.beta {
		v += (x[j] - m.xbar[j]) * b
	}
	return v
}

// fitRidge fits one ridge model per action on the decisions with use(i):
// beta = (Xc' Xc + lambda I)^{-1} Xc' yc on the centred data (solved with
// gonum's Cholesky).
func fitRidge(p *prepared, o Options, use func(int) bool) []ridgeModel {
	d := p.dim
	rows := make([][]int, p.actions)
	all, cnt := 0.0, 0
	for i := range p.n {
		if use(i) {
			all += p.r[i]
			cnt++
			rows[p.a[i]] = append(rows[p.a[i]], i)
		}
	}
	if cnt > 0 {
		all /= float64(cnt)
	}
	models := make([]ridgeModel, p.actions)
	xc := make([]float64, d)
	for a := range p.actions {
		m := ridgeModel{ybar: all, xbar: make([]float64, d), beta: make([]float64, d)}
		if len(rows[a]) > 0 {
			fitAction(p, o, rows[a], &m, xc)
		}
		models[a] = m
	}
	return models
}

// fitAction fits m on the given rows.
func fitAction(p *prepared, o Options, rows []int, m *ridgeModel, xc []float64) {
	d := p.dim
	m.ybar = 0
	for _, i := range rows {
		m.ybar += p.r[i]
		for j, v := range p.x[i] {
			m.xbar[j] += v
		}
	}
	fn := float64(len(rows))
	m.ybar /= fn
	for j := range m.xbar {
		m.xbar[j] /= fn
	}
	if d == 0 {
		return
	}
	A := make([]float64, d*d)
	b := make([]float64, d)
	for _, i := range rows {
		for j, v := range p.x[i] {
			xc[j] = v - m.xbar[j]
		}
		y := p.r[i] - m.ybar
		for j := range d {
			b[j] += xc[j] * y
			for k := j; k < d; k++ {
				A[j*d+k] += xc[j] * xc[k]
			}
		}
	}
	lam := max(o.Ridge, 1e-8)
	for j := range d {
		A[j*d+j] += lam
		for k := range j {
			A[j*d+k] = A[k*d+j]
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(mat.NewSymDense(d, A)) {
		return // not positive definite (cannot happen with lambda > 0): predict the mean
	}
	var beta mat.VecDense
	if err := ch.SolveVecTo(&beta, mat.NewVecDense(d, b)); err == nil {
		for j := range d {
			m.beta[j] = beta.AtVec(j)
		}
	}
}

// drParts returns the direct-method part dm_i = sum_a pi(a | x_i) qhat(x_i, a)
// and the residual r_i - qhat(x_i, a_i) of every decision.
func drParts(p *prepared, o Options) (dm, res []float64, err error) {
	if p.pi == nil {
		return nil, nil, ErrNoPolicy
	}
	if p.q == nil { // fitted once per log, shared by DR and DRos
		p.q = crossFit(p, o)
	}
	q := p.q
	dm, res = make([]float64, p.n), make([]float64, p.n)
	for i := range p.n {
		for a, pa := range p.pi[i] {
			dm[i] += pa * q[i][a]
		}
		res[i] = p.r[i] - q[i][p.a[i]]
	}
	return dm, res, nil
}

// DR is the doubly robust estimate (Dudik, Langford & Li 2011, "Doubly
// Robust Policy Evaluation and Learning", Section 2, the DR estimator):
//
//	V_DR = (1/n) sum_i [ sum_a pi(a | x_i) qhat(x_i, a) + w_i (r_i - qhat(x_i, a_i)) ],
//
// with qhat cross-fitted over Options.Folds folds so that no decision's
// prediction was fitted on its own reward. Needs Log.Policy.
func DR(l *Log, opt Options) (Estimate, error) {
	p, o, err := start(l, opt)
	if err != nil {
		return Estimate{}, err
	}
	return dr(p, o)
}

func dr(p *prepared, o Options) (Estimate, error) {
	dm, res, err := drParts(p, o)
	if err != nil {
		return Estimate{}, fmt.Errorf("DR: %w", err)
	}
	t := terms{num: make([]float64, p.n)}
	for i := range t.num {
		t.num[i] = dm[i] + p.w[i]*res[i]
	}
	return Estimate{Estimator: EstDR, Value: t.value(), Intervals: intervals(t, o)}, nil
}

// DRos is doubly robust with optimistic shrinkage (Su, Dimakopoulou,
// Krishnamurthy & Dudik 2020, "Doubly robust off-policy evaluation with
// shrinkage", the optimistic shrinkage weights):
//
//	w_hat_i = lambda w_i / (w_i^2 + lambda),
//	V = (1/n) sum_i [ sum_a pi(a | x_i) qhat(x_i, a) + w_hat_i (r_i - qhat(x_i, a_i)) ],
//
// with the same cross-fitted qhat as DR. lambda is Options.DRosLambda, or,
// when 0, the value on a grid that minimises a plug-in bound on the mean
// squared error, bias^2 + variance / n, with bias bounded by
// (1/n) sum_i |w_i - w_hat_i| |r_i - qhat_i| (the kind of bound Su et al.
// tune lambda by; docs/ope.md). The intervals ignore that lambda was chosen
// on the same data, and the shrinkage bias.
func DRos(l *Log, opt Options) (Estimate, error) {
	p, o, err := start(l, opt)
	if err != nil {
		return Estimate{}, err
	}
	return dros(p, o)
}

func dros(p *prepared, o Options) (Estimate, error) {
	dm, res, err := drParts(p, o)
	if err != nil {
		return Estimate{}, fmt.Errorf("DRos: %w", err)
	}
	build := func(lam float64) (terms, float64) {
		t := terms{num: make([]float64, p.n)}
		bias := 0.0
		for i := range t.num {
			w := p.w[i]
			ws := lam * w / (w*w + lam)
			t.num[i] = dm[i] + ws*res[i]
			bias += math.Abs(w-ws) * math.Abs(res[i])
		}
		return t, bias / float64(p.n)
	}
	lam := o.DRosLambda
	if lam == 0 {
		best := math.Inf(1)
		for e := -2.0; e <= 6; e += 0.25 {
			cand := math.Pow(10, e)
			t, b := build(cand)
			_, v := meanVar(t.num)
			if mse := b*b + v/float64(p.n); mse < best {
				best, lam = mse, cand
			}
		}
	}
	t, _ := build(lam)
	e := Estimate{Estimator: EstDRos, Value: t.value(), Intervals: intervals(t, o)}
	for i := range e.Intervals {
		e.Intervals[i].Note = fmt.Sprintf("lambda %.3g; covers the shrunk estimator's mean, not corrected for its bias", lam)
	}
	return e, nil
}

// SwitchDR is the switch estimator in its doubly robust form (Wang, Agarwal
// & Dudik 2017, "Optimal and Adaptive Off-policy Evaluation in Contextual
// Bandits", the SWITCH estimator with DR in place of IPS): the importance
// correction is kept only for decisions whose weight is at most tau, and
// the reward model alone answers for the others,
//
//	V = (1/n) sum_i [ sum_a pi(a | x_i) qhat(x_i, a) + w_i (r_i - qhat(x_i, a_i)) 1(w_i <= tau) ].
//
// (Wang et al. switch per action, 1(rho(x, a) <= tau) for every a; on the
// logged action that is the indicator above, and the direct part over all
// actions needs no logging probability of the actions not taken.) tau is
// Options.SwitchTau, or, when 0, the value among (up to 64 of) the logged
// weights that
// minimises the plug-in bound B(tau)^2 + Var/n with B(tau) =
// (1/n) sum_i w_i |r_i - qhat_i| 1(w_i > tau) (Wang et al. tune tau by a
// bias bound and the variance of the same kind; docs/ope.md). Like DRos,
// the intervals ignore that tau was chosen on the data, and the switch's
// bias.
func SwitchDR(l *Log, opt Options) (Estimate, error) {
	p, o, err := start(l, opt)
	if err != nil {
		return Estimate{}, err
	}
	return switchDR(p, o)
}

func switchDR(p *prepared, o Options) (Estimate, error) {
	dm, res, err := drParts(p, o)
	if err != nil {
		return Estimate{}, fmt.Errorf("Switch-DR: %w", err)
	}
	build := func(tau float64) (terms, float64) {
		t := terms{num: make([]float64, p.n)}
		bias := 0.0
		for i := range t.num {
			t.num[i] = dm[i]
			if p.w[i] <= tau {
				t.num[i] += p.w[i] * res[i]
			} else {
				bias += p.w[i] * math.Abs(res[i])
			}
		}
		return t, bias / float64(p.n)
	}
	tau := o.SwitchTau
	if tau == 0 {
		cands := slices.Clone(p.w)
		slices.Sort(cands)
		cands = slices.Compact(cands)
		if len(cands) > 64 { // at most 64 candidates: evenly spaced ranks and the largest
			thin := make([]float64, 0, 64)
			for k := range 63 {
				thin = append(thin, cands[k*(len(cands)-1)/63])
			}
			cands = append(thin, cands[len(cands)-1])
		}
		best := math.Inf(1)
		for _, c := range cands {
			t, b := build(c)
			_, v := meanVar(t.num)
			if mse := b*b + v/float64(p.n); mse < best {
				best, tau = mse, c
			}
		}
	}
	t, _ := build(tau)
	e := Estimate{Estimator: EstSwitchDR, Value: t.value(), Intervals: intervals(t, o)}
	for i := range e.Intervals {
		e.Intervals[i].Note = fmt.Sprintf("tau %.3g; covers the switched estimator's mean, not corrected for its bias", tau)
	}
	return e, nil
}
