package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"dprl/internal/progress"
	"dprl/ledger/accountant"
	"dprl/policy"
	"dprl/profile"
	"dprl/sims"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// algoLogLinear names log-linear DPPG on RiverSwim (Rio et al., App. C.2.2).
const algoLogLinear = "dppg-loglinear"

// riverMDP adapts sims' RiverSwim tables to policy.TabularMDP.
type riverMDP struct{ sims.Tabular }

func (riverMDP) Horizon() int                    { return sims.RiverSwimHorizon }
func (riverMDP) Start() int                      { return 0 }
func (m riverMDP) Transition(s, a int) []float64 { return m.P[s][a] }
func (m riverMDP) Reward(s, a int) float64       { return m.R[s][a] }

// logLinearRun is one (epsilon, trust region) configuration of the grid: the
// cumulative expected regret at up to logLinearCurvePoints episodes, averaged
// over seeds.
type logLinearRun struct {
	Epsilon float64 `json:"epsilon"` // total per episode, policy and baseline composed
	Z       float64 `json:"z"`       // noise multiplier of each block
	Region  string  `json:"region"`
	// Alpha is the run's trust region size: --alpha, or the alpha for
	// which the first update's clipping norm is --clip.
	Alpha      float64   `json:"alpha"`
	Seeds      []uint64  `json:"seeds"`
	Final      []float64 `json:"final_regret"` // cumulative regret of each seed
	FinalValue []float64 `json:"final_value"`  // value of each seed's last policy
	// CurveEpisodes[i] episodes had been played when the mean cumulative
	// regret over seeds was MeanRegret[i]; every episode when --episodes is
	// at most logLinearCurvePoints, evenly spaced otherwise (always ending
	// at --episodes).
	CurveEpisodes []int     `json:"curve_episodes"`
	Mean          []float64 `json:"mean_regret"`
	// FirstSlope and LastSlope are the mean regret per episode over the
	// first and the last tenth of the episodes (exact, not from the curve):
	// a last slope far below the first is what sublinear regret looks like.
	FirstSlope float64 `json:"regret_per_episode_first_tenth"`
	LastSlope  float64 `json:"regret_per_episode_last_tenth"`
	// ClipFirst and ClipLast are the trust-region clipping norms S of the
	// first and the last update, mean over seeds (the L2 region's S depends
	// only on eta; the KL region's on the policy too).
	ClipFirst float64 `json:"clip_first"`
	ClipLast  float64 `json:"clip_last"`
}

// logLinearCurvePoints bounds the stored regret curve of a run.
const logLinearCurvePoints = 1000

// logLinearResult is the output of dprl train --algo dppg-loglinear.
type logLinearResult struct {
	Env      string  `json:"env"`
	Method   string  `json:"method"`
	P        float64 `json:"p"`
	Optimal  float64 `json:"optimal_value"`
	Episodes int     `json:"episodes"`
	Delta    float64 `json:"delta"`
	// PrivacyUnit is "episode": every run's epsilon covers one RiverSwim
	// episode (its whole trajectory enters exactly one update).
	PrivacyUnit string `json:"privacy_unit"`
	ClipAtLR0   bool   `json:"clip_at_lr0"`
	// Alpha is --alpha; with --clip (Clip > 0) each run has its own
	// alpha, chosen so that its first update's clipping norm is Clip.
	Alpha float64 `json:"alpha"`
	Clip  float64 `json:"clip,omitempty"`
	// K is the number of episodes per update (Algorithm 2's fixed
	// denominator; App. C.2.2: 1).
	K int `json:"k"`
	// Eta is the constant policy step size of --eta; 0 means Table 2's
	// schedule (12, divided by 5 every 50 episodes, floor 0.06).
	Eta        float64 `json:"eta"`
	InitRight  float64 `json:"init_right"` // starting logit gap right - left in every state
	BaselineLR float64 `json:"baseline_lr"`
	// FisherRidge and FisherExact configure the KL region's Fisher matrix:
	// the ridge added to it, and its expectation under the public model
	// (true) or the estimate on 25 public episodes (false, the paper's).
	FisherRidge float64        `json:"fisher_ridge"`
	FisherExact bool           `json:"fisher_exact"`
	Seconds     float64        `json:"seconds"`
	Runs        []logLinearRun `json:"runs"`
}

// logLinearJob is one seed of one configuration.
type logLinearJob struct {
	run, seedIdx int
	cfg          policy.LogLinearConfig
	seed, stream uint64
	// results
	curve               []float64             // cumulative regret at the curve points
	trace               []logLinearTracePoint // with --diag
	firstSum, lastSum   float64               // regret summed over the first and last tenth
	final, value        float64
	clipFirst, clipLast float64
}

