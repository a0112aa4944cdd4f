package gtd2

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"dprl/sims"
)

// Moments are the GTD2 moments A, b, M (averages per transition).
type Moments struct {
	A *mat.Dense
	B *mat.VecDense
	M *mat.Dense
}

// EmpiricalMoments averages A, b and M over every transition of ds, with
// importance ratios (weighted) or without them (on-policy).
func EmpiricalMoments(ds *Dataset, weighted bool) Moments {
	m := NewMomentsSum(ds.Dim, ds.Gamma, weighted)
	for i := range ds.Trajs {
		m.Add(&ds.Trajs[i])
	}
	return m.Moments()
}

// MomentsSum accumulates the empirical moments one trajectory at a time, in
// O(d^2) memory whatever the number of trajectories: adding a dataset's
// trajectories in order gives exactly EmpiricalMoments.
type MomentsSum struct {
	d        int
	gamma    float64
	weighted bool
	a, m     *mat.Dense
	b        *mat.VecDense
	n        float64
}

// NewMomentsSum returns an empty sum of features of dimension dim.
func NewMomentsSum(dim int, gamma float64, weighted bool) *MomentsSum {
	return &MomentsSum{d: dim, gamma: gamma, weighted: weighted,
		a: mat.NewDense(dim, dim, nil), m: mat.NewDense(dim, dim, nil), b: mat.NewVecDense(dim, nil)}
}

// Add adds a trajectory's transitions.
func (ms *MomentsSum) Add(tr *Trajectory) {
	d, A, M, b := ms.d, ms.a, ms.m, ms.b
	for t := 0; t < tr.Len(); t++ {
		phi := tr.Phi[t*d : (t+1)*d]
		next := tr.Next[t*d : (t+1)*d]
		rho := 1.0
		if ms.weighted {
			rho = tr.Rho[t]
		}
		for r := 0; r < d; r++ {
			if phi[r] == 0 {
				continue
			}
			for c := 0; c < d; c++ {
				A.Set(r, c, A.At(r, c)+rho*phi[r]*(phi[c]-ms.gamma*next[c]))
				M.Set(r, c, M.At(r, c)+phi[r]*phi[c])
			}
			b.SetVec(r, b.AtVec(r)+rho*tr.R[t]*phi[r])
		}
		ms.n++
	}
}

// Moments returns the averages of the transitions added so far.
func (ms *MomentsSum) Moments() Moments {
	d := ms.d
	A, M := mat.NewDense(d, d, nil), mat.NewDense(d, d, nil)
	b := mat.NewVecDense(d, nil)
	A.Scale(1/ms.n, ms.a)
	M.Scale(1/ms.n, ms.m)
	b.ScaleVec(1/ms.n, ms.b)
	return Moments{A: A, B: b, M: M}
}

// LSTD solves (A + ridge I) theta = b: LSTD(0) on-policy (weighted false) or
// importance-weighted off-policy LSTD (weighted true; with lambda = 0 the
// weighted importance sampling LSTD of Mahmood et al. 2014 reduces to this
// normalised form). Not private.
func LSTD(ds *Dataset, weighted bool, ridge float64) ([]float64, error) {
	if ridge < 0 {
		return nil, fmt.Errorf("gtd2: ridge = %v, want >= 0", ridge)
	}
	return SolveLSTD(EmpiricalMoments(ds, weighted), ridge)
}

// SolveLSTD solves (A + ridge I) theta = b for moments m (as LSTD does with
// the moments of a dataset, here from a MomentsSum).
func SolveLSTD(m Moments, ridge float64) ([]float64, error) {
	if ridge < 0 {
		return nil, fmt.Errorf("gtd2: ridge = %v, want >= 0", ridge)
	}
	d, _ := m.A.Dims()
	A := mat.DenseCopyOf(m.A)
	for i := 0; i < d; i++ {
		A.Set(i, i, A.At(i, i)+ridge)
	}
	var theta mat.VecDense
	if err := theta.SolveVec(A, m.B); err != nil {
		return nil, fmt.Errorf("gtd2: LSTD system is singular (add --ridge): %w", err)
	}
	for k, v := range theta.RawVector().Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("gtd2: LSTD weight %d is %v: an importance ratio or reward of the data overflowed (LSTD bounds no contribution)", k, v)
		}
	}
	return theta.RawVector().Data, nil
}

// MSPBE returns the mean squared projected Bellman error of theta under the
// moments: (b - A theta)^T M^-1 (b - A theta).
func MSPBE(m Moments, theta []float64) (float64, error) {
	d := len(theta)
	r, c := m.A.Dims()
	if r != d || c != d {
		return 0, errors.New("gtd2: MSPBE: dimension mismatch")
	}
	var res mat.VecDense
	res.MulVec(m.A, mat.NewVecDense(d, theta))
	res.SubVec(m.B, &res)
	var x mat.VecDense
	if err := x.SolveVec(m.M, &res); err != nil {
		return 0, fmt.Errorf("gtd2: MSPBE: M is singular: %w", err)
	}
	return mat.Dot(&res, &x), nil
}

