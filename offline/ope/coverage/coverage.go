// Package coverage measures how often the off-policy audit's intervals
// (package ope) cover the true value, on logs drawn from the bandit
// simulator where the target's value is known exactly: the figure of
// merit of an interval. Simulation only: the logs are simulated users,
// nobody's data, and the study prints everything about them.
//
// A study draws Reps independent logs of each size n: each decision is a
// simulated user x, an item a drawn by the logger with probability
// mu(a | x), and a click r ~ Bernoulli(P(click | x, a)) (the simulator's
// exact click probabilities). The logger is epsilon-greedy around the
// best fixed item (a public design, so the weights' bound max pi / min mu
// is public). The target is epsilon-greedy around each user's own best
// item (personalisation: the candidate a team would ship). Its true value
// is computed exactly on held-out users (sims.BanditUsers.Value). Every
// interval is scored by its coverage (the share of logs whose interval
// holds the truth) and its mean width, against the oracle width 2 z sd,
// sd the estimate's standard deviation over the logs (the Wald interval
// with the true variance).
package coverage

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"dprl/ledger/accountant"
	"dprl/noise"
	"dprl/offline/ope"
	"dprl/offline/policies"
	"dprl/sims"

	"gonum.org/v1/gonum/stat/distuv"
)

// Config is a coverage study.
type Config struct {
	// Env is the simulator: bandit (one-step decisions; the default) or
	// riverswim (20-step episodes: the logger and the target are
	// epsilon-greedy around swimming right, each episode weighted by the
	// product of its steps' ratios) or recsys (the recommendation
	// simulator's sessions, their first Horizon slates, under logger and
	// target epsilon-greedy around the topic of highest observed click
	// rate).
	Env string `flag:"env" usage:"the simulator: bandit (one-step decisions), riverswim (20-step episodes; logger and target epsilon-greedy around swimming right) or recsys (sessions' first --horizon slates; logger and target epsilon-greedy around the topic of highest observed click rate)" default:"bandit"`
	// Horizon is the number of slates of a recsys session the value
	// counts (default 10).
	Horizon int `flag:"horizon" usage:"recsys: the slates of a session the value counts (its first H)" default:"10"`
	// Sizes are the log sizes n (default 500, 2,000, 10,000).
	Sizes []int `flag:"n" usage:"logged decisions per log (comma-separated sizes)" default:"500,2000,10000"`
	// Reps is the number of logs per size (default 1,000).
	Reps int `flag:"reps" usage:"logs per size" default:"1000"`
	// Epsilons are the privacy levels: 0 is the non-private report (every
	// estimator and interval, and the lower bound), a positive value the
	// private audit at that epsilon (default 0, 1, 5).
	Epsilons []float64 `flag:"epsilon" usage:"privacy levels: 0 the non-private report, > 0 the private audit at that epsilon (delta 1e-5)" default:"0,1,5"`
	// Delta is the private audit's delta (default 1e-5).
	Delta float64
	// LoggerEps and TargetEps are the logger's and the target's epsilon
	// (defaults 0.1 and 0.1).
	LoggerEps float64 `flag:"logger-epsilon" usage:"the logger's epsilon (epsilon-greedy around the best fixed item)" default:"0.1"`
	TargetEps float64 `flag:"target-epsilon" usage:"the target's epsilon (epsilon-greedy around each user's best item)" default:"0.1"`
	// Logger, when set, is the logging policy instead of the
	// epsilon-greedy one: a policies.Parse spec over the bandit's items
	// (for example "snapshot:FILE", a DP agent's released policy with its
	// own probabilities). Its weight bound is max pi / mu over the
	// held-out users.
	Logger string `flag:"logger" usage:"the logging policy instead of epsilon-greedy: snapshot:FILE (a released policy's own probabilities, e.g. the DP agent's: dprl ledger snapshot), softmax:FILE:TEMP, epsilon-greedy:FILE:EPS"`
	// Bootstrap is the number of percentile-bootstrap resamples (IPS and
	// SNIPS; default 200).
	Bootstrap int `flag:"bootstrap" usage:"percentile-bootstrap resamples (IPS, SNIPS)" default:"200"`
	// HeldOut is the number of held-out users the truth is computed on
	// (default 200,000).
	HeldOut int
	// Seed seeds every draw; log r of size n uses its own stream, so the
	// result does not depend on Workers.
	Seed uint64 `flag:"seed" usage:"seed of every draw (default: from the OS)"`
	// DumpDir, when set, receives every log as a CSV file
	// n<N>-rep<R>.csv of its decisions' weight w and reward r (columns
	// "w,r"), for running other libraries' estimators on the same logs.
	DumpDir string `flag:"dump-logs" usage:"write every simulated log's weights and rewards as CSV files to this existing directory (for other libraries' estimators on the same logs: scripts/ope/peers.py)"`
	// Workers is the number of goroutines (default 1).
	Workers int `flag:"workers" usage:"goroutines (the result does not depend on it)"`
	// Progress, if set, is called after every log with the logs done and
	// the total.
	Progress func(done, total int)
}

