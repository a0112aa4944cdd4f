package statuspage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	"dprl/policy"
	"dprl/policy/lincb"
	"dprl/sims"
)

// Cost bounds of the simulated learning curve.
const (
	// CurveEpisodes is the number of simulated episodes per version (the
	// DPPG paper's evaluation protocol: 20).
	CurveEpisodes = 20
	// CurvePoints bounds the versions evaluated: at most about this many,
	// evenly spaced, and the latest.
	CurvePoints = 40
	// curveSeed is the fixed seed of the evaluations: version v is
	// evaluated with PCG(curveSeed, v), so every page and every report
	// shows the same value for it.
	curveSeed = 0x5eedc0de
)

// SimCurve evaluates released policy versions on a public simulator: the
// mean return of each over CurveEpisodes fresh episodes, drawn from a
// generator seeded by the version alone. It reads only released
// snapshots, so the curve is post-processing of the releases and carries
// their guarantee; the simulated users are not the agent's users. Each
// version is evaluated once and cached; at most about CurvePoints versions
// are, so the cost is bounded whatever the number of releases.
//
// View returns what is cached and asks Run, the one background worker, to
// evaluate the rest; Compute evaluates synchronously (dprl report). Its
// methods are safe for concurrent use.
type SimCurve struct {
	env      string
	spec     policy.Spec
	ppo      policy.PPOConfig
	snapshot func(v uint64) ([]byte, error)

	kick   chan struct{}
	mu     sync.Mutex
	latest uint64
	cache  map[uint64]float64
	failed string // the first evaluation error, if any
}

// NewSimCurve returns the curve of a policy of spec and ppo (the agent's
// network shape and observation scaling) on simulator env, whose
// snapshots snapshot reads (ledger.Store.Snapshot). The simulator's
// spaces must be the spec's.
func NewSimCurve(env string, spec policy.Spec, ppo policy.PPOConfig, snapshot func(v uint64) ([]byte, error)) (*SimCurve, error) {
	e, err := sims.New(env)
	if err != nil {
		return nil, err
	}
	if d := e.ObservationSpace().Dim(); d != spec.ObsDim {
		return nil, fmt.Errorf("statuspage: simulator %s has %d observation values, the policy %d", env, d, spec.ObsDim)
	}
	as := e.ActionSpace()
	if discrete := as.Kind == sims.Discrete; discrete != (spec.Kind == policy.ActionDiscrete) ||
		discrete && as.N != spec.NumActions || !discrete && as.Dim() != spec.ActionDim {
		return nil, fmt.Errorf("statuspage: simulator %s's actions do not fit the policy (%s)", env, spec.Describe())
	}
	if _, err := policy.NewActorFor(spec, ppo); err != nil {
		return nil, err
	}
	return &SimCurve{env: env, spec: spec, ppo: ppo, snapshot: snapshot, kick: make(chan struct{}, 1), cache: map[uint64]float64{}}, nil
}

// CurveVersions are the versions a curve up to latest shows: every
// multiple of a power-of-two stride (at most CurvePoints of them), from 0,
// and latest. As releases accumulate the stride doubles and the versions
// kept are among those already evaluated.
func CurveVersions(latest uint64) []uint64 {
	stride := uint64(1)
	for latest/stride > CurvePoints {
		stride *= 2
	}
	var out []uint64
	for v := uint64(0); v <= latest; v += stride {
		out = append(out, v)
	}
	if out[len(out)-1] != latest {
		out = append(out, latest)
	}
	return out
}

