package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"dprl/policy"
	"dprl/sims"
)

// Control configures one training and evaluation run of policy.Train on a
// control environment (dppg, or the non-private ppo): train Users simulated
// users, then evaluate the released policy on EvalEpisodes episodes.
type Control struct {
	NewEnv func() sims.Env // a fresh instance of the environment
	Config policy.Config
	Users  int // simulated users, >= 1
	// Workers is the number of goroutines of the local updates (0:
	// GOMAXPROCS); the result does not depend on it.
	Workers      int
	EvalEpisodes int // evaluation episodes of the released policy, >= 1
	// FreshEpisodes starts every user on a fresh episode instead of
	// continuing the previous user's (policy.TrainOptions.ContinueEpisodes).
	FreshEpisodes  bool
	AnnealServerLR bool
	// Average, in [0, 1), releases the exponential moving average of the
	// parameters with this decay (post-processing; 0: the last iterate).
	Average float64
	// Diagnostics records policy.Train's per-update diagnostics: statistics
	// of the simulated users' raw data and of the exact noise, simulation
	// only, covered by no epsilon.
	Diagnostics bool
}

// Validate reports every invalid field, as errors naming the fields
// (*fielderr.Error), joined with the learner configuration's errors.
func (c Control) Validate() error {
	var errs []error
	bad(&errs, c.NewEnv == nil, "{NewEnv}: need an environment")
	bad(&errs, c.Users < 1, "{Users} %d: must be >= 1", c.Users)
	bad(&errs, c.Workers < 0, "{Workers} %d: must be >= 0", c.Workers)
	bad(&errs, c.EvalEpisodes < 1, "{EvalEpisodes} %d: must be >= 1", c.EvalEpisodes)
	bad(&errs, !(c.Average >= 0 && c.Average < 1), "{Average} %v: the decay must be in [0, 1)", c.Average)
	return errors.Join(append(errs, c.Config.Validate())...)
}

// ControlRun is the outcome of one Control run.
type ControlRun struct {
	Seed uint64
	// EvalMean and EvalStd are the mean and the population standard
	// deviation of the released policy's returns over EvalEpisodes; with
	// Average they evaluate the averaged parameters, and LastMean and
	// LastStd the last iterate on the same episodes.
	EvalMean, EvalStd float64
	LastMean, LastStd *float64
	Users, Updates    int
	Steps             int64
	// Skipped counts failed local updates (zero vectors in their batch
	// place): a statistic of the simulated users, simulation only.
	Skipped        int
	Curve          []policy.CurvePoint
	Seconds        float64 // training time
	StepsPerSecond float64
	EvalSeconds    float64 // evaluation time
	Diagnostics    []policy.UpdateDiag
}

// RunControl trains and evaluates one run with the given seed. Every random
// draw of the run derives from that seed (training and evaluation
// generators are PCG streams drawn from a PCG seeded by it), so a run of
// several seeds reproduces the single run of each. progress, if not nil,
// receives policy.Train's progress.
func RunControl(ctx context.Context, c Control, seed uint64, progress func(policy.Progress)) (ControlRun, error) {
	if err := c.Validate(); err != nil {
		return ControlRun{}, err
	}
	r := ControlRun{Seed: seed}
	rng := rand.New(rand.NewPCG(seed, 0x647072_6c5f7472)) // "dprl_tr"
	trainRNG := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
	evalA, evalB := rng.Uint64(), rng.Uint64()
	evalRNG := rand.New(rand.NewPCG(evalA, evalB))

	out, err := policy.Train(ctx, c.NewEnv, c.Config, policy.TrainOptions{
		Users: c.Users, Workers: c.Workers, Progress: progress, ContinueEpisodes: !c.FreshEpisodes, AnnealServerLR: c.AnnealServerLR,
		AverageDecay: c.Average,
		Diagnostics:  c.Diagnostics,
	}, trainRNG)
	if err != nil {
		return r, fmt.Errorf("seed %d: %w", seed, err)
	}
	actor, err := policy.NewActorFor(out.Spec, c.Config.PPO)
	if err != nil {
		return r, err
	}
	evalStart := time.Now()
	final := out.Theta
	if out.Average != nil {
		// The same evaluation episodes for both: a second generator from the same seeds.
		m, s := policy.Evaluate(c.NewEnv(), actor, out.Theta, c.EvalEpisodes, rand.New(rand.NewPCG(evalA, evalB)))
		r.LastMean, r.LastStd, final = &m, &s, out.Average
	}
	r.EvalMean, r.EvalStd = policy.Evaluate(c.NewEnv(), actor, final, c.EvalEpisodes, evalRNG)
	r.EvalSeconds = time.Since(evalStart).Seconds()
	r.Users, r.Updates, r.Steps, r.Skipped, r.Curve = out.Users, out.Updates, out.Steps, out.Skipped, out.Curve
	r.Seconds = out.Elapsed.Seconds()
	if r.Seconds > 0 {
		r.StepsPerSecond = float64(out.Steps) / r.Seconds
	}
	r.Diagnostics = out.Diagnostics
	return r, nil
}

// MeanStd returns the mean and the population standard deviation of x (NaN
// for an empty x).
func MeanStd(x []float64) (mean, std float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		std += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(std / float64(len(x)))
}

// MeanCurve averages learning curves of runs that share a configuration
// (so their points are at the same user counts): at each point, the mean
// over runs of the runs' mean return and the standard deviation over runs
// of it. A shorter curve (none in practice) truncates all.
func MeanCurve(curves [][]policy.CurvePoint) []policy.CurvePoint {
	if len(curves) == 0 {
		return nil
	}
	points := len(curves[0])
	for _, c := range curves {
		points = min(points, len(c))
	}
	var out []policy.CurvePoint
	col := make([]float64, len(curves))
	for k := range points {
		for i, c := range curves {
			col[i] = c[k].Mean
		}
		m, s := MeanStd(col)
		out = append(out, policy.CurvePoint{Users: curves[0][k].Users, Update: curves[0][k].Update, Mean: m, Std: s})
	}
	return out
}
