package qlearn

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"dprl/noise"
	"dprl/sims"
)

// Plan says, step by step, whether a run's step is a DP step on the
// private data or a plain step on the public data (Sharma et al.,
// "Preserving Expert-Level Privacy in Offline Reinforcement Learning",
// Algorithm 3: a DP step with probability p). It is drawn before the run is
// charged, from a generator independent of the data, so the number K of DP
// steps is public and the run is charged exactly K Poisson-subsampled
// Gaussian steps at q = b/m, not the paper's N steps at rate p q (App. B.2),
// which would under-state the loss by a factor of about p: docs/privacy.md,
// section 8.
type Plan struct {
	// Private[i] is true when step i is a DP step.
	Private []bool
	// DPSteps is the number of DP steps.
	DPSteps int
}

// NewPlan draws a plan of steps steps, each a DP step with probability p
// (noise.Bernoulli: at most p); p = 1 makes every step a DP step and p = 0
// none.
func NewPlan(steps int, p float64, rng *rand.Rand) Plan {
	pl := Plan{Private: make([]bool, steps)}
	for i := range pl.Private {
		if noise.Bernoulli(rng, p) {
			pl.Private[i] = true
			pl.DPSteps++
		}
	}
	return pl
}

// Progress is reported during Train: steps done, and the evaluation
// return of the current networks on the simulator when an evaluation ran
// at this step (Evaluated). Evaluations are post-processing of the
// networks, which the run's guarantee covers at every step.
type Progress struct {
	Step, Steps int
	Evaluated   bool
	Return      float64
}

// TrainConfig is what Train runs.
type TrainConfig struct {
	// Plan is the step schedule (its length is the number of steps).
	Plan Plan
	// DP is the noise of the DP steps (unused when the plan has none).
	DP DP
	// Env builds the evaluation simulator; EvalEvery (> 0) evaluates the
	// greedy policy every that many steps before the last, over
	// EvalEpisodes episodes (Evaluate gives the final one). Env nil: no
	// evaluation.
	Env          func() sims.Env
	EvalEvery    int
	EvalEpisodes int
}

// Train runs the plan on l: plain steps on public, DP steps on private. It
// draws batches from rng and noise from g (nil only for a plan without DP
// steps) and stops early, with ctx's error, when ctx is cancelled.
func Train(ctx context.Context, l *Learner, public, private *Data, cfg TrainConfig, rng *rand.Rand, g *noise.Gaussian, progress func(Progress)) error {
	pl := cfg.Plan
	if pl.DPSteps > 0 {
		if private == nil || g == nil {
			return fmt.Errorf("qlearn: a plan with %d DP steps and no private data or noise", pl.DPSteps)
		}
		if err := cfg.DP.Validate(); err != nil {
			return err
		}
	}
	if pl.DPSteps < len(pl.Private) && (public == nil || public.Len() == 0) {
		return fmt.Errorf("qlearn: a plan with %d plain steps and no public transitions", len(pl.Private)-pl.DPSteps)
	}
	var envRNG *rand.Rand
	if cfg.Env != nil {
		envRNG = rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
	}
	steps := len(pl.Private)
	for i, dp := range pl.Private {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if dp {
			l.DPStep(private, cfg.DP, rng, g)
		} else {
			l.Step(public, rng)
		}
		pr := Progress{Step: i + 1, Steps: steps}
		if cfg.Env != nil && cfg.EvalEvery > 0 && (i+1)%cfg.EvalEvery == 0 && i+1 < steps {
			pr.Evaluated = true
			pr.Return, _ = Evaluate(l, cfg.Env(), cfg.EvalEpisodes, envRNG)
		}
		if progress != nil && (pr.Evaluated || (i+1)%100 == 0 || i+1 == steps) {
			progress(pr)
		}
	}
	return nil
}

// Evaluate runs episodes episodes of the learner's greedy policy on env and
// returns the mean and standard deviation of their returns.
func Evaluate(l *Learner, env sims.Env, episodes int, rng *rand.Rand) (mean, std float64) {
	if episodes < 1 {
		return math.NaN(), math.NaN()
	}
	obs := make([]float64, env.ObservationSpace().Dim())
	rets := make([]float64, episodes)
	for i := range rets {
		env.Reset(rng, obs)
		for {
			r, term, trunc := env.Step(sims.Action{Index: l.Act(obs)}, obs)
			rets[i] += r
			if term || trunc {
				break
			}
		}
	}
	return meanStd(rets)
}
