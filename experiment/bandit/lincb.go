package bandit

import (
	"context"
	"math"

	"dprl/internal/rng"
	"dprl/noise"
	"dprl/policy/lincb"
	"dprl/sims"
)

// FeatureClip is the L2 bound on the bandit's features for the linear
// learner: a one-hot segment and device (norm sqrt 2) and three
// continuous features whose own norm is at most sqrt 3; users beyond
// sqrt 3 (the continuous part of norm above 1, about 1 in 4 users) are
// scaled down to it. Chosen with the learner's other settings on seeds
// 1001-1040.
var FeatureClip = math.Sqrt(3)

// LinCBConfig returns the linear learner's config on env at noise
// multiplier z (0: non-private).
func LinCBConfig(env *sims.Bandit, z float64) lincb.Config {
	c := lincb.DefaultConfig(env.Config().Items, env.Config().Dim(), FeatureClip)
	c.NoiseMultiplier = z
	return c
}

// runLinCB runs the private linear contextual bandit (package lincb) on
// users simulated users at user-level epsilon eps (nil: non-private), in
// process, and scores every released model on the held-out users: the
// users of a block are served by the model released before it.
func runLinCB(ctx context.Context, env *sims.Bandit, eps *float64, delta float64, users int, seed uint64, ev *Evaluator) (run, float64, int, error) {
	z := 0.0
	if eps != nil {
		var err error
		if z, err = lincb.NoiseFor(*eps, delta); err != nil {
			return run{}, 0, 0, err
		}
	}
	l, err := lincb.New(LinCBConfig(env, z))
	if err != nil {
		return run{}, 0, 0, err
	}
	users0 := rng.Seeded(seed, "lincb users")
	g := noise.NewGaussian(rng.Seeded(seed, "lincb noise"))
	cfg := env.Config()
	x := make([]float64, cfg.Dim())
	cp := make([]float64, cfg.Items)
	pmf := make([]float64, cfg.Items)
	tr := regretTracker{oracle: ev.Oracle()}
	value := func(m *lincb.Model) float64 { return ev.ValueOf(m.Probs) }
	cur := value(l.Model())
	first := l.BlockSize()
	for u := range users {
		if u%1024 == 0 && ctx.Err() != nil {
			return run{}, 0, 0, ctx.Err()
		}
		env.DrawUser(users0, x)
		env.ClickProbsFor(cp, x)
		l.Model().Probs(pmf, x)
		a := sample(pmf, users0.Float64())
		y := 0.0
		if users0.Float64() < cp[a] {
			y = 1
		}
		l.Observe(x, a, y)
		if l.Full() || u == users-1 {
			if _, err := l.Release(g); err != nil {
				return run{}, 0, 0, err
			}
			tr.served(u+1, cur)
			cur = value(l.Model())
		}
	}
	tr.final = cur
	return tr.run, z, first, nil
}

// sample returns the action of the PMF p for a uniform u in [0, 1) (the
// last action absorbs rounding).
func sample(p []float64, u float64) int {
	for a, q := range p[:len(p)-1] {
		if u < q {
			return a
		}
		u -= q
	}
	return len(p) - 1
}
