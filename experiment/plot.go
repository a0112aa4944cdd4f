package experiment

import (
	"dprl/ledger/accountant"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"dprl/internal/chart"
	"dprl/policy"
	"dprl/sims"
)

// Plot writes the run's learning curve (mean return against users, with a
// band of one standard deviation over the curve's episodes) to path, in
// the format its extension names (chart.FormatOf).
func (r TrainResult) Plot(path string) error {
	c, err := curveChart(r.Env, r.Method, r.Epsilon, r.Z, r.Delta, r.Curve, "± 1 std over the episodes")
	if err != nil {
		return err
	}
	return c.Save(path)
}

// Plot writes the learning curve averaged over seeds (a band of one
// standard deviation over seeds) to path.
func (r TrainSeedsResult) Plot(path string) error {
	eps := math.Inf(1)
	if r.Epsilon != nil {
		eps = *r.Epsilon
	}
	c, err := curveChart(r.Env, fmt.Sprintf("%s, mean of %d seeds", r.Method, len(r.Runs)), eps, r.Z, r.Delta, r.Curve, "± 1 std over seeds")
	if err != nil {
		return err
	}
	return c.Save(path)
}

// The reference lines of a learning-curve figure: the uniformly random
// policy's and the best constant policy's mean return (sims.Baselines) over
// PlotBaselineEpisodes episodes from PlotBaselineSeed, a seed no training
// run evaluates on. 2,000 episodes: recsys's best constant policy has a
// return std of ~350, so its line is drawn within a standard error of ~8.
const (
	PlotBaselineEpisodes = 2000
	PlotBaselineSeed     = 0x62617365 // "base"
)

// curveChart is the learning-curve figure, its band labelled spread, with
// the environment's reference lines (dashed: the uniformly random and the
// best constant policy, simulated users only); eps is +Inf for the
// non-private baseline (no privacy in the title).
func curveChart(env, method string, eps, z, delta float64, curve []policy.CurvePoint, spread string) (chart.Chart, error) {
	if len(curve) == 0 {
		return chart.Chart{}, errors.New("no learning-curve points")
	}
	title := fmt.Sprintf("%s %s", env, method)
	if !math.IsInf(eps, 1) {
		// The epsilon is rounded up, never to nearest.
		title += fmt.Sprintf(" (z = %g, ε = %s per episode, δ = %g)", z, accountant.FormatEpsilon(eps), delta)
	}
	s := chart.Series{Label: "mean return", SpreadLabel: spread}
	for _, c := range curve {
		s.X, s.Y = append(s.X, float64(c.Users)), append(s.Y, c.Mean)
		s.Low, s.High = append(s.Low, c.Mean-c.Std), append(s.High, c.Mean+c.Std)
	}
	c := chart.Chart{Title: title, XLabel: "users", YLabel: "return", Series: []chart.Series{s}}
	b, err := sims.Baselines(sims.BaselineConfig{Env: env, Episodes: PlotBaselineEpisodes, Seed: PlotBaselineSeed})
	if err != nil {
		return chart.Chart{}, fmt.Errorf("reference lines: %w", err)
	}
	return withReferenceLines(c, b), nil
}

// withReferenceLines adds b's uniform and best constant policies' mean
// returns to the learning curve c (its first series) as dashed horizontal
// lines over the curve's users, labelled with their values.
func withReferenceLines(c chart.Chart, b sims.BaselineResult) chart.Chart {
	s := c.Series[0]
	x := []float64{s.X[0], s.X[len(s.X)-1]}
	for _, r := range []sims.BaselineReturn{b.Uniform, b.BestConstant} {
		name := r.Name()
		if r.Policy != "uniform" {
			name = "best " + name
		}
		c.Series = append(c.Series, chart.Series{Label: fmt.Sprintf("%s: %.4g", name, r.Mean), X: x, Y: []float64{r.Mean, r.Mean}, Dashed: true})
	}
	return c
}

