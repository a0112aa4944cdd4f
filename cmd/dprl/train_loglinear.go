package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"dprl/experiment"
	"dprl/internal/progress"
	"dprl/policy"
	"dprl/profile"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// algoLogLinear names log-linear DPPG on RiverSwim (Rio et al., App. C.2.2).
const algoLogLinear = "dppg-loglinear"

// logLinearFlags names the command-line flag of every experiment.LogLinear
// field, for usage errors.
var logLinearFlags = map[string]string{
	"P": "--env", "Episodes": "--episodes", "Seeds": "--seeds", "Delta": "--delta",
	"InitRight": "--init-right", "Alpha": "--alpha", "Clip": "--clip", "K": "--K",
	"Eta": "--eta", "Workers": "--workers", "FisherRidge": "--fisher-ridge",
	"BaselineLR": "--baseline-lr", "Regions": "--region", "Epsilons": "--eps",
}

// flagErrors rewrites the *experiment.FieldError leaves of err with
// flag names ("--episodes 0: must be >= 1"); other errors keep their text.
func flagErrors(err error, names map[string]string) []string {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, flagErrors(e, names)...)
		}
		return out
	}
	var fe *experiment.FieldError
	if errors.As(err, &fe) {
		if name, ok := names[fe.Field]; ok {
			if fe.Value == nil {
				return []string{fmt.Sprintf("%s: %s", name, fe.Reason)}
			}
			return []string{fmt.Sprintf("%s %v: %s", name, fe.Value, fe.Reason)}
		}
	}
	return []string{err.Error()}
}

// runTrainLogLinear runs experiment.RunLogLinear (log-linear DPPG, Table 2,
// on RiverSwim) with the flags' configuration and prints, plots and traces
// its result.
func runTrainLogLinear(cmd *cobra.Command, a *app, f *trainFlags) error {
	prof, err := profile.Get(f.env)
	p := prof.RiverSwimP
	if err != nil || p == 0 {
		return usagef("train: --algo %s needs --env riverswim or riverswim-0.9, got %q", algoLogLinear, f.env)
	}
	changed := cmd.Flags().Changed
	c := experiment.LogLinear{Env: f.env, P: p, Episodes: f.episodes, Seeds: 5, Workers: f.workers, Epsilons: f.epsilons, Delta: f.delta, Regions: f.regions, InitRight: f.initRight, Alpha: f.alpha, K: 1, ClipAtLR0: f.clipAtLR0, BaselineLR: f.baseLR, FisherRidge: f.ridge, FisherExact: f.fisherEx, Trace: f.diag != ""}
	if changed("seeds") {
		c.Seeds = f.seeds
	}
	if changed("K") {
		c.K = f.k
	}
	// Clip and Eta 0 mean "unset" in the library; a flag set to 0 is an error.
	var errs []string
	if changed("clip") {
		c.Clip = f.clip
		if f.clip == 0 {
			errs = append(errs, fmt.Sprintf("--clip %v: the clipping norm must be finite and > 0", f.clip))
		}
		if changed("alpha") {
			errs = append(errs, "--clip and --alpha: set one (--clip chooses alpha)")
		}
	}
	if changed("eta") {
		c.Eta = f.eta
		if f.eta == 0 {
			errs = append(errs, fmt.Sprintf("--eta %v: the step size must be finite and > 0", f.eta))
		}
	}
	if err := c.Validate(); err != nil {
		errs = append(flagErrors(err, logLinearFlags), errs...)
	}
	if len(errs) > 0 {
		return usagef("train: %s", strings.Join(errs, "; "))
	}
	if c.Seed, err = seedFlag(cmd, "seed", f.seed); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	prog := newLoopProgress(a, "episodes", c.TotalEpisodes())
	res, err := experiment.RunLogLinear(cmd.Context(), c, logLinearProgress{prog})
	prog.done()
	if cerr := (*experiment.ConfigError)(nil); errors.As(err, &cerr) {
		return usagef("train: %s", strings.Join(flagErrors(cerr.Err, logLinearFlags), "; "))
	}
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if f.diag != "" {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		for _, tp := range res.Trace {
			if err := enc.Encode(tp); err != nil {
				return err
			}
		}
		if err := os.WriteFile(f.diag, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("train: --diag: %w", err)
		}
	}
	if f.plot != "" {
		if err := writeRegretPNG(f.plot, res); err != nil {
			return fmt.Errorf("train: --plot: %w", err)
		}
	}
	return emit(a.stdout, f.json, res, func(w io.Writer) error { return logLinearText(w, res) })
}

// logLinearProgress adapts loopProgress to experiment.Progress.
type logLinearProgress struct{ *loopProgress }

func (p logLinearProgress) Update(done int64) { p.update(done) }

