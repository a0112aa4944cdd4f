package sac

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"dprl/sims"
)

// TrainOptions configures an online SAC run (Train).
type TrainOptions struct {
	// Steps is the number of environment steps, >= 1.
	Steps int
	// LearningStarts is the number of first steps taken with uniformly random
	// actions before updates begin, >= 0 (the first update needs at least one
	// transition). Spinning Up: 10,000; CleanRL: 5,000.
	LearningStarts int
	// BufferSize is the replay buffer's capacity; 0 means Steps.
	BufferSize int
	// EvalEvery is the number of steps between evaluations of the
	// deterministic policy on EvalEpisodes fresh episodes (0: Steps/20).
	EvalEvery, EvalEpisodes int
	// Progress, if set, is called after each evaluation.
	Progress func(Progress)
	// NewEvalEnv, if set, makes the environments the evaluations run on
	// (default: newEnv's). PriMORL trains in a model and evaluates on the
	// real simulator.
	NewEvalEnv func() sims.Env
	// OnEpisode, if set, receives every training episode as it ends (the
	// observations, actions and rewards are the run's buffers: copy what is
	// kept).
	OnEpisode func(Episode)
	// Replays is the number of extra episodes of the current policy (sampled
	// actions, no learning, a separate environment) run after each training
	// episode once learning has started, and passed to OnEpisode with Replay
	// set: a cheap way to log many episodes of every stage of training, as
	// offline datasets mixing random, medium and expert behaviour are made.
	// They take no environment steps from Steps. >= 0.
	Replays int
	// Fixed, if set, is a buffer of fixed transitions from which a fraction
	// FixedFraction in [0, 1) of every update's batch is drawn, the rest
	// from the run's own replay buffer: MOPO's mix of logged transitions
	// into model rollouts (5%).
	Fixed         *Buffer
	FixedFraction float64
	// Select, if set, makes the environments of a second evaluation at
	// each point of the curve: SelectEpisodes episodes (0: EvalEpisodes)
	// of the deterministic policy, whose mean return is the point's
	// Select. With KeepBest, the actor returned is the one of the point
	// with the highest Select (the last such point on ties), not the last
	// one. PriMORL rates its policy in the released model, over whole
	// episodes, to choose among its checkpoints without the real system.
	Select         func() sims.Env
	SelectEpisodes int
	KeepBest       bool
}

// Episode is one training episode: T steps, Obs (T+1) x ObsDim, Actions
// T x ActDim (the environment's scale), Rewards T, and LogP T, the log of
// the behaviour's density of each action in the action box (uniform during
// the random start, the squashed Gaussian after it).
type Episode struct {
	Obs, Actions, Rewards, LogP []float64
	Terminated                  bool
	Return                      float64
	// Replay marks an extra episode of the current policy (TrainOptions.Replays).
	Replay bool
}

// Progress reports a run in progress.
type Progress struct {
	Steps, Updates int
	EvalReturn     float64
	Elapsed        time.Duration
}

// CurvePoint is one evaluation: the mean and standard deviation of the
// deterministic policy's return over the evaluation episodes after Steps
// environment steps.
type CurvePoint struct {
	Steps int     `json:"steps"`
	Mean  float64 `json:"mean"`
	Std   float64 `json:"std"`
	// Select is the mean return of the second evaluation
	// (TrainOptions.Select), if any.
	Select *float64 `json:"select,omitempty"`
}

// Result is what Train returns.
type Result struct {
	Agent    *Agent
	Curve    []CurvePoint
	Episodes int
	Updates  int
	// UpdateTime is the time spent in Agent.Update.
	UpdateTime time.Duration
	Elapsed    time.Duration
	// BestSteps is the step count of the point whose actor was returned
	// (TrainOptions.KeepBest; 0 otherwise).
	BestSteps int
}