// logLinearTracePoint is one line of dprl train --algo dppg-loglinear
// --diag: the released policy of one seed at one curve point. It is
// computed from the released parameters only (public), unlike dppg's --diag.
type logLinearTracePoint struct {
	Epsilon  float64 `json:"epsilon"`
	Region   string  `json:"region"`
	Seed     uint64  `json:"seed"`
	Episodes int     `json:"episodes"` // episodes played (and updates fed) before this policy
	Value    float64 `json:"value"`    // its exact value from the start state
	// Gaps[s] is the logit gap theta(s, right) - theta(s, left).
	Gaps []float64 `json:"gaps"`
}

// runTrainLogLinear runs log-linear DPPG (Table 2) on RiverSwim for every
// epsilon in --eps and trust region in --region over --seeds seeds, and
// reports the cumulative expected regret sum_k (V* - V^{pi_k}) (exact values
// from the model). The two blocks of an update (policy and linear baseline)
// are noised with the same z, calibrated with the analytic accountant so that
// their composition is at most the requested epsilon. Seeds and
// configurations run on --workers goroutines; each has its own generator, so
// the result does not depend on the number of workers.
func runTrainLogLinear(cmd *cobra.Command, a *app, f *trainFlags) error {
	prof, err := profile.Get(f.env)
	p := prof.RiverSwimP
	if err != nil || p == 0 {
		return usagef("train: --algo %s needs --env riverswim or riverswim-0.9, got %q", algoLogLinear, f.env)
	}
	var errs []string
	if f.episodes < 1 {
		errs = append(errs, fmt.Sprintf("--episodes %d: must be >= 1", f.episodes))
	}
	if !cmd.Flags().Changed("seeds") {
		f.seeds = 5
	} else if f.seeds < 1 {
		errs = append(errs, fmt.Sprintf("--seeds %d: must be >= 1", f.seeds))
	}
	if !(f.delta > 0 && f.delta < 1) {
		errs = append(errs, fmt.Sprintf("--delta %v: must be in (0, 1)", f.delta))
	}
	if math.IsNaN(f.initRight) || math.IsInf(f.initRight, 0) {
		errs = append(errs, fmt.Sprintf("--init-right %v: must be finite", f.initRight))
	}
	if !(f.alpha > 0) || math.IsInf(f.alpha, 0) {
		errs = append(errs, fmt.Sprintf("--alpha %v: the trust region size must be finite and > 0", f.alpha))
	}
	clip := 0.0
	if cmd.Flags().Changed("clip") {
		clip = f.clip
		if !(clip > 0) || math.IsInf(clip, 0) {
			errs = append(errs, fmt.Sprintf("--clip %v: the clipping norm must be finite and > 0", f.clip))
		}
		if cmd.Flags().Changed("alpha") {
			errs = append(errs, "--clip and --alpha: set one (--clip chooses alpha)")
		}
	}
	k := 1
	if cmd.Flags().Changed("K") {
		k = f.k
		if k < 1 {
			errs = append(errs, fmt.Sprintf("--K %d: episodes per update must be >= 1", f.k))
		}
	}
	if cmd.Flags().Changed("eta") && (!(f.eta > 0) || math.IsInf(f.eta, 0)) {
		errs = append(errs, fmt.Sprintf("--eta %v: the step size must be finite and > 0", f.eta))
	}
	if f.workers < 0 {
		errs = append(errs, fmt.Sprintf("--workers %d: must be >= 0", f.workers))
	}
	if !(f.ridge >= 0) || math.IsInf(f.ridge, 0) {
		errs = append(errs, fmt.Sprintf("--fisher-ridge %v: must be finite and >= 0", f.ridge))
	}
	if !(f.baseLR >= 0) || math.IsInf(f.baseLR, 0) {
		errs = append(errs, fmt.Sprintf("--baseline-lr %v: must be finite and >= 0", f.baseLR))
	}
	regions := make([]policy.TrustRegion, len(f.regions))
	for i, r := range f.regions {
		switch r {
		case "l2":
			regions[i] = policy.RegionL2
		case "kl":
			regions[i] = policy.RegionKL
		case "l2-markov":
			regions[i] = policy.RegionL2Markov
		default:
			errs = append(errs, fmt.Sprintf("--region %q: want l2, kl or l2-markov", r))
		}
	}
	zs := make([]float64, len(f.epsilons))
	for i, eps := range f.epsilons {
		z, err := accountant.Calibrate(accountant.Analytic{}, eps, f.delta, 1, 2)
		if err != nil {
			errs = append(errs, fmt.Sprintf("--eps %v: %v", eps, err))
		}
		zs[i] = z
	}
	if len(errs) > 0 {
		return usagef("train: %s", strings.Join(errs, "; "))
	}
	seed, err := seedFlag(cmd, "seed", f.seed)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	tab, err := sims.RiverSwimModel(p)
	if err != nil {
		return err
	}
	var m policy.TabularMDP = riverMDP{tab} // one interface conversion, not one per call
	res := logLinearResult{Env: f.env, Method: algoLogLinear, P: p, Optimal: policy.OptimalTabular(m), Episodes: f.episodes, Delta: f.delta, PrivacyUnit: "episode", ClipAtLR0: f.clipAtLR0, Alpha: f.alpha, InitRight: f.initRight, BaselineLR: f.baseLR, FisherRidge: f.ridge, FisherExact: f.fisherEx, Clip: clip, K: k}
	if cmd.Flags().Changed("eta") {
		res.Eta = f.eta
	}
	points := curvePoints(f.episodes)
	var jobs []*logLinearJob
	for i, z := range zs {
		g, err := accountant.Analytic{}.Epsilon(f.delta, accountant.Gaussian(z), accountant.Gaussian(z))
		if err != nil {
			return err
		}
		for j, region := range regions {
			cfg := policy.DefaultLogLinearConfig()
			cfg.Z, cfg.Region, cfg.ClipAtLR0, cfg.Alpha, cfg.BaselineLR = z, region, f.clipAtLR0, f.alpha, f.baseLR
			cfg.FisherRidge, cfg.FisherExact, cfg.UsersPerUpdate = f.ridge, f.fisherEx, k
			if res.Eta > 0 {
				cfg.LR0, cfg.LRMin, cfg.LRFactor = res.Eta, res.Eta, 1
			}
			if err := cfg.Validate(); err != nil {
				return usageError{err}
			}
			if clip > 0 {
				l, err := newLogLinearStart(m, cfg, f.initRight)
				if err != nil {
					return usageError{err}
				}
				if cfg.Alpha, err = l.AlphaForClip(m, clip); err != nil {
					return usagef("train: --clip: %v", err)
				}
			}
			run := logLinearRun{Epsilon: g.Epsilon, Z: z, Region: f.regions[j], Alpha: cfg.Alpha, CurveEpisodes: points, Mean: make([]float64, len(points))}
			for s := range f.seeds {
				run.Seeds = append(run.Seeds, seed+uint64(s))
				jobs = append(jobs, &logLinearJob{run: len(res.Runs), seedIdx: s, cfg: cfg, seed: seed + uint64(s), stream: uint64(1000*i + j)})
			}
			res.Runs = append(res.Runs, run)
		}
	}
	start := time.Now()
	if err := runLogLinearJobs(cmd.Context(), a, m, res.Optimal, f, points, jobs); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	res.Seconds = time.Since(start).Seconds()
	tenth := max(1, f.episodes/10)
	for _, jb := range jobs {
		run := &res.Runs[jb.run]
		n := float64(len(run.Seeds))
		for k, v := range jb.curve {
			run.Mean[k] += v / n
		}
		run.FirstSlope += jb.firstSum / float64(tenth) / n
		run.LastSlope += jb.lastSum / float64(tenth) / n
		run.ClipFirst += jb.clipFirst / n
		run.ClipLast += jb.clipLast / n
		run.Final = append(run.Final, jb.final)
		run.FinalValue = append(run.FinalValue, jb.value)
	}
	if f.diag != "" {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		for _, jb := range jobs {
			run := res.Runs[jb.run]
			for _, tp := range jb.trace {
				tp.Epsilon, tp.Region, tp.Seed = run.Epsilon, run.Region, jb.seed
				if err := enc.Encode(tp); err != nil {
					return err
				}
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
	return emit(a.stdout, f.json, res, res.text)
}

// curvePoints returns the episode counts at which a regret curve of n
// episodes is stored: 1..n when n <= logLinearCurvePoints, else that many
// evenly spaced counts ending at n.
func curvePoints(n int) []int {
	k := min(n, logLinearCurvePoints)
	pts := make([]int, k)
	for i := range pts {
		pts[i] = int((int64(i) + 1) * int64(n) / int64(k))
	}
	return pts
}

// runLogLinearJobs runs the jobs on --workers goroutines (GOMAXPROCS by
// default) and reports progress on stderr. Every job is deterministic in its
// seed and stream.
func runLogLinearJobs(ctx context.Context, a *app, m policy.TabularMDP, optimal float64, f *trainFlags, points []int, jobs []*logLinearJob) error {
	workers := f.workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(jobs))
	total := int64(len(jobs)) * int64(f.episodes)
	var done atomic.Int64
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan *logLinearJob)
	errc := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for jb := range next {
				if err := runLogLinearJob(ctx, m, optimal, f, points, jb, &done); err != nil {
					errc <- err
					cancel()
					return
				}
			}
		}()
	}
	prog := newLoopProgress(a, "episodes", total)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(prog.Period())
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				prog.update(done.Load())
			}
		}
	}()