// ModelMoments computes the exact moments of a finite MDP under behaviour
// policy mu and target pi: phi[s] the features of state s, dist[s] the
// behaviour's state distribution, P[s][a][s'] the transitions (rows may sum
// to less than 1 where the episode ends), R[s][a] the expected reward.
func ModelMoments(phi [][]float64, dist []float64, P [][][]float64, R [][]float64, mu, pi [][]float64, gamma float64) Moments {
	d := len(phi[0])
	A, M := mat.NewDense(d, d, nil), mat.NewDense(d, d, nil)
	b := mat.NewVecDense(d, nil)
	next := make([]float64, d)
	for s := range phi {
		if dist[s] == 0 {
			continue
		}
		for a := range P[s] {
			if mu[s][a] == 0 {
				continue
			}
			w := dist[s] * mu[s][a] * pi[s][a] / mu[s][a]
			clear(next)
			for s2, p := range P[s][a] {
				for k := range next {
					next[k] += p * phi[s2][k]
				}
			}
			for r := 0; r < d; r++ {
				for c := 0; c < d; c++ {
					A.Set(r, c, A.At(r, c)+w*phi[s][r]*(phi[s][c]-gamma*next[c]))
				}
				b.SetVec(r, b.AtVec(r)+w*R[s][a]*phi[s][r])
			}
		}
		for r := 0; r < d; r++ {
			for c := 0; c < d; c++ {
				M.Set(r, c, M.At(r, c)+dist[s]*phi[s][r]*phi[s][c])
			}
		}
	}
	return Moments{A: A, B: b, M: M}
}

// FillUnvisited makes M invertible on features the moments never saw: for
// every index i whose row of M, row of A and entry of b are all zero (a
// tabular state that is never visited, such as an absorbing end state), it
// sets M_ii = 1. The MSPBE is unchanged: the residual b - A theta is zero at
// such an index.
func (m Moments) FillUnvisited() {
	d, _ := m.M.Dims()
	for i := range d {
		zero := m.B.AtVec(i) == 0
		for j := 0; j < d && zero; j++ {
			zero = m.M.At(i, j) == 0 && m.A.At(i, j) == 0
		}
		if zero {
			m.M.Set(i, i, 1)
		}
	}
}

// CheckOnPolicy returns an error naming the first transition whose
// importance ratio is not 1 (to a relative 1e-6, the precision of logged
// probabilities): the data was not generated by the target policy.
func (ds *Dataset) CheckOnPolicy() error {
	for i := range ds.Trajs {
		if t, r := ds.Trajs[i].OffPolicyStep(); t >= 0 {
			return fmt.Errorf("gtd2: trajectory %d step %d: target/behaviour probability ratio %.6g != 1: the data is off-policy for this target", i, t, r)
		}
	}
	return nil
}

// OffPolicyStep returns the first step of the trajectory whose importance
// ratio is not 1 (to a relative 1e-6, as CheckOnPolicy) and the ratio, or
// -1 when every ratio is 1.
func (tr *Trajectory) OffPolicyStep() (int, float64) {
	for t, r := range tr.Rho {
		if math.Abs(r-1) > 1e-6 {
			return t, r
		}
	}
	return -1, 1
}

// ChainMoments returns the exact GTD2 moments of the chain walk (sims.Chain)
// for behaviour mu and target pi (mu[s][a], pi[s][a] over the N-1
// non-terminal states), under features f of the one-hot states: the state
// weighting is the behaviour's expected visits per episode from the
// uniform start (normalised; truncation ignored), and transitions into the
// absorbing end have no successor features, as in the logs. Unvisited
// features are filled (FillUnvisited) so that MSPBE is defined.
func ChainMoments(c sims.ChainConfig, mu, pi [][]float64, f Features, gamma float64) (Moments, error) {
	m, err := c.Model()
	if err != nil {
		return Moments{}, err
	}
	n := c.States
	k := n - 1
	if len(mu) < k || len(pi) < k {
		return Moments{}, fmt.Errorf("gtd2: chain moments: policies for %d states, want %d", min(len(mu), len(pi)), k)
	}
	// Visits v = d0 (I - P_mu)^-1 over the non-terminal states.
	a := mat.NewDense(k, k, nil)
	for s := range k {
		a.Set(s, s, 1)
		for act, p := range mu[s] {
			for s2 := range k {
				if q := m.P[s][act][s2]; q != 0 {
					a.Set(s2, s, a.At(s2, s)-p*q) // transposed: solve (I - P_mu)^T v = d0
				}
			}
		}
	}
	d0 := mat.NewVecDense(k, nil)
	for s := range k {
		d0.SetVec(s, 1/float64(k))
	}
	var v mat.VecDense
	if err := v.SolveVec(a, d0); err != nil {
		return Moments{}, fmt.Errorf("gtd2: chain moments: the behaviour never reaches the end: %w", err)
	}
	dist := make([]float64, n)
	var tot float64
	for s := range k {
		dist[s] = v.AtVec(s)
		tot += dist[s]
	}
	phi := make([][]float64, n)
	obs := make([]float64, n)
	P := make([][][]float64, n)
	muT, piT := make([][]float64, n), make([][]float64, n)
	for s := range n {
		dist[s] /= tot
		clear(obs)
		obs[s] = 1
		phi[s] = make([]float64, f.Dim())
		if err := f.Phi(phi[s], obs); err != nil {
			return Moments{}, err
		}
		P[s] = make([][]float64, 2)
		for act := range 2 {
			P[s][act] = append([]float64(nil), m.P[s][act]...)
			P[s][act][n-1] = 0 // terminal: no successor features
		}
		if s < k {
			muT[s], piT[s] = mu[s], pi[s]
		} else {
			muT[s], piT[s] = []float64{0.5, 0.5}, []float64{0.5, 0.5}
		}
	}
	mom := ModelMoments(phi, dist, P, m.R, muT, piT, gamma)
	mom.FillUnvisited()
	return mom, nil
}
