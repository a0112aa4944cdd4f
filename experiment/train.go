package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"dprl/internal/progress"
	"dprl/ledger/accountant"
	"dprl/policy"
	"dprl/profile"
	"dprl/sims"
)

// Methods of Train: DPPG, and the explicitly non-private PPO baseline.
const (
	MethodDPPG = "dppg"
	MethodPPO  = "ppo"
)

// Train configures dprl train's runs of DPPG (Rio et al., "Differentially
// private policy gradient", Algorithm 2) or of the non-private PPO baseline
// on a control environment: the environment's learner defaults
// (profile.TrainConfig) with Overrides applied, Users simulated users per
// run, EvalEpisodes evaluation episodes of the released policy. Plan
// validates and resolves it.
type Train struct {
	Env string // a registered environment with a profile
	// Method is MethodDPPG, or MethodPPO for the non-private baseline (no
	// clipping, no noise, no epsilon; Overrides.Z, Clip, PolicyShare,
	// Noise and Horizon and Epsilon must then be unset).
	Method    string
	Overrides profile.TrainOverrides
	// Epsilon, if not nil, is a target epsilon per episode at Delta: z is
	// the smallest noise multiplier whose per-episode epsilon is at most it
	// (EpisodeAccount.Calibrate), instead of Overrides.Z.
	Epsilon *float64
	Delta   float64 // of the reported (epsilon, delta), in (0, 1)
	Users   int     // simulated users per run, >= 1
	// Workers is the number of goroutines of the local updates (0:
	// GOMAXPROCS); the result does not depend on it.
	Workers      int
	EvalEpisodes int // >= 1
	// FreshEpisodes, AnnealServerLR, Average and Diagnostics are those of
	// Control.
	FreshEpisodes, AnnealServerLR bool
	Average                       float64
	Diagnostics                   bool
	// Seeded records in the results that the caller chose the seeds (they
	// were not drawn at random).
	Seeded bool
}

// positive reports whether x is finite and > 0.
func positive(x float64) bool { return x > 0 && !math.IsInf(x, 0) }

// val returns *p, or the zero value if p is nil.
func val[T any](p *T) (v T) {
	if p != nil {
		v = *p
	}
	return v
}