// Validate fills the defaults of the zero fields and checks the rest.
func (c *Config) Validate() error {
	if c.Env == "" {
		c.Env = "bandit"
	}
	if c.Env != "bandit" && c.Env != "riverswim" && c.Env != "recsys" {
		return fmt.Errorf("coverage: simulator %q: want bandit, riverswim or recsys", c.Env)
	}
	if c.Env != "bandit" && c.Logger != "" {
		return fmt.Errorf("coverage: a logger policy file is for the bandit; %s's logger is epsilon-greedy", c.Env)
	}
	if c.Horizon == 0 {
		c.Horizon = 10
	}
	if c.Horizon < 1 || c.Horizon > 400 {
		return fmt.Errorf("coverage: horizon %d, want 1 to 400 (a session's step limit)", c.Horizon)
	}
	if c.Sizes == nil {
		c.Sizes = []int{500, 2000, 10000}
	}
	if c.Reps == 0 {
		c.Reps = 1000
	}
	if c.Epsilons == nil {
		c.Epsilons = []float64{0, 1, 5}
	}
	if c.Delta == 0 {
		c.Delta = 1e-5
	}
	if c.LoggerEps == 0 {
		c.LoggerEps = 0.1
	}
	if c.TargetEps == 0 {
		c.TargetEps = 0.1
	}
	if c.Bootstrap == 0 {
		c.Bootstrap = 200
	}
	if c.HeldOut == 0 {
		c.HeldOut = 200_000
	}
	if c.Workers < 1 {
		c.Workers = 1
	}
	if c.DumpDir != "" {
		if fi, err := os.Stat(c.DumpDir); err != nil || !fi.IsDir() {
			return fmt.Errorf("coverage: dump directory %q: want an existing directory", c.DumpDir)
		}
	}
	switch {
	case c.Reps < 2:
		return fmt.Errorf("coverage: %d repetitions, want >= 2", c.Reps)
	case !(c.LoggerEps > 0 && c.LoggerEps <= 1) || !(c.TargetEps >= 0 && c.TargetEps <= 1):
		return fmt.Errorf("coverage: logger epsilon %v and target epsilon %v: want (0, 1] and [0, 1]", c.LoggerEps, c.TargetEps)
	case !(c.Delta > 0 && c.Delta < 1):
		return fmt.Errorf("coverage: delta %v, want in (0, 1)", c.Delta)
	}
	for _, n := range c.Sizes {
		if n < 40 {
			return fmt.Errorf("coverage: log size %d, want >= 40 (the lower bound's split)", n)
		}
	}
	for _, e := range c.Epsilons {
		if !(e >= 0) || math.IsInf(e, 0) {
			return fmt.Errorf("coverage: epsilon %v, want 0 (non-private) or > 0", e)
		}
	}
	return nil
}