feed:
	for _, jb := range jobs {
		select {
		case next <- jb:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	cancel()
	<-finished
	select {
	case err := <-errc:
		prog.done()
		return err
	default:
	}
	if err := ctx.Err(); err != nil && done.Load() < total {
		prog.done()
		return context.Cause(ctx)
	}
	prog.update(total)
	prog.done()
	return nil
}

// newLogLinearStart returns a learner at the policy with logit gap
// theta(s, right) - theta(s, left) = initRight in every state (0: uniform,
// the paper's start; large: near the right-everywhere policy, which is
// near-optimal).
func newLogLinearStart(m policy.TabularMDP, cfg policy.LogLinearConfig, initRight float64) (*policy.LogLinearLearner, error) {
	l, err := policy.NewLogLinearLearner(m.NumStates(), m.NumActions(), cfg)
	if err != nil {
		return nil, err
	}
	for st := range m.NumStates() {
		l.Policy.Theta[st*2+1], l.Policy.Theta[st*2] = initRight/2, -initRight/2
	}
	return l, nil
}

// runLogLinearJob plays one seed: evaluate the current policy exactly (its
// regret), roll out one episode, update.
func runLogLinearJob(ctx context.Context, m policy.TabularMDP, optimal float64, f *trainFlags, points []int, jb *logLinearJob, done *atomic.Int64) error {
	l, err := newLogLinearStart(m, jb.cfg, f.initRight)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(jb.seed, jb.stream))
	ev := policy.NewTabularEvaluator(m)
	probs := l.Policy.Probs
	n := f.episodes
	tenth := max(1, n/10)
	jb.curve = make([]float64, len(points))
	var ep policy.Episode
	cum, pt := 0.0, 0
	const batch = 4096 // episodes between context checks and progress counts
	r, stale := 0.0, true
	for k := range n {
		if stale { // the policy changes only when an update is released
			r = optimal - ev.Value(probs)
		}
		cum += r
		if k < tenth {
			jb.firstSum += r
		}
		if k >= n-tenth {
			jb.lastSum += r
		}
		if k+1 == points[pt] {
			jb.curve[pt] = cum
			pt++
		}
		l.Policy.Rollout(m, rng, &ep)
		info, err := l.Update(m, &ep, rng)
		if err != nil {
			return err
		}
		stale = info.Released
		if f.diag != "" && pt > 0 && points[pt-1] == k+1 {
			gaps := make([]float64, m.NumStates())
			for st := range gaps {
				gaps[st] = l.Policy.Theta[st*2+1] - l.Policy.Theta[st*2]
			}
			jb.trace = append(jb.trace, logLinearTracePoint{Episodes: k + 1, Value: ev.Value(probs), Gaps: gaps})
		}
		if k == 0 {
			jb.clipFirst = info.S
		}
		jb.clipLast = info.S
		if (k+1)%batch == 0 {
			done.Add(batch)
			if err := ctx.Err(); err != nil {
				return context.Cause(ctx)
			}
		}
	}
	done.Add(int64(n % batch))
	jb.final, jb.value = cum, ev.Value(probs)
	return nil
}