// Validate reports every invalid field, as errors naming the fields of
// Train and of its Overrides (*fielderr.Error), joined, in the order dprl
// train reports its flags. Plan also checks the resolved learner
// configuration (policy.Config.Validate).
func (t Train) Validate() error {
	var errs []error
	o := t.Overrides
	_, ok := sims.Lookup(t.Env)
	bad(&errs, !ok, "{Env} %q: unknown environment (valid: %s)", t.Env, strings.Join(sims.Names(), ", "))
	switch t.Method {
	case MethodDPPG:
		bad(&errs, o.Z != nil && !positive(val(o.Z)), "{Z} %v: the noise multiplier must be finite and > 0 (use {Method} ppo for the non-private baseline)", val(o.Z))
		bad(&errs, t.Epsilon != nil && o.Z != nil, "{Epsilon} and {Z} both set: give the target epsilon or the noise multiplier, not both")
		bad(&errs, t.Epsilon != nil && o.Z == nil && !positive(val(t.Epsilon)), "{Epsilon} %v: the target epsilon must be finite and > 0", val(t.Epsilon))
		bad(&errs, o.Clip != nil && !positive(val(o.Clip)), "{Clip} %v: the clipping norm must be finite and > 0", val(o.Clip))
		bad(&errs, o.PolicyShare != nil && !(val(o.PolicyShare) > 0 && val(o.PolicyShare) < 1), "{PolicyShare} %v: must be in (0, 1)", val(o.PolicyShare))
	case MethodPPO:
		for _, f := range []struct {
			name string
			set  bool
		}{{"Z", o.Z != nil}, {"Epsilon", t.Epsilon != nil}, {"Clip", o.Clip != nil}, {"PolicyShare", o.PolicyShare != nil}, {"Noise", o.Noise != nil}, {"Horizon", o.Horizon != nil}} {
			bad(&errs, f.set, "{%s}: {Method} ppo neither clips nor adds noise; drop {%s} or use {Method} dppg", f.name, f.name)
		}
	default:
		bad(&errs, true, "{Method} %q: want dppg or ppo", t.Method)
	}
	bad(&errs, o.K != nil && val(o.K) < 1, "{K} %d: users per update must be >= 1", val(o.K))
	noise := profile.TrainNoise(t.Env)
	if o.Noise != nil {
		noise = *o.Noise
	}
	if t.Method == MethodDPPG && o.Horizon != nil {
		horizon := false
		if m, err := noise.Mechanism(); err == nil {
			horizon = m.Horizon()
		}
		bad(&errs, !horizon, "{Horizon}: %v noise has no horizon; add {Noise} tree or sqrt", noise)
		bad(&errs, horizon && *o.Horizon < 0, "{Horizon} %d: want a number of releases >= 1 (0: the whole run)", *o.Horizon)
	}
	bad(&errs, o.LR != nil && !positive(val(o.LR)), "{LR} %v: must be finite and > 0", val(o.LR))
	bad(&errs, o.ServerLR != nil && !positive(val(o.ServerLR)), "{ServerLR} %v: must be finite and > 0", val(o.ServerLR))
	bad(&errs, o.EntropyCoef != nil && !(val(o.EntropyCoef) >= 0 && !math.IsInf(val(o.EntropyCoef), 0)), "{EntropyCoef} %v: must be finite and >= 0", val(o.EntropyCoef))
	bad(&errs, slices.ContainsFunc(o.Hidden, func(h int) bool { return h < 1 }), "{Hidden} %v: widths must be >= 1", o.Hidden)
	bad(&errs, o.Epochs != nil && val(o.Epochs) < 1, "{Epochs} %d: must be >= 1", val(o.Epochs))
	bad(&errs, o.StepsPerUser != nil && val(o.StepsPerUser) < 1, "{StepsPerUser} %d: must be >= 1", val(o.StepsPerUser))
	bad(&errs, o.Gamma != nil && !(val(o.Gamma) >= 0 && val(o.Gamma) <= 1), "{Gamma} %v: must be in [0, 1]", val(o.Gamma))
	bad(&errs, o.Lambda != nil && !(val(o.Lambda) >= 0 && val(o.Lambda) <= 1), "{Lambda} %v: must be in [0, 1]", val(o.Lambda))
	bad(&errs, o.ValueScale != nil && !positive(val(o.ValueScale)), "{ValueScale} %v: must be finite and > 0", val(o.ValueScale))
	d, n := profile.ObsDim(t.Env), len(val(o.ObsScale))
	bad(&errs, n != 0 && d > 0 && n != d, "{ObsScale} %v: want %d values (the observation dimension of %s), or none", val(o.ObsScale), d, t.Env)
	bad(&errs, t.Users < 1, "{Users} %d: must be >= 1", t.Users)
	bad(&errs, !(t.Delta > 0 && t.Delta < 1), "{Delta} %v: must be in (0, 1)", t.Delta)
	bad(&errs, !(t.Average >= 0 && t.Average < 1), "{Average} %v: the decay must be in [0, 1)", t.Average)
	bad(&errs, t.EvalEpisodes < 1, "{EvalEpisodes} %d: must be >= 1", t.EvalEpisodes)
	bad(&errs, t.Workers < 0, "{Workers} %d: must be >= 0", t.Workers)
	return errors.Join(errs...)
}

// TrainPlan is a validated Train resolved to what runs: the learner
// configuration and, for private training, the episode account behind the
// epsilon every run reports.
type TrainPlan struct {
	Train  Train
	Config policy.Config
	// Account is the episode structure of a private run (nil for the
	// non-private baseline), with EpsilonPerSegment at Config's z.
	Account *EpisodeAccount
	// Epsilon is per episode at Train.Delta (+Inf for the non-private
	// baseline), by the method Accountant.
	Epsilon    float64
	Accountant string
	// NewEnv returns a fresh instance of the environment.
	NewEnv func() sims.Env
}

// Plan validates t and resolves it: the learner configuration
// (profile.TrainConfig, then policy.Config.Validate, whose rejection is a
// *ConfigError), and for private training the episode account and z, from
// the overrides or calibrated to Epsilon (a calibration failure is an error
// naming Epsilon).
func (t Train) Plan() (*TrainPlan, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	cfg, err := profile.TrainConfig(t.Env, t.Method == MethodDPPG, t.Users, t.Overrides)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, &ConfigError{err}
	}
	info, _ := sims.Lookup(t.Env)
	p := &TrainPlan{Train: t, Config: cfg, Epsilon: math.Inf(1), NewEnv: info.New}
	if t.Method == MethodPPO {
		return p, nil
	}
	acct, err := NewEpisodeAccount(cfg, t.Users, t.FreshEpisodes, info.New().MaxSteps())
	if err != nil {
		return nil, err
	}
	if t.Epsilon != nil {
		// The smallest z, rounded up, whose analytic epsilon per episode
		// (the privacy unit) is at most the target.
		z, err := acct.Calibrate(*t.Epsilon, t.Delta)
		if err != nil {
			return nil, fields.Errorf("{Epsilon} %v: %w", *t.Epsilon, err)
		}
		p.Config.DP.NoiseMultiplier = z
	}
	g, _, err := acct.At(p.Config.DP.NoiseMultiplier, t.Delta)
	if err != nil {
		return nil, &ConfigError{err}
	}
	p.Account, p.Epsilon, p.Accountant = acct, g.Epsilon, string(g.Method)
	return p, nil
}

