package demo

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"dprl/ledger"
	"dprl/policy"
	"dprl/policy/lincb"
	"dprl/sims"
)

// Eval is one simulation-only evaluation of a released policy version: its
// mean return over fresh simulator episodes, or, on the bandit, its exact
// expected click over the held-out users (ExactEval).
type Eval struct {
	Version    uint64  `json:"version"`
	MeanReturn float64 `json:"mean_return"`
}

// HeldOutUsers is the number of held-out users a bandit demo scores its
// releases and the baselines on, exactly.
const HeldOutUsers = 20000

// heldOutRand draws the bandit demo's held-out users: a fixed public
// stream, so that every demo scores on the same users.
func heldOutRand() *rand.Rand { return rand.New(rand.NewPCG(0x6e1d, HeldOutUsers)) }

// ExactEval is a bandit demo's exact, simulation-only score of its final
// release beside the reference policies, all on the same HeldOutUsers
// users drawn from the simulator's public feature distribution (not
// private data): expected clicks per session computed from the simulator's
// click probabilities, no click sampled.
type ExactEval struct {
	Users   int    `json:"users"`
	Version uint64 `json:"version"`
	// Policy is the release's expected click, sum_a pi(a|x) P(click|x, a)
	// averaged over the users.
	Policy float64 `json:"policy"`
	// Uniform, BestFixed (item BestItem) and Oracle are a uniformly random
	// item, the item with the highest mean click probability on the users,
	// and each user's own best item.
	Uniform   float64 `json:"uniform"`
	BestFixed float64 `json:"best_fixed"`
	BestItem  int     `json:"best_item"`
	Oracle    float64 `json:"oracle"`
}

// newExactEval returns the bandit demo's exact evaluation of version v from
// the held-out users u.
func newExactEval(u *sims.BanditUsers, v uint64, value float64) *ExactEval {
	bl := u.Baselines()
	return &ExactEval{Users: u.Len(), Version: v, Policy: value, Uniform: bl.Uniform, BestFixed: bl.BestFixed, BestItem: bl.BestArm, Oracle: bl.Oracle}
}

// evaluator is the demo's stopping rule. It reads released policy versions
// from the ledger and evaluates them in-process on fresh episodes of the
// public simulator, with a generator derived from the demo's seed and the
// version only: a function of DP releases and public settings
// (post-processing), never of anything the agent serves about its
// sessions. It is simulation-only: production has no simulator.
type evaluator struct {
	store    *ledger.Store
	spec     policy.Spec
	cfg      policy.Config
	env      string
	master   uint64
	every    int
	episodes int
	target   float64
	// exact, on the bandit, scores releases exactly on held-out users
	// instead of sampling episodes.
	exact *sims.BanditUsers

	mu      sync.Mutex
	last    uint64 // last evaluated version (0: none yet)
	history []Eval
	stopped atomic.Bool
}

// admit is called before a session that will start on version v: every
// `every` versions it evaluates v, and it reports false once a release has
// reached the target (no more users are admitted).
func (e *evaluator) admit(v uint64) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped.Load() {
		return false, nil
	}
	if v >= e.last+uint64(e.every) {
		mean, err := e.evaluate(v)
		if err != nil {
			return false, err
		}
		e.last = v
		e.history = append(e.history, Eval{Version: v, MeanReturn: mean})
		if e.target > 0 && mean >= e.target {
			e.stopped.Store(true)
		}
	}
	return !e.stopped.Load(), nil
}

// latest returns the last evaluation, nil before the first.
func (e *evaluator) latest() *Eval {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n := len(e.history); n > 0 {
		last := e.history[n-1]
		return &last
	}
	return nil
}

// evaluate returns the mean return of released version v over e.episodes
// fresh simulator episodes.
func (e *evaluator) evaluate(v uint64) (float64, error) {
	if e.exact != nil {
		return ExactRelease(e.store, e.spec, e.cfg, e.exact, v)
	}
	return EvaluateRelease(e.store, e.spec, e.cfg, e.env, v, e.episodes, e.master)
}

// final returns the stopping rule's evaluations and that of the last
// released version v (evaluated now unless it already was).
func (e *evaluator) final(v uint64) ([]Eval, Eval, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	h := append([]Eval(nil), e.history...)
	if n := len(h); n > 0 && h[n-1].Version == v {
		return h, h[n-1], nil
	}
	mean, err := e.evaluate(v)
	if err != nil {
		return nil, Eval{}, err
	}
	return h, Eval{Version: v, MeanReturn: mean}, nil
}