// View returns the curve up to version latest as far as it is evaluated,
// and wakes Run to evaluate the rest.
func (c *SimCurve) View(latest uint64) CurveView {
	c.mu.Lock()
	c.latest = max(c.latest, latest)
	v := c.viewLocked(latest)
	c.mu.Unlock()
	if v.Pending > 0 {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
	return v
}

func (c *SimCurve) viewLocked(latest uint64) CurveView {
	v := CurveView{Env: c.env, Episodes: CurveEpisodes, Reason: c.failed}
	for _, ver := range CurveVersions(latest) {
		if r, ok := c.cache[ver]; ok {
			v.Points = append(v.Points, CurvePoint{Version: ver, MeanReturn: r})
		} else if c.failed == "" {
			v.Pending++
		}
	}
	return v
}

// Run evaluates the versions View asked for, newest first, one at a time,
// until ctx is done.
func (c *SimCurve) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		}
		for ctx.Err() == nil {
			ver, ok := c.next()
			if !ok {
				break
			}
			if err := c.evaluate(ver); err != nil {
				c.mu.Lock()
				c.failed = fmt.Sprintf("version %d could not be evaluated: %v", ver, err)
				c.mu.Unlock()
				break
			}
		}
	}
}

// next is the newest version wanted and not yet evaluated.
func (c *SimCurve) next() (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failed != "" {
		return 0, false
	}
	vs := CurveVersions(c.latest)
	for _, v := range slices.Backward(vs) {
		if _, ok := c.cache[v]; !ok {
			return v, true
		}
	}
	return 0, false
}

// Compute evaluates every version of the curve up to latest now.
func (c *SimCurve) Compute(latest uint64) (CurveView, error) {
	for _, v := range CurveVersions(latest) {
		if err := c.evaluate(v); err != nil {
			return CurveView{}, fmt.Errorf("statuspage: evaluate version %d on %s: %w", v, c.env, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.viewLocked(latest), nil
}

// evaluate evaluates version v unless it is cached.
func (c *SimCurve) evaluate(v uint64) error {
	c.mu.Lock()
	_, done := c.cache[v]
	c.mu.Unlock()
	if done {
		return nil
	}
	r, err := EvaluateVersion(c.env, c.spec, c.ppo, c.snapshot, v)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.cache[v] = r
	c.mu.Unlock()
	return nil
}

// EvaluateVersion returns the mean return of released version v over
// CurveEpisodes episodes of simulator env, drawn from PCG(curveSeed, v):
// the snapshot must fit spec and ppo's hidden widths.
func EvaluateVersion(env string, spec policy.Spec, ppo policy.PPOConfig, snapshot func(uint64) ([]byte, error), v uint64) (float64, error) {
	b, err := snapshot(v)
	if err != nil {
		return 0, err
	}
	if lincb.IsSnapshot(b) {
		return evaluateLinCB(env, spec, b, v)
	}
	snap, err := policy.UnmarshalSnapshot(b)
	if err != nil {
		return 0, err
	}
	if err := snap.CheckCompatible(spec, ppo.Hidden); err != nil {
		return 0, err
	}
	actor, err := policy.NewActorFor(spec, ppo)
	if err != nil {
		return 0, err
	}
	e, err := sims.New(env)
	if err != nil {
		return 0, err
	}
	mean, _ := policy.Evaluate(e, actor, snap.Served(), CurveEpisodes, rand.New(rand.NewPCG(curveSeed, v)))
	return mean, nil
}

// evaluateLinCB is EvaluateVersion for a released linear contextual
// bandit (package lincb): its model serves CurveEpisodes episodes, each
// action drawn from the model's probabilities.
func evaluateLinCB(env string, spec policy.Spec, b []byte, v uint64) (float64, error) {
	s, err := lincb.UnmarshalSnapshot(b)
	if err != nil {
		return 0, err
	}
	if spec.Kind != policy.ActionDiscrete || s.Config.Actions != spec.NumActions || s.Config.Dim != spec.ObsDim {
		return 0, fmt.Errorf("statuspage: version %d: a linear contextual bandit of %d actions on %d features, not %+v", v, s.Config.Actions, s.Config.Dim, spec)
	}
	m, err := s.Model()
	if err != nil {
		return 0, err
	}
	e, err := sims.New(env)
	if err != nil {
		return 0, err
	}
	return lincb.Evaluate(e, m, CurveEpisodes, rand.New(rand.NewPCG(curveSeed, v))), nil
}