// Control returns the Control of one run of the plan.
func (p *TrainPlan) Control() Control {
	t := p.Train
	return Control{NewEnv: p.NewEnv, Config: p.Config, Users: t.Users, Workers: t.Workers, EvalEpisodes: t.EvalEpisodes,
		FreshEpisodes: t.FreshEpisodes, AnnealServerLR: t.AnnealServerLR, Average: t.Average, Diagnostics: t.Diagnostics}
}

// Run trains and evaluates one run of the plan with seed (RunControl: every
// random draw derives from it). progress, if not nil, receives
// policy.Train's progress.
func (p *TrainPlan) Run(ctx context.Context, seed uint64, progress func(policy.Progress)) (TrainResult, error) {
	t, dp := p.Train, p.Config.DP
	r := TrainResult{Env: t.Env, Method: t.Method, Delta: t.Delta, K: dp.UsersPerUpdate, Z: dp.NoiseMultiplier, Clip: dp.ClipNorm,
		EvalEpisodes: t.EvalEpisodes, Seed: seed, Seeded: t.Seeded, Epsilon: p.Epsilon, Accountant: p.Accountant, EpisodeAccount: p.Account}
	if dp.Noise != policy.NoiseIndependent {
		r.Noise, r.Horizon = dp.Noise.String(), dp.Horizon
	}
	out, err := RunControl(ctx, p.Control(), seed, progress)
	if err != nil {
		return r, err
	}
	if out.LastMean != nil {
		r.Average, r.LastMean, r.LastStd = t.Average, out.LastMean, out.LastStd
	}
	r.EvalMean, r.EvalStd, r.EvalSeconds = out.EvalMean, out.EvalStd, out.EvalSeconds
	r.Users, r.Updates, r.Steps, r.Skipped, r.Curve = out.Users, out.Updates, out.Steps, out.Skipped, out.Curve
	r.Seconds, r.StepsPerSecond, r.Diagnostics = out.Seconds, out.StepsPerSecond, out.Diagnostics
	return r, nil
}

// TrainResult is the result of one run of a TrainPlan (the JSON of dprl
// train --algo dppg or ppo).
type TrainResult struct {
	Env          string  `json:"env"`
	Method       string  `json:"method"`
	EvalMean     float64 `json:"eval_mean"`
	EvalStd      float64 `json:"eval_std"`
	EvalEpisodes int     `json:"eval_episodes"`
	// Epsilon is per episode (the privacy unit, EpisodeAccount); the
	// epsilon of one simulated user (a segment) is epsilon_per_segment.
	// It is +Inf for the non-private baseline, whose JSON gives null.
	Epsilon    float64 `json:"epsilon"`
	Delta      float64 `json:"delta"`
	Accountant string  `json:"accountant,omitempty"`
	// The episode structure behind Epsilon (nil for the non-private ppo).
	*EpisodeAccount
	Z    float64 `json:"z"`
	Clip float64 `json:"clip"`
	K    int     `json:"k"`
	// Noise and Horizon are the correlated noise and its horizon in
	// releases (both omitted for independent noise, Algorithm 2).
	Noise          string  `json:"noise,omitempty"`
	Horizon        int     `json:"horizon,omitempty"`
	Users          int     `json:"users"`
	Updates        int     `json:"updates"`
	Steps          int64   `json:"steps"`
	Seconds        float64 `json:"seconds"`
	StepsPerSecond float64 `json:"steps_per_second"`
	Seed           uint64  `json:"seed"`
	Seeded         bool    `json:"seeded"`
	// Skipped counts failed local updates (zero vectors in their batch
	// place): a statistic of the simulated users, simulation only.
	Skipped int `json:"sim_skipped_local_updates"`
	// Average is the parameter averaging's decay; with it, EvalMean and
	// EvalStd evaluate the averaged parameters and LastMean and LastStd
	// the last iterate.
	Average  float64             `json:"average,omitempty"`
	LastMean *float64            `json:"last_iterate_mean,omitempty"`
	LastStd  *float64            `json:"last_iterate_std,omitempty"`
	Curve    []policy.CurvePoint `json:"curve"`
	// EvalSeconds is the evaluation's time (not in the JSON).
	EvalSeconds float64 `json:"-"`
	// Diagnostics are the run's per-update diagnostics with
	// Train.Diagnostics: simulation only, covered by no epsilon, never in
	// the result's JSON (WriteDiagnostics writes them, labelled).
	Diagnostics []policy.UpdateDiag `json:"-"`
}

