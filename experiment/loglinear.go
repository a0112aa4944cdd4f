package experiment

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"dprl/internal/fielderr"
	"dprl/ledger/accountant"
	"dprl/policy"
	"dprl/sims"
)

// RiverMDP adapts sims' RiverSwim tables to policy.TabularMDP.
type RiverMDP struct{ sims.Tabular }

// Horizon is the RiverSwim episode length.
func (RiverMDP) Horizon() int { return sims.RiverSwimHorizon }

// Start is the RiverSwim start state (the left bank).
func (RiverMDP) Start() int { return 0 }

// Transition returns the next-state distribution of action a in state s.
func (m RiverMDP) Transition(s, a int) []float64 { return m.P[s][a] }

// Reward returns the expected reward of action a in state s.
func (m RiverMDP) Reward(s, a int) float64 { return m.R[s][a] }

// CurvePoints bounds the stored regret curve of a run.
const CurvePoints = 1000

// Region names accepted in LogLinear.Regions.
var regionNames = map[string]policy.TrustRegion{
	"l2":        policy.RegionL2,
	"kl":        policy.RegionKL,
	"l2-markov": policy.RegionL2Markov,
}

// LogLinear configures the log-linear DPPG regret experiment on RiverSwim
// (Rio et al., "Differentially private policy gradient", App. C.2.2 and
// Table 2): one run per (epsilon, trust region) pair, each over Seeds seeds.
type LogLinear struct {
	Env string  // profile name, copied to the result
	P   float64 // RiverSwim's probability that swimming right succeeds, in (0, 1]

	Episodes int    // episodes per seed, >= 1
	Seeds    int    // seeds per run, >= 1
	Seed     uint64 // first seed; seed s of every run is Seed+s
	Workers  int    // goroutines; 0 means GOMAXPROCS

	// Epsilons are the total per-episode budgets (policy and baseline
	// blocks composed) at Delta, one run group each.
	Epsilons []float64
	Delta    float64 // in (0, 1)
	// Regions are trust region names: "l2", "kl" or "l2-markov".
	Regions []string

	// InitRight is the starting logit gap right - left in every state
	// (0: uniform, the paper's start).
	InitRight float64
	// Alpha is the trust region size (> 0). When Clip > 0 every run has
	// its own alpha instead, chosen so that its first update's clipping
	// norm is Clip.
	Alpha float64
	Clip  float64
	// K is the number of episodes per update (Algorithm 2's fixed
	// denominator; App. C.2.2: 1).
	K int
	// Eta is a constant policy step size; 0 means Table 2's schedule
	// (12, divided by 5 every 50 episodes, floor 0.06).
	Eta         float64
	ClipAtLR0   bool    // the clipping norm uses eta_0 rather than the current eta
	BaselineLR  float64 // linear baseline step size, >= 0
	FisherRidge float64 // ridge added to the KL region's Fisher matrix, >= 0
	FisherExact bool    // the Fisher matrix's expectation under the public model
	// Trace records every seed's released policy at every curve point
	// (LogLinearResult.Trace).
	Trace bool
}

// fields are the configuration fields the package's errors may name
// (internal/fielderr: a command renders them as its flags).
var fields = fielderr.Fields{
	// LogLinear
	"P", "Episodes", "Seeds", "Delta", "InitRight", "Alpha", "Clip", "K", "Eta", "Workers", "FisherRidge", "BaselineLR", "Regions", "Epsilons",
	// Control, Sweep, Train and its Overrides, DPSGD
	"NewEnv", "Users", "EvalEpisodes", "Average", "Zs", "Env", "Method", "Z", "Epsilon", "PolicyShare", "Noise", "Horizon", "LR", "ServerLR",
	"EntropyCoef", "Hidden", "Epochs", "StepsPerUser", "Gamma", "Lambda", "ValueScale", "ObsScale", "Algo",
	// SAC
	"Steps", "LearningStarts", "Batch", "EpisodeLog", "Replays",
	// TrainArgs
	"Diag", "Plot", "NormalizeAdvantages", "AnnealServerLR", "FreshEpisodes", "MomentReset", "ClipAtLR0", "FisherExact",
}

// bad appends the field error of format and args to *errs if cond holds.
func bad(errs *[]error, cond bool, format string, args ...any) {
	if cond {
		*errs = append(*errs, fields.Errorf(format, args...))
	}
}

