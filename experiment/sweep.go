package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"dprl/ledger/accountant"
	"dprl/policy"
)

// Sweep configures a privacy-utility sweep (Rio et al., "Differentially
// private policy gradient", Fig. 2 and 6): Control trained at every noise
// multiplier of Zs with every seed of Seeds (the same seeds at every z), each
// point priced per episode by Episode at Delta.
type Sweep struct {
	// Control is the run at every point; RunSweep sets its
	// Config.DP.NoiseMultiplier.
	Control Control
	// Zs are the noise multipliers, each finite and > 0; RunSweep runs
	// them in increasing order, each once.
	Zs      []float64
	Seeds   []uint64 // at least one
	Delta   float64  // in (0, 1)
	Episode policy.EpisodePrivacy
}

// Validate reports every invalid field of the sweep itself, as errors
// naming the fields (*fielderr.Error), joined (RunSweep also validates
// Control).
func (s Sweep) Validate() error {
	var errs []error
	bad(&errs, len(s.Zs) == 0, "{Zs}: give at least one noise multiplier")
	for _, z := range s.Zs {
		bad(&errs, !positive(z), "{Zs} %v: every noise multiplier must be finite and > 0", z)
	}
	bad(&errs, len(s.Seeds) == 0, "{Seeds}: give at least one seed")
	bad(&errs, !(s.Delta > 0 && s.Delta < 1), "{Delta} %v: must be in (0, 1)", s.Delta)
	return errors.Join(errs...)
}

// SweepPoint is one noise multiplier of a sweep: the per-episode epsilon it
// gives (the privacy unit), the per-segment epsilon (one simulated user),
// and the eval returns of its runs, summarised over seeds.
type SweepPoint struct {
	Z                 float64   `json:"z"`
	Epsilon           float64   `json:"epsilon"`
	EpsilonPerSegment float64   `json:"epsilon_per_segment"`
	Accountant        string    `json:"accountant"`
	Mean              float64   `json:"mean"` // over seeds of each run's eval mean
	Std               float64   `json:"std"`
	Min               float64   `json:"min"`
	Max               float64   `json:"max"`
	EvalMeans         []float64 `json:"eval_means"` // one per seed, in Seeds order
}

// SweepHooks observe a running sweep; either may be nil.
type SweepHooks struct {
	// Progress returns the progress receiver of the run of seed index
	// seed at point index point, whose per-episode epsilon is epsilon.
	Progress func(point, seed int, epsilon float64) func(policy.Progress)
	// Point receives every point when its runs are done.
	Point func(SweepPoint)
}

// RunSweep runs the sweep and returns its points in increasing z. A
// configuration the accountant rejects is a *ConfigError.
func RunSweep(ctx context.Context, s Sweep, hooks SweepHooks) ([]SweepPoint, error) {
	if err := errors.Join(s.Validate(), s.Control.Validate()); err != nil {
		return nil, err
	}
	zs := slices.Clone(s.Zs)
	slices.Sort(zs)
	zs = slices.Compact(zs)
	var points []SweepPoint
	for j, z := range zs {
		c := s.Control
		c.Config.DP.NoiseMultiplier = z
		// Per episode (the privacy unit) and per segment (one user).
		g, seg, err := s.Episode.Guarantees(z, s.Delta)
		if err != nil {
			return points, &ConfigError{err}
		}
		pt := SweepPoint{Z: z, Epsilon: g.Epsilon, EpsilonPerSegment: seg.Epsilon, Accountant: string(g.Method), Min: math.Inf(1), Max: math.Inf(-1)}
		for i, seed := range s.Seeds {
			var prog func(policy.Progress)
			if hooks.Progress != nil {
				prog = hooks.Progress(j, i, g.Epsilon)
			}
			r, err := RunControl(ctx, c, seed, prog)
			if err != nil {
				return points, err
			}
			pt.EvalMeans = append(pt.EvalMeans, r.EvalMean)
			pt.Min, pt.Max = math.Min(pt.Min, r.EvalMean), math.Max(pt.Max, r.EvalMean)
		}
		pt.Mean, pt.Std = MeanStd(pt.EvalMeans)
		points = append(points, pt)
		if hooks.Point != nil {
			hooks.Point(pt)
		}
	}
	return points, nil
}

// TrainSweepResult is the privacy-utility curve of a TrainPlan (Rio et al.,
// Fig. 2 and 6; the JSON of dprl train --sweep-z): one point per noise
// multiplier.
type TrainSweepResult struct {
	Env    string       `json:"env"`
	Method string       `json:"method"`
	Delta  float64      `json:"delta"`
	Users  int          `json:"users"` // per run
	Seeds  []uint64     `json:"seeds"` // the same seeds at every z
	Points []SweepPoint `json:"points"`
	// The episode structure behind every point's epsilon (the same at
	// every z); the per-segment epsilon is given per point.
	*EpisodeAccount
}

// Sweep trains the plan at every noise multiplier of zs (in increasing
// order, each once) with every seed of seeds (RunSweep; the plan's own z
// and diagnostics are not used) and returns return against epsilon. The
// plan must be private.
func (p *TrainPlan) Sweep(ctx context.Context, zs []float64, seeds []uint64, hooks SweepHooks) (TrainSweepResult, error) {
	t := p.Train
	out := TrainSweepResult{Env: t.Env, Method: t.Method, Delta: t.Delta, Users: t.Users, Seeds: seeds}
	if p.Account == nil {
		return out, &ConfigError{errors.New("experiment: a sweep needs private training")}
	}
	c := p.Control()
	c.Diagnostics = false
	points, err := RunSweep(ctx, Sweep{Control: c, Zs: zs, Seeds: seeds, Delta: t.Delta, Episode: p.Account.Privacy()}, hooks)
	if err != nil {
		return out, err
	}
	structure := *p.Account
	structure.EpsilonPerSegment = 0 // per point
	out.Points, out.EpisodeAccount = points, &structure
	return out, nil
}

// WriteText writes the curve as dprl train prints it.
func (r TrainSweepResult) WriteText(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "%s %s: eval return against per-episode epsilon at delta %g (%d users per run; mean ± std over seeds %d-%d)\n",
		r.Env, r.Method, r.Delta, r.Users, r.Seeds[0], r.Seeds[len(r.Seeds)-1]); err != nil {
		return err
	}
	if r.EpisodeAccount != nil {
		if _, err := fmt.Fprintf(w, "  (%s)\n", r.Structure()); err != nil {
			return err
		}
	}
	for _, p := range r.Points {
		if _, err := fmt.Fprintf(w, "  z %-6g epsilon %-8s per episode (%-8s per segment) %8.2f ± %6.2f  (min %.2f, max %.2f)\n", p.Z, accountant.FormatEpsilon(p.Epsilon), accountant.FormatEpsilon(p.EpsilonPerSegment), p.Mean, p.Std, p.Min, p.Max); err != nil {
			return err
		}
	}
	return nil
}