// MarshalJSON encodes the result; the non-private baseline's epsilon
// (+Inf, which JSON cannot hold) is null.
func (r TrainResult) MarshalJSON() ([]byte, error) {
	type plain TrainResult // without this method
	if math.IsInf(r.Epsilon, 1) {
		return json.Marshal(struct {
			plain
			Epsilon *float64 `json:"epsilon"`
		}{plain: plain(r)})
	}
	return json.Marshal(plain(r))
}

// WriteText writes the result as dprl train prints it.
func (r TrainResult) WriteText(w io.Writer) error {
	privacy := "non-private (ppo)"
	if !math.IsInf(r.Epsilon, 1) {
		privacy = privacyText(r.Epsilon, r.Delta, r.Z, r.Clip, r.K, r.Noise, r.Horizon, r.Accountant, r.EpisodeAccount)
	}
	_, err := fmt.Fprintf(w, "%s %s: eval return %.2f ± %.2f over %d episodes (standard error %.2f)\n%s\n%d users, %d updates, %d steps in %.1fs (%.0f steps/s), seed %d\n",
		r.Env, r.Method, r.EvalMean, r.EvalStd, r.EvalEpisodes, stdErr(r.EvalStd, r.EvalEpisodes), privacy, r.Users, r.Updates, r.Steps, r.Seconds, r.StepsPerSecond, r.Seed)
	return err
}

// stdErr is the standard error of a mean over n episodes of std std.
func stdErr(std float64, n int) float64 {
	return std / math.Sqrt(float64(max(n, 1)))
}

// privacyText is the privacy line of a text result: the per-episode epsilon
// first, then the episode structure and the per-segment epsilon (acct may
// be nil only for results without one).
func privacyText(eps, delta, z, clip float64, k int, noise string, horizon int, method string, acct *EpisodeAccount) string {
	s := fmt.Sprintf("epsilon = %s at delta = %g per episode (z = %g, S = %g, K = %d%s, %s)", accountant.FormatEpsilon(eps), delta, z, clip, k, noiseText(noise, horizon), method)
	if acct != nil {
		s += "\n  " + acct.Text()
	}
	return s
}

// noiseText describes correlated noise for the privacy line ("" for
// independent noise).
func noiseText(noise string, horizon int) string {
	if noise == "" {
		return ""
	}
	return fmt.Sprintf(", %s noise over %d releases", noise, horizon)
}

// WriteDiagnostics writes one JSON object per update, each labelled
// simulation only (policy.DiagnosticsScope): they are statistics of the
// simulated users' raw data and of the exact noise, which no epsilon covers.
func WriteDiagnostics(w io.Writer, diag []policy.UpdateDiag) error {
	enc := json.NewEncoder(w)
	for _, d := range diag {
		d.Scope = policy.DiagnosticsScope
		if err := enc.Encode(d); err != nil {
			return err
		}
	}
	return nil
}

// TrainProgress returns the progress callback of a training run
// (TrainPlan.Run's) reporting to t: the users done, after offset users of
// the earlier runs of a multi-seed or sweep run, of total; the releases; the
// simulated users' recent return (simulation only); the per-episode epsilon
// eps (+Inf: labelled non-private); the steps per second.
func TrainProgress(t *progress.Task, offset, total int, eps float64) func(policy.Progress) {
	return func(pr policy.Progress) {
		sps := 0.0
		if s := pr.Elapsed.Seconds(); s > 0 {
			sps = float64(pr.Steps) / s
		}
		// A non-private run has no epsilon (+Inf, which JSON cannot carry):
		// it is labelled instead.
		privacy := progress.Ff("epsilon_per_episode", "%.4g", accountant.CeilEpsilon(eps))
		if math.IsInf(eps, 1) {
			privacy = progress.F("privacy", "none (non-private)")
		}
		t.Update(progress.Report{Done: int64(offset + pr.Users), Total: int64(total), Unit: "users", Fields: []progress.Field{
			progress.F("updates", pr.Updates), progress.Ff("sim_return", "%.1f", pr.RecentReturn),
			privacy, progress.Ff("steps_per_s", "%.0f", math.Round(sps))}})
	}
}
