// Package svt is expert-level differentially private data release with the
// sparse vector technique (Sharma et al., "Expert-level DP offline RL";
// ALGORITHMS.md §3): DataRelease queries the prefixes of logged trajectories
// against the experts and releases the "stable" ones — prefixes that many
// experts would have produced — with (eps1, delta1)-DP at the level of one
// expert.
package svt

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"dprl/ledger/accountant"
	"dprl/offline"
)

// Expert is one expert's policy, queried for pi(a|s). Every probability must
// be at least the release's PMin (experts are smoothed to p_min).
type Expert interface {
	Prob(obs []float64, action int) float64
}

// Config is DataRelease's configuration.
type Config struct {
	// Epsilon and Delta are the release's budget (eps1, delta1), expert level.
	Epsilon, Delta float64
	// Queries is T, the number of trajectories queried (at most the
	// dataset's size).
	Queries int
	// MaxLen is L, a public bound on trajectory length (the environment's
	// step limit). Using the dataset's own maximum would make L depend on
	// the data; a trajectory longer than MaxLen is an error.
	MaxLen int
	// PMin is the floor of every expert's action probabilities.
	PMin float64
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	if _, err := accountant.SVTSplit(c.Epsilon, c.Delta, max(c.Queries, 1), max(c.MaxLen, 1), c.PMin); err != nil {
		errs = append(errs, err)
	}
	if c.Queries < 1 {
		errs = append(errs, fmt.Errorf("svt: queries T = %d, want >= 1", c.Queries))
	}
	if c.MaxLen < 1 {
		errs = append(errs, fmt.Errorf("svt: max length L = %d, want >= 1", c.MaxLen))
	}
	return errors.Join(errs...)
}

// Result is the outcome of DataRelease.
type Result struct {
	// Stable are the released prefixes (D_stable).
	Stable []offline.Session
	// Unstable are the tails of queried trajectories and the trajectories
	// not queried (D_unstable).
	Unstable []offline.Session
	// PrefixLengths counts the stable prefixes by length (index = length).
	PrefixLengths []int
	// Params are the per-query parameters used.
	Params accountant.SVTParams
	// Queried is the number of trajectories queried (min(T, n)).
	Queried int
	// Whole counts queried trajectories released whole.
	Whole int
}

// DataRelease runs Algorithm 2 of Sharma et al. as restated in
// ALGORITHMS.md §3 on the sessions (discrete actions), drawing all noise and
// the shuffle from rng (pass a cryptographically seeded source in
// production). Sessions are not modified; the result's sessions share their
// step slices.
func DataRelease(sessions []offline.Session, experts []Expert, c Config, rng *rand.Rand) (Result, error) {
	if err := c.Validate(); err != nil {
		return Result{}, err
	}
	if len(experts) == 0 {
		return Result{}, errors.New("svt: no experts")
	}
	for i := range sessions {
		if n := len(sessions[i].Steps); n > c.MaxLen {
			return Result{}, fmt.Errorf("svt: session %q has %d steps, above the public bound L = %d", sessions[i].Session, n, c.MaxLen)
		}
		for k := range sessions[i].Steps {
			if sessions[i].Steps[k].Action.Vec != nil {
				return Result{}, fmt.Errorf("svt: session %q step %d: continuous action; DataRelease needs discrete actions", sessions[i].Session, k)
			}
		}
	}
	T := min(c.Queries, len(sessions))
	p, err := accountant.SVTSplit(c.Epsilon, c.Delta, max(T, 1), c.MaxLen, c.PMin)
	if err != nil {
		return Result{}, err
	}
	// theta_hat = theta + (4/eps') ln(1/delta') + Lap(2/eps'), per trajectory;
	// each prefix query compares count + Lap(4/eps') with it.
	thrScale, err := laplaceScale(p.ThresholdScale)
	if err != nil {
		return Result{}, err
	}
	qScale, err := laplaceScale(p.QueryScale)
	if err != nil {
		return Result{}, err
	}
	base := toGrid(p.Theta + p.NoisyThresholdShift)

	order := rng.Perm(len(sessions))
	res := Result{Params: p, Queried: T, PrefixLengths: make([]int, c.MaxLen+1)}
	probs := make([]float64, len(experts)) // running prod_j pi_i(a_j|s_j)
	for q := 0; q < T; q++ {
		s := &sessions[order[q]]
		thr := base + discreteLaplace(rng, thrScale)
		for i := range probs {
			probs[i] = 1
		}
		kept := -1 // stable prefix length
		for i := range s.Steps {
			st := &s.Steps[i]
			var count float64
			for e, ex := range experts {
				pr := ex.Prob(st.Obs, st.Action.Index)
				if !(pr >= c.PMin*(1-1e-12)) || pr > 1 {
					return Result{}, fmt.Errorf("svt: expert %d gave probability %v, outside [p_min = %v, 1]: experts must be smoothed to p_min", e, pr, c.PMin)
				}
				probs[e] *= pr
				count += probs[e]
			}
			top := toGrid(count)+discreteLaplace(rng, qScale) > thr
			if !top {
				kept = i // tau_{1:i-1} in 1-based terms: the first i steps
				break
			}
		}
		if kept < 0 {
			kept = len(s.Steps)
			res.Whole++
		}
		if kept > 0 {
			res.Stable = append(res.Stable, prefix(s, kept))
			res.PrefixLengths[kept]++
		}
		if kept < len(s.Steps) {
			res.Unstable = append(res.Unstable, tail(s, kept))
		}
	}
	for _, idx := range order[T:] {
		res.Unstable = append(res.Unstable, sessions[idx])
	}
	return res, nil
}

// prefix returns the first n steps of s as a truncated session.
func prefix(s *offline.Session, n int) offline.Session {
	p := *s
	p.Steps = s.Steps[:n:n]
	if n < len(s.Steps) {
		p.FinalObs = s.Steps[n].Obs
		p.Terminal = false
	}
	return p
}

// tail returns s from step n on.
func tail(s *offline.Session, n int) offline.Session {
	t := *s
	t.Steps = s.Steps[n:]
	t.Session = fmt.Sprintf("%s#%d", s.Session, n)
	return t
}