// Row is one interval's record at one size and privacy level.
type Row struct {
	N         int     `json:"n"`
	Epsilon   float64 `json:"epsilon"` // 0: non-private
	Estimator string  `json:"estimator"`
	Method    string  `json:"method"`
	Coverage  float64 `json:"coverage"`
	// CoverageSE is the binomial standard error of Coverage.
	CoverageSE float64 `json:"coverage_se"`
	// MeanWidth is the mean width of the interval's part inside the
	// outcome's range ([0, Result.OutcomeMax]: an interval reaching past
	// it says no more).
	MeanWidth float64 `json:"mean_width"`
	// OracleWidth is 2 z sd of the estimate over the logs; WidthRatio is
	// MeanWidth / OracleWidth.
	OracleWidth float64 `json:"oracle_width"`
	WidthRatio  float64 `json:"width_ratio"`
	// Bias is the estimate's mean minus the truth.
	Bias float64 `json:"bias"`
}

// Bound is the lower bound's record at one size: how often it was at or
// below the truth (valid) and its mean.
type Bound struct {
	N     int     `json:"n"`
	Valid float64 `json:"valid"`
	Mean  float64 `json:"mean"`
}

// Result is a study's outcome.
type Result struct {
	Simulation string `json:"simulation"`
	// Env is the simulator, Per what the value is per (decision or
	// episode).
	Env   string  `json:"env"`
	Per   string  `json:"per"`
	Truth float64 `json:"truth"`
	// OutcomeMax is the public upper end of the outcome's range (a
	// click's 1, an episode's largest return); the lower end is 0. Widths
	// count the part of an interval inside the range.
	OutcomeMax  float64 `json:"outcome_max"`
	WeightBound float64 `json:"weight_bound"`
	Logger      string  `json:"logger"`
	Target      string  `json:"target"`
	Reps        int     `json:"reps"`
	Level       float64 `json:"level"`
	Rows        []Row   `json:"rows"`
	Bounds      []Bound `json:"lower_bounds"`
	// NoiseMultipliers are the private audit's z per epsilon.
	NoiseMultipliers map[string]float64 `json:"noise_multipliers,omitempty"`
}

// SimulationOnly labels the result.
const SimulationOnly = "simulation only: simulated users; nothing here is anybody's data"

// world is the simulator, the logger and the target.
type world struct {
	env        *sims.Bandit
	A, d       int
	bound      float64 // the weight bound of Config.Logger (0: epsilon-greedy's)
	best       int
	cfg        *Config
	q, mu, tgt []float64
	logger     policies.Policy // nil: epsilon-greedy
}

func newWorld(c *Config, best int) (*world, error) {
	env, err := sims.NewBandit(sims.DefaultBanditConfig())
	if err != nil {
		return nil, err
	}
	bc := env.Config()
	w := &world{env: env, A: bc.Items, d: bc.Dim(), best: best, cfg: c}
	w.q, w.mu, w.tgt = make([]float64, w.A), make([]float64, w.A), make([]float64, w.A)
	if c.Logger != "" {
		if w.logger, err = policies.Parse(c.Logger, policies.Options{NumActions: w.A, ObsDim: w.d}); err != nil {
			return nil, fmt.Errorf("coverage: logger: %w", err)
		}
	}
	return w, nil
}

// greedy writes the epsilon-greedy distribution around item g.
func greedy(dst []float64, g int, eps float64) {
	for a := range dst {
		dst[a] = eps / float64(len(dst))
	}
	dst[g] += 1 - eps
}

// target writes the target's distribution at x: epsilon-greedy around the
// user's best item.
func (w *world) target(dst, x []float64) {
	q := make([]float64, w.A)
	w.env.ClickProbsFor(q, x)
	greedy(dst, slices.Index(q, slices.Max(q)), w.cfg.TargetEps)
}

