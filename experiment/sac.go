package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"

	"dprl/internal/atomicfile"
	"dprl/internal/chart"
	"dprl/policy/sac"
	"dprl/sessionlog"
	"dprl/sims"
	"dprl/space"
)

// MethodSAC names online Soft Actor-Critic (policy/sac) in dprl train.
const MethodSAC = "sac"

// SACPrivacy labels every SAC result: the learner is not a private
// mechanism (it is the behaviour that writes offline logs, and PriMORL's
// policy optimiser on a released model).
const SACPrivacy = "none (non-private SAC: its replay buffer holds the raw transitions)"

// SAC configures online SAC runs on a continuous-action simulator, one per
// seed: Seed, Seed+1, ..., Seed+Seeds-1.
type SAC struct {
	Env string // a registered environment with continuous actions
	// Steps is the number of environment steps per run, >= 1, of which the
	// first LearningStarts (>= 0) take uniformly random actions.
	Steps, LearningStarts int
	// Hidden, Batch, LR (actor, critics and temperature) and Gamma are
	// sac.Config's fields.
	Hidden       []int
	Batch        int
	LR, Gamma    float64
	EvalEpisodes int // final deterministic evaluation episodes, >= 1
	Seed         uint64
	Seeds        int // >= 1
	// EpisodeLog, if set, is a new file to which every training episode of
	// every seed is written as a dprl.sessions.v1 session ("sac-SEED-I",
	// with the behaviour's log-density of each action as "logp"): a log
	// mixing random, improving and expert behaviour, the offline modes'
	// input. It is written atomically (nothing on failure) and must not
	// exist.
	EpisodeLog string
	// Replays (>= 0, with EpisodeLog) is the number of extra episodes of the
	// current policy logged after each training episode once learning has
	// started (sac.TrainOptions.Replays): many more episodes of every stage
	// of training for little more time.
	Replays int
}

// DefaultSAC returns the settings of dprl train --algo sac: 20,000 steps,
// 5,000 random ones first, sac.DefaultConfig's networks and rates, 20
// evaluation episodes, one seed.
func DefaultSAC(env string) SAC {
	d := sac.DefaultConfig()
	return SAC{Env: env, Steps: 20000, LearningStarts: 5000, Hidden: d.Hidden, Batch: d.Batch, LR: d.ActorLR, Gamma: d.Gamma, EvalEpisodes: 20, Seeds: 1}
}

// Validate reports every invalid field (*fielderr.Error values, joined).
func (c SAC) Validate() error {
	var errs []error
	info, ok := sims.Lookup(c.Env)
	bad(&errs, !ok, "{Env} %q: unknown environment (valid: %s)", c.Env, strings.Join(sims.Names(), ", "))
	if ok {
		as := info.New().ActionSpace()
		finite := as.Kind == sims.Box && !slices.ContainsFunc(append(slices.Clone(as.Low), as.High...), func(v float64) bool { return math.IsInf(v, 0) })
		bad(&errs, !finite, "{Env} %q: sac needs continuous actions in a finite box (%s)", c.Env, strings.Join(continuousEnvs(), ", "))
	}
	bad(&errs, c.Steps < 1, "{Steps} %d: must be >= 1", c.Steps)
	bad(&errs, c.LearningStarts < 0 || c.LearningStarts >= c.Steps, "{LearningStarts} %d: must be in [0, steps)", c.LearningStarts)
	bad(&errs, c.EvalEpisodes < 1, "{EvalEpisodes} %d: must be >= 1", c.EvalEpisodes)
	bad(&errs, c.Seeds < 1, "{Seeds} %d: must be >= 1", c.Seeds)
	bad(&errs, len(c.Hidden) == 0 || slices.ContainsFunc(c.Hidden, func(h int) bool { return h < 1 }), "{Hidden} %v: want one or more widths >= 1", c.Hidden)
	bad(&errs, c.Batch < 1, "{Batch} %d: must be >= 1", c.Batch)
	bad(&errs, !positive(c.LR), "{LR} %v: must be finite and > 0", c.LR)
	bad(&errs, !(c.Gamma >= 0 && c.Gamma < 1), "{Gamma} %v: must be in [0, 1)", c.Gamma)
	bad(&errs, c.Replays < 0 || (c.Replays > 0 && c.EpisodeLog == ""), "{Replays} %d: must be >= 0, and needs an episode log", c.Replays)
	if c.EpisodeLog != "" {
		_, err := os.Stat(c.EpisodeLog)
		bad(&errs, err == nil, "{EpisodeLog} %q exists: choose a new file", c.EpisodeLog)
	}
	if err := c.config().Validate(); len(errs) == 0 && err != nil {
		errs = append(errs, &ConfigError{err})
	}
	return errors.Join(errs...)
}