// Train runs SAC online for opts.Steps steps of environments from newEnv
// (continuous actions in a finite box): uniformly random actions for
// LearningStarts steps, then one sampled action and one Update per step.
// Every random draw comes from rng. On cancellation it returns what it has
// with the context's error.
func Train(ctx context.Context, newEnv func() sims.Env, cfg Config, opts TrainOptions, rng *rand.Rand) (Result, error) {
	start := time.Now()
	if newEnv == nil || rng == nil {
		return Result{}, errors.New("sac: train: nil environment factory or rng")
	}
	if opts.Steps < 1 || opts.LearningStarts < 0 || opts.BufferSize < 0 || opts.EvalEvery < 0 || opts.EvalEpisodes < 0 || opts.Replays < 0 || opts.SelectEpisodes < 0 || (opts.KeepBest && opts.Select == nil) ||
		!(opts.FixedFraction >= 0 && opts.FixedFraction < 1) || (opts.Fixed != nil && opts.Fixed.Len() == 0) {
		return Result{}, fmt.Errorf("sac: train: steps %d, learning starts %d, buffer %d, eval every %d, eval episodes %d, replays %d, select episodes %d: want steps >= 1 and the rest >= 0; fixed fraction %v: want [0, 1) and a non-empty fixed buffer; keep best %v: needs a select environment",
			opts.Steps, opts.LearningStarts, opts.BufferSize, opts.EvalEvery, opts.EvalEpisodes, opts.Replays, opts.SelectEpisodes, opts.FixedFraction, opts.KeepBest)
	}
	env, evalEnv := newEnv(), newEnv()
	if opts.NewEvalEnv != nil {
		evalEnv = opts.NewEvalEnv()
	}
	as := env.ActionSpace()
	if as.Kind != sims.Box {
		return Result{}, errors.New("sac: train: the environment's actions are not continuous")
	}
	od, ad := env.ObservationSpace().Dim(), as.Dim()
	agent, err := New(cfg, od, as.Low, as.High, rng)
	if err != nil {
		return Result{}, err
	}
	bufSize := opts.BufferSize
	if bufSize == 0 {
		bufSize = opts.Steps
	}
	buf, err := NewBuffer(bufSize, od, ad)
	if err != nil {
		return Result{}, err
	}
	evalEvery := opts.EvalEvery
	if evalEvery == 0 {
		evalEvery = max(1, opts.Steps/20)
	}
	evalEpisodes := opts.EvalEpisodes
	if evalEpisodes == 0 {
		evalEpisodes = 10
	}
	evalSeed := rng.Uint64()
	var selectEnv sims.Env
	var best []float64
	bestScore := math.Inf(-1)
	selectEpisodes := opts.SelectEpisodes
	if selectEpisodes == 0 {
		selectEpisodes = evalEpisodes
	}
	var selectSeed uint64
	if opts.Select != nil {
		selectEnv, selectSeed = opts.Select(), rng.Uint64() // drawn only then: runs without selection repeat earlier ones
	}
	batch := NewBatch(cfg.Batch, od, ad)
	// The rows drawn from the fixed buffer come last.
	own, fixed := batch, Batch{}
	if opts.Fixed != nil {
		if opts.Fixed.obsDim != od || opts.Fixed.actDim != ad {
			return Result{}, fmt.Errorf("sac: train: fixed buffer of %d observations and %d actions, want %d and %d", opts.Fixed.obsDim, opts.Fixed.actDim, od, ad)
		}
		k := int(math.Round(opts.FixedFraction * float64(cfg.Batch)))
		own, fixed = batch.rows(0, cfg.Batch-k, od, ad), batch.rows(cfg.Batch-k, cfg.Batch, od, ad)
	}
	limit := env.MaxSteps()
	if limit < 1 {
		limit = opts.Steps
	}
	epObs := make([]float64, (limit+1)*od)
	epAct := make([]float64, limit*ad)
	epRew := make([]float64, limit)
	epLogP := make([]float64, limit)
	act := sims.Action{Vec: make([]float64, ad)}
	// The uniform density on the box, and the change of variables from
	// tanh(u) in [-1, 1]^A to the box.
	var uniformLogP float64
	for j := range as.Low {
		uniformLogP -= math.Log(as.High[j] - as.Low[j])
	}
	logScale := agent.LogScale()
	res := Result{Agent: agent}
	evaluate := func(steps int) {
		m, s := Evaluate(evalEnv, agent, evalEpisodes, rand.New(rand.NewPCG(evalSeed, uint64(steps))))
		pt := CurvePoint{Steps: steps, Mean: m, Std: s}
		if selectEnv != nil {
			sm, _ := Evaluate(selectEnv, agent, selectEpisodes, rand.New(rand.NewPCG(selectSeed, uint64(steps))))
			pt.Select = &sm
			if opts.KeepBest && sm >= bestScore {
				bestScore, res.BestSteps = sm, steps
				best = append(best[:0], agent.actorP...)
			}
		}
		res.Curve = append(res.Curve, pt)
		if opts.Progress != nil {
			opts.Progress(Progress{Steps: steps, Updates: res.Updates, EvalReturn: m, Elapsed: time.Since(start)})
		}
	}
	var replayEnv sims.Env
	if opts.Replays > 0 && opts.OnEpisode != nil {
		replayEnv = newEnv()
	}
	env.Reset(rng, epObs[:od])
	t := 0
	for step := 0; step < opts.Steps; step++ {
		if step%256 == 0 {
			if err := ctx.Err(); err != nil {
				res.Elapsed = time.Since(start)
				return res, err
			}
		}
		cur, next := epObs[t*od:(t+1)*od], epObs[(t+1)*od:(t+2)*od]
		if step < opts.LearningStarts {
			for j := range act.Vec {
				act.Vec[j] = as.Low[j] + (as.High[j]-as.Low[j])*rng.Float64()
			}
			epLogP[t] = uniformLogP
		} else {
			epLogP[t] = agent.Act(act.Vec, rng, cur) - logScale
		}
		copy(epAct[t*ad:(t+1)*ad], act.Vec)
		copy(next, cur)
		r, term, trunc := env.Step(act, next)
		epRew[t] = r
		t++
		buf.Add(cur, act.Vec, r, next, term)
		if term || trunc || t == limit {
			res.Episodes++
			if opts.OnEpisode != nil {
				var ret float64
				for _, v := range epRew[:t] {
					ret += v
				}
				opts.OnEpisode(Episode{Obs: epObs[:(t+1)*od], Actions: epAct[:t*ad], Rewards: epRew[:t], LogP: epLogP[:t], Terminated: term, Return: ret})
				if step >= opts.LearningStarts {
					for range opts.Replays {
						opts.OnEpisode(replay(replayEnv, agent, limit, rng, epObs, epAct, epRew, epLogP))
					}
				}
			}
			env.Reset(rng, epObs[:od])
			t = 0
		}
		if step >= opts.LearningStarts {
			u0 := time.Now()
			buf.Sample(own, rng)
			if len(fixed.R) > 0 {
				opts.Fixed.Sample(fixed, rng)
			}
			agent.Update(batch, rng)
			res.UpdateTime += time.Since(u0)
			res.Updates++
		}
		if (step+1)%evalEvery == 0 || step+1 == opts.Steps {
			evaluate(step + 1)
		}
	}
	if best != nil {
		copy(agent.actorP, best)
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// replay runs one episode of agent's sampled policy on env (at most limit
// steps) in the given buffers, without learning, and returns it.
func replay(env sims.Env, agent *Agent, limit int, rng *rand.Rand, obs, acts, rews, logp []float64) Episode {
	od, ad := env.ObservationSpace().Dim(), env.ActionSpace().Dim()
	act := sims.Action{Vec: acts[:ad]}
	logScale := agent.LogScale()
	env.Reset(rng, obs[:od])
	ep := Episode{Replay: true}
	t := 0
	for t < limit {
		cur, next := obs[t*od:(t+1)*od], obs[(t+1)*od:(t+2)*od]
		act.Vec = acts[t*ad : (t+1)*ad]
		logp[t] = agent.Act(act.Vec, rng, cur) - logScale
		copy(next, cur)
		r, term, trunc := env.Step(act, next)
		rews[t] = r
		ep.Return += r
		t++
		if term || trunc {
			ep.Terminated = term
			break
		}
	}
	ep.Obs, ep.Actions, ep.Rewards, ep.LogP = obs[:(t+1)*od], acts[:t*ad], rews[:t], logp[:t]
	return ep
}

// Evaluate returns the mean and standard deviation of the deterministic
// policy's return over episodes fresh episodes of env, reset from rng.
func Evaluate(env sims.Env, agent *Agent, episodes int, rng *rand.Rand) (mean, std float64) {
	od, ad := env.ObservationSpace().Dim(), env.ActionSpace().Dim()
	obs := make([]float64, od)
	act := sims.Action{Vec: make([]float64, ad)}
	rets := make([]float64, episodes)
	limit := env.MaxSteps()
	if limit < 1 {
		limit = 1_000_000 // an environment without a step limit: stop somewhere
	}
	for e := range episodes {
		env.Reset(rng, obs)
		for range limit {
			agent.ActDeterministic(act.Vec, obs)
			r, term, trunc := env.Step(act, obs)
			rets[e] += r
			if term || trunc {
				break
			}
		}
	}
	for _, r := range rets {
		mean += r / float64(episodes)
	}
	for _, r := range rets {
		std += (r - mean) * (r - mean) / float64(episodes)
	}
	return mean, math.Sqrt(std)
}