// weightBound is max pi / min mu for the epsilon-greedy logger; with
// Config.Logger it is set from the held-out users (loggerBound).
func (w *world) weightBound() float64 {
	if w.bound > 0 {
		return w.bound
	}
	e := w.cfg.TargetEps
	return (1 - e + e/float64(w.A)) / (w.cfg.LoggerEps / float64(w.A))
}

// loggerBound is max over the users x and items a of pi(a|x) / mu(a|x)
// for Config.Logger (an error if mu is 0 where pi is not: the target is
// not covered and no estimate is unbiased).
func (w *world) loggerBound(users *sims.BanditUsers) (float64, error) {
	pi, mu := make([]float64, w.A), make([]float64, w.A)
	b := 0.0
	var err error
	users.Each(func(x []float64) {
		if err != nil {
			return
		}
		w.target(pi, x)
		if err = w.logger.Probs(mu, x); err != nil {
			return
		}
		for a := range pi {
			if pi[a] > 0 && mu[a] <= 0 {
				err = fmt.Errorf("coverage: the logger never shows item %d where the target does", a)
				return
			}
			if pi[a] > 0 {
				b = max(b, pi[a]/mu[a])
			}
		}
	})
	return b, err
}

// log draws n logged decisions.
func (w *world) log(n int, rng *rand.Rand) *ope.Log {
	l := &ope.Log{Actions: w.A, Policy: w.target, Decisions: make([]ope.Decision, n)}
	greedy(w.mu, w.best, w.cfg.LoggerEps)
	for i := range l.Decisions {
		x := make([]float64, w.d)
		w.env.DrawUser(rng, x)
		w.env.ClickProbsFor(w.q, x)
		if w.logger != nil {
			if err := w.logger.Probs(w.mu, x); err != nil {
				panic(fmt.Sprintf("coverage: the logger refused a simulated user: %v", err)) // checked on the held-out users first
			}
		}
		a := policies.Sample(rng, w.mu)
		r := 0.0
		if rng.Float64() < w.q[a] {
			r = 1
		}
		l.Decisions[i] = ope.Decision{X: x, Action: a, Reward: r, Prob: w.mu[a]}
	}
	return l
}

// dump writes the log's weights and rewards as CSV.
func dump(path string, l *ope.Log, pi []float64) error {
	var b strings.Builder
	b.WriteString("w,r\n")
	for _, d := range l.Decisions {
		l.Policy(pi, d.X)
		b.WriteString(strconv.FormatFloat(pi[d.Action]/d.Prob, 'g', -1, 64))
		b.WriteByte(',')
		b.WriteString(strconv.FormatFloat(d.Reward, 'g', -1, 64))
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("coverage: dump: %w", err)
	}
	return nil
}

// drawer draws log rep of size n and scores every interval on it; each
// worker has its own.
type drawer func(n, rep int) (outcome, error)

// setupBandit prepares the bandit study: the truth on held-out users, the
// logger's weight bound, and each worker's drawer.
func setupBandit(c *Config) (*Result, func(map[float64]float64, float64) (drawer, error), error) {
	env, err := sims.NewBandit(sims.DefaultBanditConfig())
	if err != nil {
		return nil, nil, err
	}
	users, err := env.HeldOut(c.HeldOut, rand.New(rand.NewPCG(c.Seed, 0x7e1d)))
	if err != nil {
		return nil, nil, err
	}
	best := users.Baselines().BestArm
	w0, err := newWorld(c, best)
	if err != nil {
		return nil, nil, err
	}
	logger := fmt.Sprintf("epsilon-greedy (%g) around the best fixed item %d", c.LoggerEps, best)
	if c.Logger != "" {
		if w0.bound, err = w0.loggerBound(users); err != nil {
			return nil, nil, err
		}
		logger = fmt.Sprintf("%s (its own probabilities)", c.Logger)
	}
	res := &Result{Simulation: SimulationOnly, Env: "bandit", Per: "decision", Truth: users.Value(w0.target), OutcomeMax: 1, WeightBound: w0.weightBound(),
		Logger: logger, Target: fmt.Sprintf("epsilon-greedy (%g) around each user's best item", c.TargetEps), Reps: c.Reps, Level: 0.95}
	return res, func(zs map[float64]float64, truth float64) (drawer, error) {
		w, err := newWorld(c, best)
		if err != nil {
			return nil, err
		}
		w.bound = w0.bound
		return func(n, rep int) (outcome, error) { return one(w, n, rep, zs, truth) }, nil
	}, nil
}

