package experiment

import (
	"context"
	"fmt"
	"io"
	"math"

	"dprl/internal/progress"
	"dprl/policy"
)

// SeedHooks are the optional callbacks of TrainPlan.RunSeeds.
type SeedHooks struct {
	// Progress receives the progress of every run (TrainProgress), counted
	// in users over all the runs.
	Progress *progress.Task
	// Done receives each run's result when the run is done; an error it
	// returns stops the runs and is returned as it is.
	Done func(TrainResult) error
}

// RunSeeds trains and evaluates the plan n >= 1 times with the seeds seed,
// seed+1, ..., seed+n-1 (TrainPlan.Run) and returns the results in that
// order; SummarizeSeeds summarises them. It stops at the first error.
func (p *TrainPlan) RunSeeds(ctx context.Context, seed uint64, n int, hooks SeedHooks) ([]TrainResult, error) {
	runs, users := make([]TrainResult, n), p.Train.Users
	for i := range runs {
		var prog func(policy.Progress)
		if hooks.Progress != nil {
			prog = TrainProgress(hooks.Progress, i*users, n*users, p.Epsilon)
		}
		r, err := p.Run(ctx, seed+uint64(i), prog)
		if err != nil {
			return nil, err
		}
		if runs[i] = r; hooks.Done != nil {
			if err := hooks.Done(r); err != nil {
				return nil, err
			}
		}
	}
	return runs, nil
}

// SeedRange returns the n seeds seed, seed+1, ..., seed+n-1 of a command's
// --seed and --seeds.
func SeedRange(seed uint64, n int) []uint64 {
	seeds := make([]uint64, max(n, 0))
	for i := range seeds {
		seeds[i] = seed + uint64(i)
	}
	return seeds
}

// TrainSeedsResult summarises the runs of one TrainPlan over several seeds
// (the JSON of dprl train --seeds N, N > 1, for dppg and ppo).
type TrainSeedsResult struct {
	Env    string `json:"env"`
	Method string `json:"method"`
	// Epsilon is per episode at Delta, the same for every run (null for
	// the non-private ppo); the per-segment epsilon and the episode
	// structure are in the embedded EpisodeAccount.
	Epsilon    *float64 `json:"epsilon"`
	Delta      float64  `json:"delta"`
	Accountant string   `json:"accountant,omitempty"`
	*EpisodeAccount
	Z            float64 `json:"z"`
	Clip         float64 `json:"clip"`
	K            int     `json:"k"`
	Noise        string  `json:"noise,omitempty"`   // correlated noise, omitted when independent
	Horizon      int     `json:"horizon,omitempty"` // its horizon in releases
	Users        int     `json:"users"`             // per run
	EvalEpisodes int     `json:"eval_episodes"`
	// Mean and Std are the mean and the (population) standard deviation
	// over seeds of the runs' eval_mean; Min and Max their extremes.
	Mean    float64   `json:"mean"`
	Std     float64   `json:"std"`
	Min     float64   `json:"min"`
	Max     float64   `json:"max"`
	Seconds float64   `json:"seconds"` // all runs
	Runs    []SeedRun `json:"runs"`
	// Curve is the learning curve averaged over seeds: at each point, the
	// mean over seeds of the runs' mean return and the standard deviation
	// over seeds of it.
	Curve []policy.CurvePoint `json:"curve"`
}

// SeedRun is one run of a TrainSeedsResult.
type SeedRun struct {
	Seed           uint64   `json:"seed"`
	EvalMean       float64  `json:"eval_mean"`
	EvalStd        float64  `json:"eval_std"`
	LastMean       *float64 `json:"last_iterate_mean,omitempty"`
	LastStd        *float64 `json:"last_iterate_std,omitempty"`
	Users          int      `json:"users"`
	Updates        int      `json:"updates"`
	Steps          int64    `json:"steps"`
	Seconds        float64  `json:"seconds"`
	StepsPerSecond float64  `json:"steps_per_second"`
	Skipped        int      `json:"sim_skipped_local_updates"` // simulation only
}

// SummarizeSeeds summarises runs of one plan (at least one; all with the
// same configuration, as TrainPlan.Run returns them).
func SummarizeSeeds(runs []TrainResult) TrainSeedsResult {
	r0 := runs[0]
	out := TrainSeedsResult{Env: r0.Env, Method: r0.Method, Delta: r0.Delta, Accountant: r0.Accountant,
		Z: r0.Z, Clip: r0.Clip, K: r0.K, Noise: r0.Noise, Horizon: r0.Horizon, Users: r0.Users, EvalEpisodes: r0.EvalEpisodes,
		Min: math.Inf(1), Max: math.Inf(-1), EpisodeAccount: r0.EpisodeAccount}
	if !math.IsInf(r0.Epsilon, 1) {
		eps := r0.Epsilon
		out.Epsilon = &eps
	}
	evals := make([]float64, len(runs))
	curves := make([][]policy.CurvePoint, len(runs))
	for i, r := range runs {
		evals[i], curves[i] = r.EvalMean, r.Curve
		out.Min, out.Max = math.Min(out.Min, r.EvalMean), math.Max(out.Max, r.EvalMean)
		out.Seconds += r.Seconds
		out.Runs = append(out.Runs, SeedRun{Seed: r.Seed, EvalMean: r.EvalMean, EvalStd: r.EvalStd, LastMean: r.LastMean, LastStd: r.LastStd,
			Users: r.Users, Updates: r.Updates, Steps: r.Steps, Seconds: r.Seconds, StepsPerSecond: r.StepsPerSecond, Skipped: r.Skipped})
	}
	out.Mean, out.Std = MeanStd(evals)
	out.Curve = MeanCurve(curves)
	return out
}

// WriteText writes the summary and every seed's eval return as dprl train
// prints them.
func (r TrainSeedsResult) WriteText(w io.Writer) error {
	privacy := "non-private (ppo)"
	if r.Epsilon != nil {
		privacy = privacyText(*r.Epsilon, r.Delta, r.Z, r.Clip, r.K, r.Noise, r.Horizon, r.Accountant, r.EpisodeAccount)
	}
	first, last := r.Runs[0].Seed, r.Runs[len(r.Runs)-1].Seed
	if _, err := fmt.Fprintf(w, "%s %s over %d seeds (%d-%d): eval return %.2f ± %.2f (mean ± std over seeds of each run's %d-episode mean; min %.2f, max %.2f)\n%s\n%d users per run, %.1fs in all\n",
		r.Env, r.Method, len(r.Runs), first, last, r.Mean, r.Std, r.EvalEpisodes, r.Min, r.Max, privacy, r.Users, r.Seconds); err != nil {
		return err
	}
	for _, run := range r.Runs {
		if _, err := fmt.Fprintf(w, "  seed %d: %.2f ± %.2f (standard error %.2f)\n", run.Seed, run.EvalMean, run.EvalStd, stdErr(run.EvalStd, r.EvalEpisodes)); err != nil {
			return err
		}
	}
	return nil
}