// ConfigError is an experiment's configuration that passed Validate but
// that the learner rejects (a combination of fields) before any episode is
// played.
type ConfigError struct{ Err error }

// Error returns the learner's error's message.
func (e *ConfigError) Error() string { return e.Err.Error() }

// Unwrap returns the learner's error.
func (e *ConfigError) Unwrap() error { return e.Err }

// finite reports whether x is neither NaN nor infinite.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Validate reports every invalid field, as errors naming the fields
// (*fielderr.Error), joined, in field order. RunLogLinear calls it first.
func (c LogLinear) Validate() error {
	var errs []error
	bad(&errs, !(c.P > 0 && c.P <= 1), "{P} %v: must be in (0, 1]", c.P)
	bad(&errs, c.Episodes < 1, "{Episodes} %d: must be >= 1", c.Episodes)
	bad(&errs, c.Seeds < 1, "{Seeds} %d: must be >= 1", c.Seeds)
	bad(&errs, !(c.Delta > 0 && c.Delta < 1), "{Delta} %v: must be in (0, 1)", c.Delta)
	bad(&errs, !finite(c.InitRight), "{InitRight} %v: must be finite", c.InitRight)
	bad(&errs, !positive(c.Alpha), "{Alpha} %v: the trust region size must be finite and > 0", c.Alpha)
	bad(&errs, !(c.Clip >= 0) || math.IsInf(c.Clip, 0), "{Clip} %v: the clipping norm must be finite and > 0", c.Clip)
	bad(&errs, c.K < 1, "{K} %d: episodes per update must be >= 1", c.K)
	bad(&errs, !(c.Eta >= 0) || math.IsInf(c.Eta, 0), "{Eta} %v: the step size must be finite and > 0", c.Eta)
	bad(&errs, c.Workers < 0, "{Workers} %d: must be >= 0", c.Workers)
	bad(&errs, !(c.FisherRidge >= 0) || math.IsInf(c.FisherRidge, 0), "{FisherRidge} %v: must be finite and >= 0", c.FisherRidge)
	bad(&errs, !(c.BaselineLR >= 0) || math.IsInf(c.BaselineLR, 0), "{BaselineLR} %v: must be finite and >= 0", c.BaselineLR)
	for _, r := range c.Regions {
		_, ok := regionNames[r]
		bad(&errs, !ok, "{Regions} %q: want l2, kl or l2-markov", r)
	}
	for _, eps := range c.Epsilons {
		_, err := accountant.Calibrate(accountant.Analytic{}, eps, c.Delta, 1, 2)
		bad(&errs, err != nil, "{Epsilons} %v: %w", eps, err)
	}
	return errors.Join(errs...)
}

// TotalEpisodes is the number of episodes the experiment plays over all
// runs and seeds.
func (c LogLinear) TotalEpisodes() int64 {
	return int64(len(c.Epsilons)) * int64(len(c.Regions)) * int64(c.Seeds) * int64(c.Episodes)
}

