package main

import (
	"dprl/experiment"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"dprl/policy"
	"dprl/sims"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// trainSweepResult is the output of dprl train --sweep-z: the privacy-utility
// curve (Rio et al., Fig. 2 and 6), one point per noise multiplier.
type trainSweepResult struct {
	Env    string                  `json:"env"`
	Method string                  `json:"method"`
	Delta  float64                 `json:"delta"`
	Users  int                     `json:"users"` // per run
	Seeds  []uint64                `json:"seeds"` // the same seeds at every z
	Points []experiment.SweepPoint `json:"points"`
	// The episode structure behind every point's epsilon (the same at
	// every z); the per-segment epsilon is given per point.
	*episodeAccount
}

// runTrainSweep trains with every z of --sweep-z over n seeds each (the same
// seeds at every z; experiment.RunSweep) and reports return against epsilon.
func runTrainSweep(cmd *cobra.Command, a *app, f *trainFlags, cfg policy.Config, n int) error {
	var errs []string
	for _, name := range []string{"z", "epsilon", "diag"} {
		if cmd.Flags().Changed(name) {
			errs = append(errs, fmt.Sprintf("--%s: not with --sweep-z (the sweep sets z; --diag writes one run)", name))
		}
	}
	sw := experiment.Sweep{Zs: f.sweepZ, Seeds: []uint64{0}, Delta: f.delta}
	if err := sw.Validate(); err != nil {
		errs = append(errs, flagErrors(err, map[string]string{"Zs": "--sweep-z", "Delta": "--delta"})...)
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return usagef("train: %s", strings.Join(errs, "; "))
	}
	seed, err := seedFlag(cmd, "seed", f.seed)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	info, _ := sims.Lookup(f.env)
	acct, err := newEpisodeAccount(f, cfg)
	if err != nil {
		return usagef("train: %v", err)
	}
	out := trainSweepResult{Env: f.env, Method: f.algo, Delta: f.delta, Users: f.users, episodeAccount: acct}
	for i := range n {
		out.Seeds = append(out.Seeds, seed+uint64(i))
	}
	sw.Seeds, sw.Episode = out.Seeds, acct.ep
	sw.Control = experiment.Control{NewEnv: info.New, Config: cfg, Users: f.users, Workers: f.workers, EvalEpisodes: f.evalEpisodes,
		FreshEpisodes: f.fresh, AnnealServerLR: f.anneal, Average: f.average}
	zs := slices.Compact(slices.Sorted(slices.Values(f.sweepZ))) // RunSweep's points
	prog := newTrainProgress(a, len(zs)*n*f.users, 0)
	defer prog.done()
	out.Points, err = experiment.RunSweep(cmd.Context(), sw, experiment.SweepHooks{
		Progress: func(point, run int, eps float64) func(policy.Progress) {
			prog.epsilon, prog.offset = eps, (point*n+run)*f.users
			return prog.update
		},
		Point: func(pt experiment.SweepPoint) {
			a.log.Info().Float64("z", pt.Z).Float64("epsilon", pt.Epsilon).Float64("epsilon_per_segment", pt.EpsilonPerSegment).Float64("mean", pt.Mean).Float64("std", pt.Std).Msg("sweep point")
		},
	})
	if cerr := (*experiment.ConfigError)(nil); errors.As(err, &cerr) {
		return usageError{cerr.Err}
	}
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	prog.done()
	structure := *acct
	structure.EpsilonPerSegment = 0 // per point
	out.episodeAccount = &structure
	if f.plot != "" {
		if err := writeSweepPNG(f.plot, out); err != nil {
			return fmt.Errorf("train: --plot: %w", err)
		}
	}
	return emit(a.stdout, f.json, out, out.text)
}

func (r trainSweepResult) text(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "%s %s: eval return against per-episode epsilon at delta %g (%d users per run; mean ± std over seeds %d-%d)\n",
		r.Env, r.Method, r.Delta, r.Users, r.Seeds[0], r.Seeds[len(r.Seeds)-1]); err != nil {
		return err
	}
	if r.episodeAccount != nil {
		if _, err := fmt.Fprintf(w, "  (%s)\n", r.structure()); err != nil {
			return err
		}
	}
	for _, p := range r.Points {
		if _, err := fmt.Fprintf(w, "  z %-6g epsilon %-8.4g per episode (%-8.4g per segment) %8.2f ± %6.2f  (min %.2f, max %.2f)\n", p.Z, p.Epsilon, p.EpsilonPerSegment, p.Mean, p.Std, p.Min, p.Max); err != nil {
			return err
		}
	}
	return nil
}

// writeSweepPNG plots the mean eval return against epsilon (log scale) with
// error bars of one standard deviation over seeds.
func writeSweepPNG(path string, r trainSweepResult) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s %s: return vs privacy (δ = %g, %d seeds)", r.Env, r.Method, r.Delta, len(r.Seeds))
	p.X.Label.Text = "per-episode ε (log scale)"
	p.Y.Label.Text = "eval return"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	pts := make(plotter.XYs, len(r.Points))
	errs := make(plotter.YErrors, len(r.Points))
	for i, pt := range r.Points {
		pts[i] = plotter.XY{X: pt.Epsilon, Y: pt.Mean}
		errs[i].Low, errs[i].High = pt.Std, pt.Std
	}
	line, points, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	line.Color = plotColor{0x1f, 0x77, 0xb4, 0xff}
	line.Width = vg.Points(1.5)
	points.Color = line.Color
	bars, err := plotter.NewYErrorBars(struct {
		plotter.XYer
		plotter.YErrorer
	}{pts, errs})
	if err != nil {
		return err
	}
	bars.Color = line.Color
	p.Add(bars, line, points, plotter.NewGrid())
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}
