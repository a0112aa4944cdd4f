// Package svt is expert-level differentially private data release with the
// sparse vector technique (Sharma et al., "Preserving Expert-Level Privacy in
// Offline Reinforcement Learning"): DataRelease queries the prefixes of logged
// trajectories against the experts and releases the "stable" ones — prefixes
// that many experts would have produced — with (eps1, delta1)-DP at the level
// of one expert.
//
// # What is released
//
// The guarantee covers the stable prefixes themselves: Sharma et al.'s
// mechanism outputs tau_{1:k} = (s_1, a_1, r_1, ..., s_k, a_k, r_k, s_{k+1})
// (Section 5; rewards and the environment's dynamics are not protected, only
// the experts' choices of actions). It does not cover anything else a log
// record carries: which expert generated the trajectory, the user, the
// session id, the serving policy's version, or the behaviour probability of
// each action (that is the generating expert's own probability, a
// fingerprint of the expert). So Result.Stable holds release records built
// from the prefix alone: observations, actions and rewards of the k steps,
// final_obs s_{k+1} (when the log has it), terminal (the environment's
// end-of-episode signal, true only for a whole trajectory that ended in a
// terminal state), no user, expert or policy version, no behaviour
// probabilities (sessionlog.Step.NoProb), and a fresh id "stable-<i>": i is the
// record's position in the release, which is itself a fresh uniformly random
// order (see DataRelease), so the id depends on nothing but the number of
// records released. Result.Unstable is not released: it stays with the data
// owner for a learner that is itself expert-level DP (selective DP-SGD,
// Sharma et al., Algorithm 3, which needs the expert ids), and keeps every
// field of the log.
package svt

import (
	"dprl/noise"

	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"dprl/ledger/accountant"
	"dprl/sessionlog"
)

// Expert is one expert's policy, queried for pi(a|s). Every probability must
// be at least the release's PMin (experts are smoothed to p_min).
type Expert interface {
	Prob(obs []float64, action int) float64
}

// Config is DataRelease's configuration.
type Config struct {
	// Epsilon and Delta are the release's budget (eps1, delta1), expert level.
	Epsilon float64 `flag:"epsilon" usage:"epsilon eps1 > 0 of the release (expert level)"`
	Delta   float64 `flag:"delta" usage:"delta1 in (0, 1) of the release (the paper: 1/M)"`
	// Queries is T, the number of trajectories queried (at most the
	// dataset's size).
	Queries int `flag:"queries" usage:"T, the number of trajectories queried, 1..number in the log (the paper: 20-100)"`
	// MaxLen is L, a public bound on trajectory length (the environment's
	// step limit). Using the dataset's own maximum would make L depend on
	// the data; a trajectory longer than MaxLen is an error.
	MaxLen int `flag:"max-len" default:"500" usage:"L, public bound on trajectory length (the environment's step limit; a longer trajectory is an error)"`
	// PMin is the floor of every expert's action probabilities.
	PMin float64 `flag:"pmin" default:"0.02" usage:"the experts' smoothing floor p_min, as when the log was generated"`
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
	// Stable are the released prefixes (D_stable) as release records: fresh
	// ids "stable-1", "stable-2", ... in a uniformly random order, no user,
	// expert, policy version or behaviour probability (see the package
	// documentation). Only these are covered by (eps1, delta1).
	Stable []sessionlog.Session
	// Unstable are the tails of queried trajectories and the trajectories
	// not queried (D_unstable), with every field of the log: not released,
	// and not covered by any guarantee; they are for the data owner's own
	// expert-level DP learner.
	Unstable []sessionlog.Session
	// PrefixLengths counts the stable prefixes by length (index = length).
	PrefixLengths []int
	// Params are the per-query parameters used.
	Params accountant.SVTParams
	// Queried is the number of trajectories queried (min(T, n)).
	Queried int
	// Whole counts queried trajectories released whole.
	Whole int
}

// DataRelease runs Algorithm 2 of Sharma et al. on the sessions (discrete
// actions), drawing all noise and the shuffles from rng (pass a
// cryptographically seeded source in production). Sessions are not
// modified; the result's sessions share their observation slices (and the
// unstable ones their step slices).
//
// The stable records are put in a fresh uniformly random order (a shuffle
// drawn from rng after the queries) and then numbered, so neither the order
// nor the ids depend on the log's order, its ids or the query order: given
// the multiset of released prefixes, the records' order is uniformly random
// whatever the log.
func DataRelease(sessions []sessionlog.Session, experts []Expert, c Config, rng *rand.Rand) (Result, error) {
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
		thr := base + noise.DiscreteLaplace(rng, thrScale)
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
			top := toGrid(count)+noise.DiscreteLaplace(rng, qScale) > thr
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
	rng.Shuffle(len(res.Stable), func(i, j int) { res.Stable[i], res.Stable[j] = res.Stable[j], res.Stable[i] })
	for i := range res.Stable {
		res.Stable[i].Session = StableID(i)
	}
	return res, nil
}

// StableID is the id of the i-th (0-based) record of a stable release:
// "stable-<i+1>". It depends on the position alone.
func StableID(i int) string { return fmt.Sprintf("stable-%d", i+1) }

// prefix returns the release record of the first n steps of s: observations,
// actions and rewards, final_obs the next observation (s_{n+1}) and terminal
// false when the trajectory was cut, the log's terminal flag and (for a
// trajectory that did not terminate) its final_obs when it is released whole. It carries no id (DataRelease numbers the records), no
// user, expert or policy version, and no behaviour probabilities.
func prefix(s *sessionlog.Session, n int) sessionlog.Session {
	p := sessionlog.Session{Steps: make([]sessionlog.Step, n), FinalObs: s.FinalObs, Terminal: s.Terminal}
	for i := range p.Steps {
		st := &s.Steps[i]
		p.Steps[i] = sessionlog.Step{Obs: st.Obs, Action: st.Action, Reward: st.Reward, LogP: math.NaN(), NoProb: true}
	}
	if n < len(s.Steps) {
		p.FinalObs = s.Steps[n].Obs
		p.Terminal = false
	}
	if p.Terminal {
		p.FinalObs = nil // the final_obs rule (package sessionlog)
	}
	return p
}

// tail returns s from step n on.
func tail(s *sessionlog.Session, n int) sessionlog.Session {
	t := *s
	t.Steps = s.Steps[n:]
	t.Session = fmt.Sprintf("%s#%d", s.Session, n)
	return t
}
