package main

import (
	"fmt"
	"io"
	"math"
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
	Env    string       `json:"env"`
	Method string       `json:"method"`
	Delta  float64      `json:"delta"`
	Users  int          `json:"users"` // per run
	Seeds  []uint64     `json:"seeds"` // the same seeds at every z
	Points []sweepPoint `json:"points"`
	// The episode structure behind every point's epsilon (the same at
	// every z); the per-segment epsilon is given per point.
	*episodeAccount
}

// sweepPoint is one noise multiplier of a sweep: the per-episode epsilon it
// gives (the privacy unit), the per-segment epsilon (one simulated user),
// and the eval returns of its runs, summarised over seeds.
type sweepPoint struct {
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

// runTrainSweep trains with every z of --sweep-z over n seeds each (the same
// seeds at every z) and reports return against epsilon.
func runTrainSweep(cmd *cobra.Command, a *app, f *trainFlags, cfg policy.Config, n int) error {
	var errs []string
	for _, name := range []string{"z", "epsilon", "diag"} {
		if cmd.Flags().Changed(name) {
			errs = append(errs, fmt.Sprintf("--%s: not with --sweep-z (the sweep sets z; --diag writes one run)", name))
		}
	}
	if len(f.sweepZ) == 0 {
		errs = append(errs, "--sweep-z: give at least one noise multiplier")
	}
	for _, z := range f.sweepZ {
		if !(z > 0) || math.IsInf(z, 0) {
			errs = append(errs, fmt.Sprintf("--sweep-z %v: every noise multiplier must be finite and > 0", z))
		}
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return usagef("train: %s", strings.Join(errs, "; "))
	}
	zs := slices.Clone(f.sweepZ)
	slices.Sort(zs)
	zs = slices.Compact(zs)

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
	prog := newTrainProgress(a, len(zs)*n*f.users, 0)
	defer prog.done()
	for j, z := range zs {
		cfg.DP.NoiseMultiplier = z
		// Per episode (the privacy unit) and per segment (one user).
		g, seg, err := acct.at(z, f.delta)
		if err != nil {
			return usageError{err}
		}
		prog.epsilon = g.Epsilon
		runs := make([]trainResult, 0, n)
		for i, s := range out.Seeds {
			r := trainResult{Env: f.env, Method: f.algo, Delta: f.delta, K: cfg.DP.UsersPerUpdate, Z: z, Clip: cfg.DP.ClipNorm,
				EvalEpisodes: f.evalEpisodes, Seed: s, Seeded: true, Epsilon: g.Epsilon, Accountant: string(g.Method)}
			prog.offset = (j*n + i) * f.users
			if err := trainSeed(cmd.Context(), a, f, cfg, info.New, &r, prog); err != nil {
				return err
			}
			runs = append(runs, r)
		}
		sum := summarizeSeeds(runs)
		pt := sweepPoint{Z: z, Epsilon: g.Epsilon, EpsilonPerSegment: seg.Epsilon, Accountant: string(g.Method), Mean: sum.Mean, Std: sum.Std, Min: sum.Min, Max: sum.Max}
		for _, r := range runs {
			pt.EvalMeans = append(pt.EvalMeans, r.EvalMean)
		}
		out.Points = append(out.Points, pt)
		a.log.Info().Float64("z", z).Float64("epsilon", g.Epsilon).Float64("epsilon_per_segment", seg.Epsilon).Float64("mean", pt.Mean).Float64("std", pt.Std).Msg("sweep point")
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