// EvaluateRelease reads the snapshot of released version v from the ledger
// and returns its policy's mean undiscounted return over episodes fresh
// episodes of simulator envName, drawn from a generator that depends on
// the demo's master seed and v only (disjoint from the simulated users'
// streams). It is post-processing of a DP release, and simulation-only.
func EvaluateRelease(store *ledger.Store, spec policy.Spec, cfg policy.Config, envName string, v uint64, episodes int, master uint64) (float64, error) {
	b, err := store.Snapshot(v)
	if err != nil {
		return 0, fmt.Errorf("demo: evaluate version %d: %w", v, err)
	}
	return EvaluateSnapshot(b, spec, cfg, envName, episodes, master)
}

// EvaluateSnapshot is EvaluateRelease for a released snapshot b read
// elsewhere (a replica's copy, the ledger of record): the mean undiscounted
// return of its policy over episodes fresh episodes of simulator envName,
// drawn from a generator that depends on master and the snapshot's version
// only. Post-processing of a DP release, and simulation-only.
func EvaluateSnapshot(b []byte, spec policy.Spec, cfg policy.Config, envName string, episodes int, master uint64) (float64, error) {
	if lincb.IsSnapshot(b) {
		m, v, err := linModelFor(b, spec)
		if err != nil {
			return 0, err
		}
		env, err := sims.New(envName)
		if err != nil {
			return 0, err
		}
		return lincb.Evaluate(env, m, episodes, evalRand(master, v)), nil
	}
	actor, snap, err := actorFor(b, spec, cfg)
	if err != nil {
		return 0, err
	}
	env, err := sims.New(envName)
	if err != nil {
		return 0, err
	}
	mean, _ := policy.Evaluate(env, actor, snap.Served(), episodes, evalRand(master, snap.Version))
	return mean, nil
}

// ExactRelease reads the snapshot of released version v from the ledger
// and returns its policy's exact expected click on the bandit's held-out
// users u (sims.BanditUsers.Value). It is post-processing of a DP release,
// and simulation-only.
func ExactRelease(store *ledger.Store, spec policy.Spec, cfg policy.Config, u *sims.BanditUsers, v uint64) (float64, error) {
	b, err := store.Snapshot(v)
	if err != nil {
		return 0, fmt.Errorf("demo: evaluate version %d: %w", v, err)
	}
	if lincb.IsSnapshot(b) {
		m, _, err := linModelFor(b, spec)
		if err != nil {
			return 0, err
		}
		return u.Value(m.Probs), nil
	}
	actor, snap, err := actorFor(b, spec, cfg)
	if err != nil {
		return 0, err
	}
	return u.Value(func(dst, x []float64) { actor.Probs(dst, snap.Served(), x) }), nil
}

// linModelFor decodes a released linear contextual bandit (package lincb)
// and returns its model and version, checking it fits spec.
func linModelFor(b []byte, spec policy.Spec) (*lincb.Model, uint64, error) {
	s, err := lincb.UnmarshalSnapshot(b)
	if err != nil {
		return nil, 0, fmt.Errorf("demo: evaluate a snapshot: %w", err)
	}
	if spec.Kind != policy.ActionDiscrete || s.Config.Actions != spec.NumActions || s.Config.Dim != spec.ObsDim {
		return nil, 0, fmt.Errorf("demo: evaluate version %d: a linear contextual bandit of %d actions on %d features, not %+v", s.Version, s.Config.Actions, s.Config.Dim, spec)
	}
	m, err := s.Model()
	if err != nil {
		return nil, 0, fmt.Errorf("demo: evaluate version %d: %w", s.Version, err)
	}
	return m, s.Version, nil
}

// actorFor decodes released snapshot b and returns an actor for it.
func actorFor(b []byte, spec policy.Spec, cfg policy.Config) (*policy.Actor, *policy.Snapshot, error) {
	snap, err := policy.UnmarshalSnapshot(b)
	if err != nil {
		return nil, nil, fmt.Errorf("demo: evaluate a snapshot: %w", err)
	}
	if err := snap.CheckCompatible(spec, cfg.PPO.Hidden); err != nil {
		return nil, nil, fmt.Errorf("demo: evaluate version %d: %w", snap.Version, err)
	}
	actor, err := policy.NewActorFor(spec, cfg.PPO)
	if err != nil {
		return nil, nil, err
	}
	return actor, snap, nil
}

// evalRand is the generator of the evaluation of version v: disjoint from
// the users' streams (sims.Population draws PCG(master, session+1) and
// PCG(master, 0x5eed)).
func evalRand(master, v uint64) *rand.Rand {
	return rand.New(rand.NewPCG(master^0x9e3779b97f4a7c15, v))
}