// key names one interval at one size and level.
type key struct {
	n               int
	eps             float64
	estimator, meth string
}

// tally accumulates one key over the logs.
type tally struct {
	covered, count   int
	width, sum, sum2 float64
}

// outcome is one log's scores.
type outcome struct {
	n, rep  int
	ests    []scored
	lbValid bool
	lb      float64
}

type scored struct {
	eps       float64
	estimator string
	value     float64
	ivs       []ope.Interval
}

// Run runs the study. ctx ends it early with ctx's error.
func Run(ctx context.Context, c Config) (*Result, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var (
		res       *Result
		newDrawer func(zs map[float64]float64, truth float64) (drawer, error)
		err       error
	)
	switch c.Env {
	case "bandit":
		res, newDrawer, err = setupBandit(&c)
	case "riverswim":
		res, newDrawer, err = setupEpisodes(&c, newSwim)
	case "recsys":
		res, newDrawer, err = setupEpisodes(&c, newRecSys)
	}
	if err != nil {
		return nil, err
	}
	res.NoiseMultipliers = map[string]float64{}
	zs := map[float64]float64{}
	for _, e := range c.Epsilons {
		if e > 0 {
			z, err := accountant.Calibrate(accountant.Analytic{}, e, c.Delta, 1, 1)
			if err != nil {
				return nil, err
			}
			zs[e] = z
			res.NoiseMultipliers[fmt.Sprint(e)] = z
		}
	}
	type job struct{ n, rep int }
	jobs := make(chan job)
	outs := make(chan outcome)
	errc := make(chan error, c.Workers)
	var wg sync.WaitGroup
	for range c.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A failed worker keeps draining the jobs, so the feeder never
			// blocks; the first error is returned.
			draw, err := newDrawer(zs, res.Truth)
			for j := range jobs {
				if err != nil {
					continue
				}
				var o outcome
				if o, err = draw(j.n, j.rep); err != nil {
					select {
					case errc <- err:
					default:
					}
					continue
				}
				outs <- o
			}
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for _, n := range c.Sizes {
			for r := range c.Reps {
				select {
				case jobs <- job{n, r}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	go func() { wg.Wait(); close(outs) }()
	// Collected first and tallied in a fixed order, so that the sums (and
	// so the result) do not depend on the order the workers finish in.
	byN := map[int][]outcome{}
	total, done := len(c.Sizes)*c.Reps, 0
	for o := range outs {
		if byN[o.n] == nil {
			byN[o.n] = make([]outcome, c.Reps)
		}
		byN[o.n][o.rep] = o
		done++
		if c.Progress != nil {
			c.Progress(done, total)
		}
	}
	top := res.OutcomeMax
	tallies := map[key]*tally{}
	lbs := map[int]*tally{}
	for _, n := range c.Sizes {
		for _, o := range byN[n] {
			for _, s := range o.ests {
				for _, iv := range s.ivs {
					k := key{o.n, s.eps, s.estimator, iv.Method}
					t := tallies[k]
					if t == nil {
						t = &tally{}
						tallies[k] = t
					}
					t.count++
					if iv.Lo <= res.Truth && res.Truth <= iv.Hi {
						t.covered++
					}
					t.width += min(iv.Hi, top) - max(iv.Lo, 0) // the part inside the outcome's range
					t.sum += s.value
					t.sum2 += s.value * s.value
				}
			}
			if slices.Contains(c.Epsilons, 0) && c.Env == "bandit" {
				t := lbs[o.n]
				if t == nil {
					t = &tally{}
					lbs[o.n] = t
				}
				t.count++
				if o.lbValid {
					t.covered++
				}
				t.sum += o.lb
			}
		}
	}
	select {
	case err := <-errc:
		return nil, err
	default:
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	z := distuv.UnitNormal.Quantile(0.975)
	for k, t := range tallies {
		n := float64(t.count)
		cov := float64(t.covered) / n
		m := t.sum / n
		sd := math.Sqrt(max(0, t.sum2/n-m*m))
		row := Row{N: k.n, Epsilon: k.eps, Estimator: k.estimator, Method: k.meth, Coverage: cov, CoverageSE: math.Sqrt(cov * (1 - cov) / n),
			MeanWidth: t.width / n, OracleWidth: 2 * z * sd, Bias: m - res.Truth}
		if row.OracleWidth > 0 {
			row.WidthRatio = row.MeanWidth / row.OracleWidth
		}
		res.Rows = append(res.Rows, row)
	}
	slices.SortFunc(res.Rows, func(a, b Row) int {
		if a.Epsilon != b.Epsilon {
			return cmp.Compare(a.Epsilon, b.Epsilon)
		}
		if a.N != b.N {
			return a.N - b.N
		}
		if a.Estimator != b.Estimator {
			return order(a.Estimator) - order(b.Estimator)
		}
		return cmp.Compare(a.Method, b.Method)
	})
	for n, t := range lbs {
		res.Bounds = append(res.Bounds, Bound{N: n, Valid: float64(t.covered) / float64(t.count), Mean: t.sum / float64(t.count)})
	}
	slices.SortFunc(res.Bounds, func(a, b Bound) int { return a.N - b.N })
	return res, nil
}

// order lists the estimators: the recommended first.
func order(e string) int {
	return slices.Index([]string{ope.EstPrivateEL, ope.EstEL, ope.EstTrajEL, ope.EstIPS, ope.EstSNIPS, ope.EstDR, ope.EstDRos, ope.EstSwitchDR, ope.EstPDIS, ope.EstPDWIS, ope.EstTrajDR, ope.EstTrajWDR}, e)
}

// one draws log rep of size n and scores every interval on it.
func one(w *world, n, rep int, zs map[float64]float64, truth float64) (outcome, error) {
	c := w.cfg
	rng := rand.New(rand.NewPCG(c.Seed^uint64(n)<<32, uint64(rep)))
	l := w.log(n, rng)
	o := outcome{n: n, rep: rep}
	if c.DumpDir != "" {
		if err := dump(filepath.Join(c.DumpDir, fmt.Sprintf("n%d-rep%d.csv", n, rep)), l, w.tgt); err != nil {
			return o, err
		}
	}
	opt := ope.Options{WeightBound: w.weightBound(), Bootstrap: c.Bootstrap, Rand: rng}
	for _, eps := range c.Epsilons {
		if eps > 0 {
			e, err := ope.PrivateAudit(l, opt, zs[eps], noise.NewGaussian(rng))
			if err != nil {
				return o, err
			}
			o.ests = append(o.ests, scored{eps, e.Estimator, e.Value, e.Intervals})
			continue
		}
		noBoot := opt
		noBoot.Bootstrap = -1
		for _, f := range []struct {
			fn  func(*ope.Log, ope.Options) (ope.Estimate, error)
			opt ope.Options
		}{{ope.EL, noBoot}, {ope.IPS, opt}, {ope.SNIPS, opt}, {ope.DR, noBoot}, {ope.DRos, noBoot}, {ope.SwitchDR, noBoot}} {
			e, err := f.fn(l, f.opt)
			if err != nil {
				return o, err
			}
			o.ests = append(o.ests, scored{0, e.Estimator, e.Value, e.Intervals})
		}
		b, err := ope.LowerBound(l, opt)
		if err != nil {
			return o, err
		}
		o.lb, o.lbValid = b.Value, b.Value <= truth
	}
	return o, nil
}