// continuousEnvs lists the registered environments with continuous
// actions in a finite box.
func continuousEnvs() []string {
	var out []string
	for _, n := range sims.Names() {
		info, _ := sims.Lookup(n)
		as := info.New().ActionSpace()
		if as.Kind == sims.Box && !slices.ContainsFunc(append(slices.Clone(as.Low), as.High...), func(v float64) bool { return math.IsInf(v, 0) }) {
			out = append(out, n)
		}
	}
	return out
}

func (c SAC) config() sac.Config {
	cfg := sac.DefaultConfig()
	cfg.Hidden, cfg.Batch, cfg.Gamma = c.Hidden, c.Batch, c.Gamma
	cfg.ActorLR, cfg.CriticLR, cfg.AlphaLR = c.LR, c.LR, c.LR
	return cfg
}

// SACRun is one seed's run.
type SACRun struct {
	Seed     uint64           `json:"seed"`
	EvalMean float64          `json:"eval_mean"`
	EvalStd  float64          `json:"eval_std"`
	Curve    []sac.CurvePoint `json:"curve"`
	Updates  int              `json:"updates"`
	Episodes int              `json:"episodes"`
	Seconds  float64          `json:"seconds"`
	// UpdatesPerSecond counts Agent.Update alone (minibatch sampling
	// excluded).
	UpdatesPerSecond float64 `json:"updates_per_second"`
}

// SACResult is the result of dprl train --algo sac.
type SACResult struct {
	Env     string   `json:"env"`
	Algo    string   `json:"algo"`
	Privacy string   `json:"privacy"`
	Steps   int      `json:"steps"`
	Hidden  []int    `json:"hidden"`
	Runs    []SACRun `json:"runs"`
	// Mean and Std are over seeds of the final evaluation's mean return.
	Mean         float64 `json:"mean"`
	Std          float64 `json:"std"`
	EvalEpisodes int     `json:"eval_episodes"`
	// EpisodeLog and LoggedEpisodes name the training-episode log and how
	// many sessions it holds (SAC.EpisodeLog).
	EpisodeLog     string `json:"episode_log,omitempty"`
	LoggedEpisodes int    `json:"logged_episodes,omitempty"`
}

// RunSAC validates c and runs its seeds in turn; progress, if not nil,
// receives each run's evaluations with its index.
func RunSAC(ctx context.Context, c SAC, progress func(run int, p sac.Progress)) (SACResult, error) {
	if err := c.Validate(); err != nil {
		return SACResult{}, err
	}
	info, _ := sims.Lookup(c.Env)
	res := SACResult{Env: c.Env, Algo: MethodSAC, Privacy: SACPrivacy, Steps: c.Steps, Hidden: c.Hidden, EvalEpisodes: c.EvalEpisodes}
	var log *episodeLog
	if c.EpisodeLog != "" {
		f, err := atomicfile.Create(c.EpisodeLog, 0o644)
		if err != nil {
			return res, err
		}
		defer f.Abort() // a no-op after Commit
		log = &episodeLog{f: f, w: sessionlog.NewWriter(f), od: info.New().ObservationSpace().Dim()}
	}
	for i := range c.Seeds {
		seed := c.Seed + uint64(i)
		rng := rand.New(rand.NewPCG(seed, 0x736163)) // "sac"
		opts := sac.TrainOptions{Steps: c.Steps, LearningStarts: c.LearningStarts, EvalEpisodes: 5}
		if progress != nil {
			opts.Progress = func(p sac.Progress) { progress(i, p) }
		}
		if log != nil {
			opts.OnEpisode = func(ep sac.Episode) { log.add(seed, ep) }
			opts.Replays = c.Replays
		}
		out, err := sac.Train(ctx, info.New, c.config(), opts, rng)
		if err == nil && log != nil {
			err = log.err
		}
		if err != nil {
			return res, err
		}
		// The final evaluation on its own episodes, from a stream no training
		// draw uses.
		m, s := sac.Evaluate(info.New(), out.Agent, c.EvalEpisodes, rand.New(rand.NewPCG(seed, 0x6576616c))) // "eval"
		run := SACRun{Seed: seed, EvalMean: m, EvalStd: s, Curve: out.Curve, Updates: out.Updates, Episodes: out.Episodes, Seconds: out.Elapsed.Seconds()}
		if t := out.UpdateTime.Seconds(); t > 0 {
			run.UpdatesPerSecond = float64(out.Updates) / t
		}
		res.Runs = append(res.Runs, run)
	}
	for _, r := range res.Runs {
		res.Mean += r.EvalMean / float64(len(res.Runs))
	}
	for _, r := range res.Runs {
		res.Std += (r.EvalMean - res.Mean) * (r.EvalMean - res.Mean) / float64(len(res.Runs))
	}
	res.Std = math.Sqrt(res.Std)
	if log != nil {
		if err := log.w.Flush(); err != nil {
			return res, err
		}
		if err := log.f.Commit(); err != nil {
			return res, err
		}
		res.EpisodeLog, res.LoggedEpisodes = c.EpisodeLog, log.n
	}
	return res, nil
}