func (r logLinearResult) text(w io.Writer) error {
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
		mean, std := meanStd(run.Final)
		if _, err := fmt.Fprintf(w, "  epsilon %.3g per episode (z = %.3f) %-3s alpha %.4g: cumulative regret %.1f ± %.1f over %d seeds; regret per episode first 10%% %.4g, last 10%% %.4g; S %.3g to %.3g; final values %s\n",
			run.Epsilon, run.Z, run.Region, run.Alpha, mean, std, len(run.Final), run.FirstSlope, run.LastSlope, run.ClipFirst, run.ClipLast, formatFloats(run.FinalValue)); err != nil {
			return err
		}
	}
	return nil
}

func meanStd(x []float64) (mean, std float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		std += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(std / float64(len(x)))
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
func writeRegretPNG(path string, r logLinearResult) error {
	title := fmt.Sprintf("%s, log-linear DPPG (p = %g, mean of %d seeds)", r.Env, r.P, len(r.Runs[0].Final))
	return plotRegret(path, title, []logLinearResult{r}, false, false)
}

// plotRegret draws the mean cumulative regret curve of every run of the
// results on one figure; withP adds each result's p to the legend, logLog
// uses logarithmic axes (where linear regret has slope 1 and sublinear
// regret bends below it; points with zero regret are left out). Runs at
// epsilon < 2 are dashed (the paper's Figure 1 convention).
func plotRegret(path, title string, results []logLinearResult, withP, logLog bool) error {
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
func klFisherDiffers(results []logLinearResult) (ridge, exact bool) {
	var first *logLinearResult
	for i := range results {
		r := &results[i]
		if !slices.ContainsFunc(r.Runs, func(run logLinearRun) bool { return run.Region == "kl" }) {
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
func regretLabel(r logLinearResult, run logLinearRun, withP, withRidge, withExact bool) string {
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
