package experiment

import (
	"context"
	"errors"
	"math"
	"slices"

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

// Validate reports every invalid field of the sweep itself as a
// *FieldError, joined with errors.Join (RunSweep also validates Control).
func (s Sweep) Validate() error {
	var errs []error
	if len(s.Zs) == 0 {
		errs = append(errs, &FieldError{Field: "Zs", Reason: "give at least one noise multiplier"})
	}
	for _, z := range s.Zs {
		if !(z > 0) || math.IsInf(z, 0) {
			errs = append(errs, &FieldError{Field: "Zs", Value: z, Reason: "every noise multiplier must be finite and > 0"})
		}
	}
	if len(s.Seeds) == 0 {
		errs = append(errs, &FieldError{Field: "Seeds", Reason: "give at least one seed"})
	}
	if !(s.Delta > 0 && s.Delta < 1) {
		errs = append(errs, &FieldError{Field: "Delta", Value: s.Delta, Reason: "must be in (0, 1)"})
	}
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