// episodeLog writes SAC's training episodes as sessions.
type episodeLog struct {
	f   *atomicfile.File
	w   *sessionlog.Writer
	od  int
	n   int
	err error
	k   map[uint64]int // episodes per seed
}

func (l *episodeLog) add(seed uint64, ep sac.Episode) {
	if l.err != nil {
		return
	}
	if l.k == nil {
		l.k = map[uint64]int{}
	}
	T := len(ep.Rewards)
	ad := len(ep.Actions) / max(T, 1)
	s := sessionlog.Session{Session: fmt.Sprintf("sac-%d-%d", seed, l.k[seed]), Steps: make([]sessionlog.Step, T), Terminal: ep.Terminated}
	for t := range T {
		s.Steps[t] = sessionlog.Step{Obs: slices.Clone(ep.Obs[t*l.od : (t+1)*l.od]), Action: space.Action{Vec: slices.Clone(ep.Actions[t*ad : (t+1)*ad])},
			Reward: ep.Rewards[t], LogP: ep.LogP[t]}
	}
	if !ep.Terminated {
		s.FinalObs = slices.Clone(ep.Obs[T*l.od : (T+1)*l.od])
	}
	l.k[seed]++
	l.n++
	l.err = l.w.Write(&s)
}

// WriteText writes the result as dprl train prints it.
func (r SACResult) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s sac (%v hidden): eval return %.1f", r.Env, r.Hidden, r.Mean)
	if len(r.Runs) > 1 {
		fmt.Fprintf(w, " ± %.1f over %d seeds", r.Std, len(r.Runs))
	} else {
		fmt.Fprintf(w, " ± %.1f over %d episodes", r.Runs[0].EvalStd, r.EvalEpisodes)
	}
	fmt.Fprintf(w, "\nprivacy: %s\n", r.Privacy)
	if r.EpisodeLog != "" {
		fmt.Fprintf(w, "training episodes: %d sessions in %s\n", r.LoggedEpisodes, r.EpisodeLog)
	}
	for _, run := range r.Runs {
		if _, err := fmt.Fprintf(w, "seed %d: %.1f ± %.1f, %d steps, %d updates (%.0f updates/s), %d episodes in %.1fs\n",
			run.Seed, run.EvalMean, run.EvalStd, r.Steps, run.Updates, run.UpdatesPerSecond, run.Episodes, run.Seconds); err != nil {
			return err
		}
	}
	return nil
}

// Plot writes the learning curve (the deterministic policy's mean return
// against environment steps; with several seeds their mean with a band of
// one standard deviation over seeds) to path.
func (r SACResult) Plot(path string) error {
	if len(r.Runs) == 0 || len(r.Runs[0].Curve) == 0 {
		return errors.New("no learning-curve points")
	}
	s := chart.Series{Label: "mean return", SpreadLabel: "± 1 std over the evaluation episodes"}
	if len(r.Runs) > 1 {
		s.SpreadLabel = "± 1 std over seeds"
	}
	for k, pt := range r.Runs[0].Curve {
		var mean, sd float64
		if len(r.Runs) == 1 {
			mean, sd = pt.Mean, pt.Std
		} else {
			for _, run := range r.Runs {
				mean += run.Curve[k].Mean / float64(len(r.Runs))
			}
			for _, run := range r.Runs {
				sd += (run.Curve[k].Mean - mean) * (run.Curve[k].Mean - mean) / float64(len(r.Runs))
			}
			sd = math.Sqrt(sd)
		}
		s.X, s.Y = append(s.X, float64(pt.Steps)), append(s.Y, mean)
		s.Low, s.High = append(s.Low, mean-sd), append(s.High, mean+sd)
	}
	title := fmt.Sprintf("%s sac (non-private), 1 seed", r.Env)
	if len(r.Runs) > 1 {
		title = fmt.Sprintf("%s sac (non-private), mean of %d seeds", r.Env, len(r.Runs))
	}
	c := chart.Chart{Title: title, XLabel: "environment steps", YLabel: "return", Series: []chart.Series{s}}
	if b, err := sims.Baselines(sims.BaselineConfig{Env: r.Env, Episodes: 200, Seed: PlotBaselineSeed}); err == nil {
		c = withReferenceLines(c, b)
	}
	return c.Save(path)
}
