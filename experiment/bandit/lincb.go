package bandit

import (
	"context"

	"dprl/internal/rng"
	"dprl/noise"
	"dprl/policy/lincb"
	"dprl/profile"
	"dprl/sims"
)

// LinCBConfig returns the linear learner's config on env at noise
// multiplier z (0: non-private), with the profile's feature clip.
func LinCBConfig(env *sims.Bandit, z float64) (lincb.Config, error) {
	p, err := profile.Get(EnvName)
	if err != nil {
		return lincb.Config{}, err
	}
	c := lincb.DefaultConfig(env.Config().Items, env.Config().Dim(), p.FeatureClip)
	c.NoiseMultiplier = z
	return c, nil
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
	lc, err := LinCBConfig(env, z)
	if err != nil {
		return run{}, 0, 0, err
	}
	l, err := lincb.New(lc)
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
		a := lincb.Sample(pmf, users0.Float64())
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
