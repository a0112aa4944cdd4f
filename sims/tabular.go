package sims

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Tabular is a finite MDP given by its tables, for learners that need the
// true model (regret, exact values).
type Tabular struct {
	// P[s][a][s2] is the probability of moving from s to s2 under action a.
	P [][][]float64
	// R[s][a] is the (deterministic) reward of taking a in s, received
	// before the transition.
	R [][]float64
}

// NumStates is the number of states.
func (m Tabular) NumStates() int { return len(m.P) }

// NumActions is the number of actions.
func (m Tabular) NumActions() int { return len(m.R[0]) }

// OptimalValues solves the finite-horizon problem by backward induction:
// v[h][s] is the optimal expected return of the remaining horizon-h steps
// from state s at step h (v[horizon] is all zeros), and greedy[h][s] is an
// optimal action at step h (the lowest index among ties). V*_0(start) is
// v[0][start].
func (m Tabular) OptimalValues(horizon int) (v [][]float64, greedy [][]int) {
	ns, na := m.NumStates(), m.NumActions()
	v = make([][]float64, horizon+1)
	greedy = make([][]int, horizon)
	v[horizon] = make([]float64, ns)
	for h := horizon - 1; h >= 0; h-- {
		v[h] = make([]float64, ns)
		greedy[h] = make([]int, ns)
		for s := range ns {
			best, arg := math.Inf(-1), 0
			for a := range na {
				q := m.R[s][a]
				for s2, p := range m.P[s][a] {
					q += p * v[h+1][s2]
				}
				if q > best {
					best, arg = q, a
				}
			}
			v[h][s], greedy[h][s] = best, arg
		}
	}
	return v, greedy
}

// PolicyValue returns the expected return over horizon steps from each
// state of the stationary stochastic policy pi (pi[s][a] = probability of a
// in s), by backward induction. It returns an error for a policy of the
// wrong shape or whose rows are not distributions.
func (m Tabular) PolicyValue(pi [][]float64, horizon int) ([]float64, error) {
	if err := m.checkPolicy(pi, nil); err != nil {
		return nil, err
	}
	ns := m.NumStates()
	next, cur := make([]float64, ns), make([]float64, ns)
	for range horizon {
		for s := range ns {
			var vs float64
			for a, pa := range pi[s] {
				if pa == 0 {
					continue
				}
				q := m.R[s][a]
				for s2, p := range m.P[s][a] {
					q += p * next[s2]
				}
				vs += pa * q
			}
			cur[s] = vs
		}
		next, cur = cur, next
	}
	return next, nil
}

// checkPolicy validates pi[s][a] against the model's shape; rows of states
// with skip[s] set are not checked.
func (m Tabular) checkPolicy(pi [][]float64, skip []bool) error {
	ns, na := m.NumStates(), m.NumActions()
	if len(pi) != ns {
		return fmt.Errorf("sims: policy has %d rows, want one per state (%d)", len(pi), ns)
	}
	for s, row := range pi {
		if skip != nil && skip[s] {
			continue
		}
		if len(row) != na {
			return fmt.Errorf("sims: policy row %d has %d entries, want %d", s, len(row), na)
		}
		var sum float64
		for a, p := range row {
			if !(p >= 0 && p <= 1) {
				return fmt.Errorf("sims: policy[%d][%d] = %v is not a probability", s, a, p)
			}
			sum += p
		}
		if math.Abs(sum-1) > 1e-9 {
			return fmt.Errorf("sims: policy row %d sums to %v, want 1", s, sum)
		}
	}
	return nil
}

// sample draws an index from the distribution p with the uniform u in [0, 1),
// by inverting the cumulative sum; rounding slack goes to the last index with
// positive probability.
func sample(p []float64, u float64) int {
	last := 0
	var c float64
	for i, pi := range p {
		if pi == 0 {
			continue
		}
		c += pi
		last = i
		if u < c {
			return i
		}
	}
	return last
}

// oneHot writes the one-hot encoding of i into obs.
func oneHot(obs []float64, i int) {
	for j := range obs {
		obs[j] = 0
	}
	obs[i] = 1
}

// setIndexState validates a one-component state holding an integer index in
// [0, n) and returns it.
func setIndexState(state []float64, n int) (int, error) {
	if err := checkState(state, "state"); err != nil {
		return 0, err
	}
	v := state[0]
	if v != math.Trunc(v) || v < 0 || v >= float64(n) {
		return 0, fmt.Errorf("%w: state %v is not an integer in [0, %d)", ErrBadState, v, n)
	}
	return int(v), nil
}

// uniformInt draws an integer uniformly from [0, n).
func uniformInt(rng *rand.Rand, n int) int { return rng.IntN(n) }