// logLinearText prints a log-linear experiment result as text.
func logLinearText(w io.Writer, r experiment.LogLinearResult) error {
	eta := "Table 2's schedule"
	if r.Eta > 0 {
		eta = fmt.Sprintf("%g", r.Eta)
	}
	fisher := fmt.Sprintf("on %d public episodes", policy.DefaultLogLinearConfig().FisherEpisodes)
	if r.FisherExact {
		fisher = "exact"
	}
	alpha := fmt.Sprintf("alpha %g", r.Alpha)
	if r.Clip > 0 {
		alpha = fmt.Sprintf("alpha per run for a first S of %g", r.Clip)
	}
	if _, err := fmt.Fprintf(w, "%s %s (p = %g, optimal value %.3f, %d episodes, K %d per update, delta %g, %s, eta %s, baseline lr %g, start logit gap %g, S at %s, KL Fisher %s with ridge %g; %.1f s):\n", r.Env, r.Method, r.P, r.Optimal, r.Episodes, r.K, r.Delta, alpha, eta, r.BaselineLR, r.InitRight, map[bool]string{false: "the current eta", true: "eta_0"}[r.ClipAtLR0], fisher, r.FisherRidge, r.Seconds); err != nil {
		return err
	}
	for _, run := range r.Runs {
		mean, std := experiment.MeanStd(run.Final)
		if _, err := fmt.Fprintf(w, "  epsilon %.3g per episode (z = %.3f) %-3s alpha %.4g: cumulative regret %.1f ± %.1f over %d seeds; regret per episode first 10%% %.4g, last 10%% %.4g; S %.3g to %.3g; final values %s\n",
			run.Epsilon, run.Z, run.Region, run.Alpha, mean, std, len(run.Final), run.FirstSlope, run.LastSlope, run.ClipFirst, run.ClipLast, formatFloats(run.FinalValue)); err != nil {
			return err
		}
	}
	return nil
}

func formatFloats(x []float64) string {
	s := make([]string, len(x))
	for i, v := range x {
		s[i] = fmt.Sprintf("%.2f", v)
	}
	return strings.Join(s, " ")
}

// writeRegretPNG plots the mean cumulative regret of every run against the
// episode number.
func writeRegretPNG(path string, r experiment.LogLinearResult) error {
	title := fmt.Sprintf("%s, log-linear DPPG (p = %g, mean of %d seeds)", r.Env, r.P, len(r.Runs[0].Final))
	return plotRegret(path, title, []experiment.LogLinearResult{r}, false, false)
}

// plotRegret draws the mean cumulative regret curve of every run of the
// results on one figure; withP adds each result's p to the legend, logLog
// uses logarithmic axes (where linear regret has slope 1 and sublinear
// regret bends below it; points with zero regret are left out). Runs at
// epsilon < 2 are dashed (the paper's Figure 1 convention).
func plotRegret(path, title string, results []experiment.LogLinearResult, withP, logLog bool) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "episodes"
	p.Y.Label.Text = "cumulative regret"
	if logLog {
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	}
	colors := []plotColor{{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff}, {0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}}
	p.Add(plotter.NewGrid())
	withRidge, withExact := klFisherDiffers(results)
	i := 0
	for _, r := range results {
		for _, run := range r.Runs {
			xy := make(plotter.XYs, 0, len(run.Mean))
			for k, v := range run.Mean {
				if logLog && !(v > 0) {
					continue
				}
				xy = append(xy, plotter.XY{X: float64(run.CurveEpisodes[k]), Y: v})
			}
			if len(xy) == 0 {
				continue
			}
			line, err := plotter.NewLine(xy)
			if err != nil {
				return err
			}
			line.Color = colors[i%len(colors)]
			i++
			line.Width = vg.Points(1.5)
			if run.Epsilon < 2 {
				line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			}
			p.Add(line)
			p.Legend.Add(regretLabel(r, run, withP, withRidge, withExact), line)
		}
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.YOffs = -vg.Points(6) // clear of the title
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}

// klFisherDiffers reports whether the KL runs among results differ in their
// Fisher ridge and in exact against sampled Fisher, so that the legend names
// what tells them apart.
func klFisherDiffers(results []experiment.LogLinearResult) (ridge, exact bool) {
	var first *experiment.LogLinearResult
	for i := range results {
		r := &results[i]
		if !slices.ContainsFunc(r.Runs, func(run experiment.LogLinearRun) bool { return run.Region == "kl" }) {
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
func regretLabel(r experiment.LogLinearResult, run experiment.LogLinearRun, withP, withRidge, withExact bool) string {
	label := fmt.Sprintf("DPPG-%s, ε = %.2g", strings.ToUpper(run.Region), run.Epsilon)
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

// loopProgress reports the progress of a counted loop on stderr: a live bar
// on a terminal, an info log line otherwise, nothing with --log-level above
// info. The caller calls update once per period (a ticker of Period()) and
// once at the end, from one goroutine.
type loopProgress struct {
	*progress.Reporter
	a     *app
	what  string
	total int64
	start time.Time
}

func newLoopProgress(a *app, what string, total int64) *loopProgress {
	return &loopProgress{Reporter: newReporter(a), a: a, what: what, total: total, start: time.Now()}
}

func (p *loopProgress) update(done int64) {
	if p.Off() || p.total <= 0 {
		return
	}
	rate := float64(done) / max(time.Since(p.start).Seconds(), 1e-9)
	if p.TTY() {
		p.Draw(fmt.Sprintf("%s %d/%d %s  %.0f/s ", progress.Bar(30, done, p.total), done, p.total, p.what, rate))
		return
	}
	p.a.log.Info().Int64(p.what, done).Int64("of", p.total).Float64("per_second", math.Round(rate)).Msg("training")
}

// done ends the live bar's line.
func (p *loopProgress) done() { p.Done() }
