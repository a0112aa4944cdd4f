package gtd2

import (
	"errors"
	"fmt"

	"gonum.org/v1/gonum/mat"
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
	d := ds.Dim
	A, M := mat.NewDense(d, d, nil), mat.NewDense(d, d, nil)
	b := mat.NewVecDense(d, nil)
	var n float64
	for i := range ds.Trajs {
		tr := &ds.Trajs[i]
		for t := 0; t < tr.Len(); t++ {
			phi := tr.Phi[t*d : (t+1)*d]
			next := tr.Next[t*d : (t+1)*d]
			rho := 1.0
			if weighted {
				rho = tr.Rho[t]
			}
			for r := 0; r < d; r++ {
				if phi[r] == 0 {
					continue
				}
				for c := 0; c < d; c++ {
					A.Set(r, c, A.At(r, c)+rho*phi[r]*(phi[c]-ds.Gamma*next[c]))
					M.Set(r, c, M.At(r, c)+phi[r]*phi[c])
				}
				b.SetVec(r, b.AtVec(r)+rho*tr.R[t]*phi[r])
			}
			n++
		}
	}
	A.Scale(1/n, A)
	M.Scale(1/n, M)
	b.ScaleVec(1/n, b)
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
	m := EmpiricalMoments(ds, weighted)
	d := ds.Dim
	A := mat.DenseCopyOf(m.A)
	for i := 0; i < d; i++ {
		A.Set(i, i, A.At(i, i)+ridge)
	}
	var theta mat.VecDense
	if err := theta.SolveVec(A, m.B); err != nil {
		return nil, fmt.Errorf("gtd2: LSTD system is singular (add --ridge): %w", err)
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