// LogLinearRun is one (epsilon, trust region) configuration of the grid: the
// cumulative expected regret at up to CurvePoints episodes, averaged over
// seeds.
type LogLinearRun struct {
	Epsilon float64 `json:"epsilon"` // total per episode, policy and baseline composed
	Z       float64 `json:"z"`       // noise multiplier of each block
	Region  string  `json:"region"`
	// Alpha is the run's trust region size: LogLinear.Alpha, or the alpha
	// for which the first update's clipping norm is LogLinear.Clip.
	Alpha      float64   `json:"alpha"`
	Seeds      []uint64  `json:"seeds"`
	Final      []float64 `json:"final_regret"` // cumulative regret of each seed
	FinalValue []float64 `json:"final_value"`  // value of each seed's last policy
	// CurveEpisodes[i] episodes had been played when the mean cumulative
	// regret over seeds was Mean[i]; every episode when Episodes is at
	// most CurvePoints, evenly spaced otherwise (always ending at
	// Episodes).
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

// LogLinearResult is the result of a LogLinear experiment (the JSON of
// dprl train --algo dppg-loglinear).
type LogLinearResult struct {
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
	// Alpha is the configured alpha; with Clip > 0 each run has its own
	// alpha, chosen so that its first update's clipping norm is Clip.
	Alpha float64 `json:"alpha"`
	Clip  float64 `json:"clip,omitempty"`
	// K is the number of episodes per update.
	K int `json:"k"`
	// Eta is the constant policy step size; 0 means Table 2's schedule.
	Eta        float64 `json:"eta"`
	InitRight  float64 `json:"init_right"` // starting logit gap right - left in every state
	BaselineLR float64 `json:"baseline_lr"`
	// FisherRidge and FisherExact configure the KL region's Fisher matrix:
	// the ridge added to it, and its expectation under the public model
	// (true) or the estimate on 25 public episodes (false, the paper's).
	FisherRidge float64        `json:"fisher_ridge"`
	FisherExact bool           `json:"fisher_exact"`
	Seconds     float64        `json:"seconds"`
	Runs        []LogLinearRun `json:"runs"`
	// Trace holds, with LogLinear.Trace, every seed's released policy at
	// every curve point, run by run and seed by seed. It is not part of
	// the JSON result.
	Trace []LogLinearTracePoint `json:"-"`
}

// LogLinearTracePoint is the released policy of one seed at one curve
// point. It is computed from the released parameters only (public).
type LogLinearTracePoint struct {
	Epsilon  float64 `json:"epsilon"`
	Region   string  `json:"region"`
	Seed     uint64  `json:"seed"`
	Episodes int     `json:"episodes"` // episodes played (and updates fed) before this policy
	Value    float64 `json:"value"`    // its exact value from the start state
	// Gaps[s] is the logit gap theta(s, right) - theta(s, left).
	Gaps []float64 `json:"gaps"`
}

// Progress receives the number of episodes played so far: Update is called
// from one goroutine about every Period while the experiment runs, and once
// with the total when it succeeds.
type Progress interface {
	Period() time.Duration
	Update(done int64)
}

// logLinearJob is one seed of one configuration.
type logLinearJob struct {
	run          int
	cfg          policy.LogLinearConfig
	seed, stream uint64
	// results
	curve               []float64             // cumulative regret at the curve points
	trace               []LogLinearTracePoint // with Trace
	firstSum, lastSum   float64               // regret summed over the first and last tenth
	final, value        float64
	clipFirst, clipLast float64
}

// RunLogLinear runs log-linear DPPG (Table 2) on RiverSwim for every epsilon
// and trust region of c over c.Seeds seeds, and reports the cumulative
// expected regret sum_k (V* - V^{pi_k}) (exact values from the model). The
// two blocks of an update (policy and linear baseline) are noised with the
// same z, calibrated with the analytic accountant (Balle and Wang, "Improving
// the Gaussian mechanism for differential privacy", Theorem 8) so that their
// composition is at most the requested epsilon. Seeds and configurations run
// on c.Workers goroutines; each has its own generator (PCG seeded by the seed,
// stream 1000*epsilon index + region index), so the result does not depend on
// the number of workers. prog may be nil.
func RunLogLinear(ctx context.Context, c LogLinear, prog Progress) (LogLinearResult, error) {
	if err := c.Validate(); err != nil {
		return LogLinearResult{}, err
	}
	tab, err := sims.RiverSwimModel(c.P)
	if err != nil {
		return LogLinearResult{}, err
	}
	var m policy.TabularMDP = RiverMDP{tab} // one interface conversion, not one per call
	res := LogLinearResult{Env: c.Env, Method: LogLinearMethod, P: c.P, Optimal: policy.OptimalTabular(m), Episodes: c.Episodes, Delta: c.Delta, PrivacyUnit: "episode", ClipAtLR0: c.ClipAtLR0, Alpha: c.Alpha, InitRight: c.InitRight, BaselineLR: c.BaselineLR, FisherRidge: c.FisherRidge, FisherExact: c.FisherExact, Clip: c.Clip, K: c.K, Eta: c.Eta}
	points := curvePoints(c.Episodes)
	var jobs []*logLinearJob
	for i, eps := range c.Epsilons {
		z, err := accountant.Calibrate(accountant.Analytic{}, eps, c.Delta, 1, 2)
		if err != nil {
			return res, fields.Errorf("{Epsilons} %v: %w", eps, err)
		}
		g, err := accountant.Analytic{}.Epsilon(c.Delta, accountant.Gaussian(z), accountant.Gaussian(z))
		if err != nil {
			return res, err
		}
		for j, name := range c.Regions {
			cfg := policy.DefaultLogLinearConfig()
			cfg.Z, cfg.Region, cfg.ClipAtLR0, cfg.Alpha, cfg.BaselineLR = z, regionNames[name], c.ClipAtLR0, c.Alpha, c.BaselineLR
			cfg.FisherRidge, cfg.FisherExact, cfg.UsersPerUpdate = c.FisherRidge, c.FisherExact, c.K
			if c.Eta > 0 {
				cfg.LR0, cfg.LRMin, cfg.LRFactor = c.Eta, c.Eta, 1
			}
			if err := cfg.Validate(); err != nil {
				return res, &ConfigError{err}
			}
			if c.Clip > 0 {
				l, err := NewLogLinearStart(m, cfg, c.InitRight)
				if err != nil {
					return res, &ConfigError{err}
				}
				if cfg.Alpha, err = l.AlphaForClip(m, c.Clip); err != nil {
					return res, &ConfigError{fields.Errorf("{Clip}: %w", err)}
				}
			}
			run := LogLinearRun{Epsilon: g.Epsilon, Z: z, Region: name, Alpha: cfg.Alpha, CurveEpisodes: points, Mean: make([]float64, len(points))}
			for s := range c.Seeds {
				run.Seeds = append(run.Seeds, c.Seed+uint64(s))
				jobs = append(jobs, &logLinearJob{run: len(res.Runs), cfg: cfg, seed: c.Seed + uint64(s), stream: uint64(1000*i + j)})
			}
			res.Runs = append(res.Runs, run)
		}
	}
	start := time.Now()
	if err := runLogLinearJobs(ctx, c, m, res.Optimal, points, jobs, prog); err != nil {
		return res, err
	}
	res.Seconds = time.Since(start).Seconds()
	tenth := max(1, c.Episodes/10)
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
	if c.Trace {
		for _, jb := range jobs {
			run := res.Runs[jb.run]
			for _, tp := range jb.trace {
				tp.Epsilon, tp.Region, tp.Seed = run.Epsilon, run.Region, jb.seed
				res.Trace = append(res.Trace, tp)
			}
		}
	}
	return res, nil
}

// curvePoints returns the episode counts at which a regret curve of n
// episodes is stored: 1..n when n <= CurvePoints, else that many evenly
// spaced counts ending at n.
func curvePoints(n int) []int {
	k := min(n, CurvePoints)
	pts := make([]int, k)
	for i := range pts {
		pts[i] = int((int64(i) + 1) * int64(n) / int64(k))
	}
	return pts
}

// runLogLinearJobs runs the jobs on c.Workers goroutines (GOMAXPROCS by
// default) and reports progress to prog. Every job is deterministic in its
// seed and stream.
func runLogLinearJobs(ctx context.Context, c LogLinear, m policy.TabularMDP, optimal float64, points []int, jobs []*logLinearJob, prog Progress) error {
	workers := c.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(jobs))
	total := int64(len(jobs)) * int64(c.Episodes)
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
				if err := runLogLinearJob(ctx, c, m, optimal, points, jb, &done); err != nil {
					errc <- err
					cancel()
					return
				}
			}
		}()
	}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		if prog == nil {
			return
		}
		t := time.NewTicker(prog.Period())
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				prog.Update(done.Load())
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
		return err
	default:
	}
	if err := ctx.Err(); err != nil && done.Load() < total {
		return context.Cause(ctx)
	}
	if prog != nil {
		prog.Update(total)
	}
	return nil
}

// NewLogLinearStart returns a learner at the policy with logit gap
// theta(s, right) - theta(s, left) = initRight in every state (0: uniform,
// the paper's start; large: near the right-everywhere policy, which is
// near-optimal). m must have two actions (left, right).
func NewLogLinearStart(m policy.TabularMDP, cfg policy.LogLinearConfig, initRight float64) (*policy.LogLinearLearner, error) {
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
func runLogLinearJob(ctx context.Context, c LogLinear, m policy.TabularMDP, optimal float64, points []int, jb *logLinearJob, done *atomic.Int64) error {
	l, err := NewLogLinearStart(m, jb.cfg, c.InitRight)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(jb.seed, jb.stream))
	ev := policy.NewTabularEvaluator(m)
	probs := l.Policy.Probs
	n := c.Episodes
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
		if c.Trace && pt > 0 && points[pt-1] == k+1 {
			gaps := make([]float64, m.NumStates())
			for st := range gaps {
				gaps[st] = l.Policy.Theta[st*2+1] - l.Policy.Theta[st*2]
			}
			jb.trace = append(jb.trace, LogLinearTracePoint{Episodes: k + 1, Value: ev.Value(probs), Gaps: gaps})
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