// Plot writes the mean eval return against the per-episode epsilon (log
// scale), with error bars of one standard deviation over seeds, to path.
func (r TrainSweepResult) Plot(path string) error {
	s := chart.Series{Label: "mean eval return", SpreadLabel: "± 1 std over seeds", Points: true}
	for _, pt := range r.Points {
		s.X, s.Y, s.YErr = append(s.X, pt.Epsilon), append(s.Y, pt.Mean), append(s.YErr, pt.Std)
	}
	return chart.Chart{Title: fmt.Sprintf("%s %s: return vs privacy (δ = %g, %d seeds)", r.Env, r.Method, r.Delta, len(r.Seeds)),
		XLabel: "per-episode ε (log scale)", YLabel: "eval return", LogX: true, Series: []chart.Series{s}}.Save(path)
}

// Plot writes the mean cumulative regret of every run against the episode
// number to path.
func (r LogLinearResult) Plot(path string) error {
	title := fmt.Sprintf("%s, log-linear DPPG (p = %g, mean of %d seeds)", r.Env, r.P, len(r.Runs[0].Final))
	return PlotRegret(path, title, []LogLinearResult{r}, false)
}

// RegretTitle is the default title of PlotRegret's figure of results.
func RegretTitle(results []LogLinearResult) string {
	if pDiffers(results) {
		return "RiverSwim, log-linear DPPG (mean cumulative regret over seeds)"
	}
	return fmt.Sprintf("%s, log-linear DPPG (p = %g, mean cumulative regret over seeds)", results[0].Env, results[0].P)
}

// pDiffers reports whether the results differ in RiverSwim's p.
func pDiffers(results []LogLinearResult) bool {
	return slices.ContainsFunc(results, func(r LogLinearResult) bool { return r.P != results[0].P })
}

// PlotRegret draws the mean cumulative regret curve of every run of the
// results on one figure (the paper's Figure 1) and writes it to path. The
// legend gives each result's p when they differ in it; logLog uses
// logarithmic axes (where linear regret has slope 1 and sublinear regret
// bends below it; points with zero regret are left out). Runs at epsilon
// < 2 are dashed (Figure 1's convention).
func PlotRegret(path, title string, results []LogLinearResult, logLog bool) error {
	withP := pDiffers(results)
	withRidge, withExact := klFisherDiffers(results)
	c := chart.Chart{Title: title, XLabel: "episodes", YLabel: "cumulative regret", LogX: logLog, LogY: logLog}
	for _, r := range results {
		for _, run := range r.Runs {
			s := chart.Series{Label: regretLabel(r, run, withP, withRidge, withExact), Y: run.Mean, Dashed: run.Epsilon < 2}
			for _, e := range run.CurveEpisodes {
				s.X = append(s.X, float64(e))
			}
			c.Series = append(c.Series, s)
		}
	}
	return c.Save(path)
}

// klFisherDiffers reports whether the KL runs among results differ in their
// Fisher ridge and in exact against sampled Fisher, so that the legend names
// what tells them apart.
func klFisherDiffers(results []LogLinearResult) (ridge, exact bool) {
	var first *LogLinearResult
	for i := range results {
		r := &results[i]
		if !slices.ContainsFunc(r.Runs, func(run LogLinearRun) bool { return run.Region == "kl" }) {
			continue
		}
		if first == nil {
			first = r
			continue
		}
		ridge = ridge || r.FisherRidge != first.FisherRidge
		exact = exact || r.FisherExact != first.FisherExact
	}
	return ridge, exact
}

// regretLabel is the legend entry of one run: trust region and epsilon,
// then p, and for KL the Fisher ridge and estimate, when the figure's
// results differ in them.
func regretLabel(r LogLinearResult, run LogLinearRun, withP, withRidge, withExact bool) string {
	label := fmt.Sprintf("DPPG-%s, ε = %s", strings.ToUpper(run.Region), accountant.FormatEpsilon(run.Epsilon))
	if withP {
		label += fmt.Sprintf(", p = %g", r.P)
	}
	if run.Region == "kl" && withRidge {
		label += fmt.Sprintf(", ridge %g", r.FisherRidge)
	}
	if run.Region == "kl" && withExact {
		label += map[bool]string{false: ", sampled F", true: ", exact F"}[r.FisherExact]
	}
	return label
}
