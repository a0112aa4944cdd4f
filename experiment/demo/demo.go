// Package demo drives simulated users against the DP agent over NATS: Run
// is dprl demo (an agent service with an embedded NATS server and a fresh
// ledger, simulated users playing through the real NATS client, a stopping
// rule on released policies, a ledger verification), Replay is dprl replay
// (simulated users against any running agent).
//
// Both drive a sims.Population through the agent's NATS client
// (stream.Client satisfies sims.Agent), timing every act as the client sees
// it. Nothing polls: the demo's pacing and its end wait on the agent's
// policy announcements. Values measured on the simulator or by the
// simulated users themselves are simulation-only, labelled sim_* in the
// results; the agent serves no statistic of sessions.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"dprl/agent"
	"dprl/agent/service"
	"dprl/internal/fielderr"
	"dprl/internal/progress"
	"dprl/ledger"
	"dprl/ledger/accountant"
	"dprl/policy/lincb"
	"dprl/profile"
	"dprl/sims"
	"dprl/stream"
)

// Config is a demo run: the simulated users, the stopping rule and the
// learner settings the demo changes in the environment's profile.
type Config struct {
	// Env is the simulator the users play (package sims).
	Env string `flag:"env" default:"cartpole" usage:"environment the simulated users play (see dprl sims list)"`
	// Users is the maximum number of sessions, Concurrency the sessions
	// played at the same time, Returning the probability that a session
	// comes from an earlier user (sims.PopulationConfig).
	Users       int     `flag:"users" default:"20000" usage:"maximum number of simulated user sessions"`
	Concurrency int     `flag:"concurrency" default:"16" usage:"users playing at the same time"`
	Returning   float64 `flag:"returning" default:"0.1" usage:"probability that a session comes from a returning user"`
	// Seed seeds the users and the evaluations (AgentConfig: the agent
	// too); 0: a random seed.
	Seed uint64 `flag:"seed" usage:"seed the users, the evaluations and the agent (the ledger records a seeded run); 0: secure"`
	// Pace is PaceLockstep or PaceFree.
	Pace string `flag:"pace" usage:"lockstep: users arrive as fast as the learner consumes them (K per release); free: as fast as they can play (most sessions then go stale and are not learned from)"`
	// Target, EvalEvery and EvalEpisodes are the stopping rule: every
	// EvalEvery releases, the released policy is evaluated on EvalEpisodes
	// fresh simulator episodes (simulation-only), and no user is admitted
	// once an evaluation reaches Target (0: never stop early).
	Target       float64 `flag:"target-return" usage:"stop admitting users once a released policy's mean return on --eval-episodes fresh simulator episodes reaches this (simulation-only; default 475 for cartpole; 0: run all users)"`
	EvalEvery    int     `flag:"eval-every" default:"4" usage:"evaluate every this many releases (simulation-only)"`
	EvalEpisodes int     `flag:"eval-episodes" default:"10" usage:"simulator episodes per evaluation of a released policy (--env bandit: scored exactly on 20,000 held-out users instead)"`
	// Z is the noise multiplier; K, Clip and LR, when > 0, the sessions
	// per update, the clipping norm and the server step (else the
	// profile's). AgentConfig applies them.
	Z    float64 `flag:"z" default:"1.0" usage:"noise multiplier z (with --user-epsilon and without --z: derived from it)"`
	Clip float64 `flag:"clip" usage:"clipping norm S of a local update (default: the environment profile's)"`
	LR   float64 `flag:"server-lr" usage:"server step size eta of theta <- theta + eta g~, as dprl train --server-lr (default: the environment profile's)"`
	K    int     `flag:"K" usage:"sessions per update K (default: the environment profile's, as dprl agent: 32 for cartpole, 1000 for bandit)"`
	// UserEpsilon and MaxUpdatesPerUser are the agent's per-user caps
	// (agent.Config). UserEpsilon is the primary privacy setting: with Z
	// 0, AgentConfig derives z from it so that a user in
	// max(MaxUpdatesPerUser, 1) updates reaches it (as dprl agent does).
	UserEpsilon       float64 `flag:"user-epsilon" usage:"per-user epsilon at delta 1e-5, the primary privacy setting as in dprl agent: z is derived so that a user in --max-updates-per-user updates reaches it, and it caps every user"`
	MaxUpdatesPerUser int     `flag:"max-updates-per-user" usage:"cap on the updates a user takes part in (0: none; returning users beyond it are served, not learned from)"`
	// Delta is the agent's delta (0: agent.DefaultConfig's, 1e-5), at
	// which UserEpsilon is met.
	Delta float64
	// Noise is the agent's noise, "" or "independent", or "bandmf" with
	// Band bands (service.Settings' Noise and Band): a user's updates then
	// at least Band apart, at most MaxUpdatesPerUser (>= 1) of them.
	Noise string `flag:"noise" default:"independent" usage:"noise of the releases, as dprl agent: independent, or bandmf (banded square-root correlated noise; a user's updates at least --band apart)"`
	Band  int    `flag:"band" usage:"bands of --noise bandmf, 1 to 4096"`
	// Learner is what the agent learns: "" or "dppg" (DP policy
	// gradient), or "lincb", the private linear contextual bandit
	// (agent.Config.LinCB with the profile's feature clip; Clip and LR
	// do not apply).
	Learner string `flag:"learner" default:"dppg" usage:"what the agent learns, as dprl agent --learner: dppg, or lincb (the private linear contextual bandit, for an --env of one decision per session that states a feature clip: bandit)"`
	// Average is the agent's AverageDecay (dppg only): the decay of the
	// served moving average of the releases; Prepare sets the profile's
	// when it is not given.
	Average float64 `flag:"average" usage:"with --learner dppg: serve (and evaluate) the exponential moving average of the released policies with this decay in [0, 1), as dprl agent --average (0: the last release; default: the environment profile's, 0.9 for recsys)"`
	// MaxDuration, if > 0, ends the run after this long (Run's context
	// times out: the users stop, the summary covers what was played).
	MaxDuration time.Duration `flag:"max-duration" default:"10m" usage:"stop the demo after this long (0: no limit)"`
	// FlushTimeout is the agent's (agent.Config.FlushTimeout): a partial
	// batch is released, still divided by K, once its oldest session has
	// waited this long; 0: 2 s.
	FlushTimeout time.Duration `flag:"flush-timeout" default:"2s" usage:"the agent's flush timeout: a partial batch is released (still divided by K) once its oldest session has waited this long; long sessions need more than the 2 s default for K of them to finish at --concurrency, else most releases are partial"`
	// Replicas, when > 0, runs the agent as a cluster on this machine
	// instead of one process (three embedded JetStream servers, a learner
	// and Replicas serving replicas sharing the session partitions; see
	// startCluster): the users play against the replicas, and the ledger
	// and releases are the learner's (at most MaxReplicas).
	Replicas int `flag:"replicas" usage:"run the agent as a cluster in this process instead: three embedded JetStream servers, a learner and this many serving replicas sharing the session partitions (as dprl agent --role; the users play against the replicas, the ledger in --data is the learner's); 0: one agent"`
	// StartProgress, if not nil, is called when the users start with a
	// function returning the run's progress at any moment; Run calls the
	// function it returns once the users have finished.
	StartProgress func(progress func() Progress) (stop func())
	// Data is the data directory of Service ("" for a new temporary one)
	// and LogSessions the directory of its session logs ("" for none).
	Data        string `flag:"data" usage:"data directory (default: a new temporary directory)"`
	LogSessions string `flag:"log-sessions" usage:"write every closed session to rotating dprl.sessions.v1 files in this directory (as dprl agent --log-sessions), for the offline modes"`
}

// The paces of Config.Pace.
const (
	// PaceLockstep admits the sessions of update b once version b is
	// released: users arrive as fast as the learner consumes them, K per
	// release.
	PaceLockstep = "lockstep"
	// PaceFree admits users as fast as they can play: most sessions then
	// go stale and are not learned from.
	PaceFree = "free"
)

// Fields are the fields the errors of Config and ReplayConfig may name
// (fielderr).
var Fields = fielderr.Fields{"Users", "Concurrency", "EvalEvery", "EvalEpisodes", "Pace", "Returning", "Clip", "LR", "MaxDuration", "Z", "K", "Rate", "Replicas", "Learner", "Average", "FlushTimeout"}

// Validate reports the first problem of the run, in the order dprl demo
// has always checked them: the counts, the pace, the returning
// probability, the clipping norm, server step and duration (0: the
// profile's, no limit), the environment (it must have a profile:
// profile.Get's error), K (0: the profile's) and the noise multiplier (the
// demo is private; 0 with UserEpsilon > 0: derived from it). The
// learner's other settings are checked by AgentConfig.
func (c Config) Validate() error {
	if c.Users < 1 || c.Concurrency < 1 {
		return Fields.Errorf("{Users} and {Concurrency} must be >= 1")
	}
	if c.EvalEvery < 1 || c.EvalEpisodes < 1 {
		return Fields.Errorf("{EvalEvery} and {EvalEpisodes} must be >= 1")
	}
	if c.Pace != PaceLockstep && c.Pace != PaceFree {
		return Fields.Errorf("{Pace} %q: want lockstep or free", c.Pace)
	}
	if err := validReturning(c.Returning); err != nil {
		return err
	}
	if !(c.Clip >= 0) || math.IsInf(c.Clip, 1) {
		return Fields.Errorf("{Clip} %v: want a finite clipping norm > 0 (0: the profile's)", c.Clip)
	}
	if !(c.LR >= 0) || math.IsInf(c.LR, 1) {
		return Fields.Errorf("{LR} %v: want a finite server step > 0 (0: the profile's)", c.LR)
	}
	if c.MaxDuration < 0 {
		return Fields.Errorf("{MaxDuration} %v: want > 0 (0: no limit)", c.MaxDuration)
	}
	if c.Replicas < 0 || c.Replicas > MaxReplicas {
		return Fields.Errorf("{Replicas} %d: want 0 (one process) to %d", c.Replicas, MaxReplicas)
	}
	if _, err := profile.Get(c.Env); err != nil {
		return err
	}
	if c.K < 0 {
		return Fields.Errorf("{K} %d: want sessions per update >= 1 (0: the profile's)", c.K)
	}
	if c.UserEpsilon > 0 && c.Z == 0 {
		return nil // z is derived from UserEpsilon (AgentConfig)
	}
	return validZ(c.Z)
}

// validReturning checks a probability of a returning user.
func validReturning(p float64) error {
	if p < 0 || p >= 1 {
		return Fields.Errorf("{Returning} %v: want 0 <= p < 1", p)
	}
	return nil
}

// validZ checks the demo's noise multiplier.
func validZ(z float64) error {
	if z <= 0 {
		return Fields.Errorf("{Z} %v: the demo is private, want z > 0", z)
	}
	return nil
}

// AgentConfig returns the demo's agent configuration for profile p (that
// of c.Env): p's spec, learner and public reward range, with c's Z (and K,
// Clip and LR when > 0), seeded with c.Seed, and partial batches
// released after 2 s. The demo is private: Z must be > 0.
func (c Config) AgentConfig(p profile.Profile) (agent.Config, error) {
	z := c.Z
	delta := c.Delta
	if delta == 0 {
		delta = agent.DefaultConfig(p.Spec, p.Learner).Delta
	}
	if c.UserEpsilon > 0 && z == 0 {
		var err error
		if z, err = accountant.Calibrate(accountant.Analytic{}, c.UserEpsilon, delta, 1, max(c.MaxUpdatesPerUser, 1)); err != nil {
			return agent.Config{}, Fields.Errorf("{UserEpsilon} %v: %w", c.UserEpsilon, err)
		}
	}
	if err := validZ(z); err != nil {
		return agent.Config{}, err
	}
	if c.K < 0 {
		return agent.Config{}, Fields.Errorf("{K} %d: want sessions per update >= 1 (0: the profile's)", c.K)
	}
	pc := p.Learner
	pc.DP.NoiseMultiplier = z
	if c.Clip > 0 {
		pc.DP.ClipNorm = c.Clip
	}
	if c.LR > 0 {
		pc.PPO.ServerLR = c.LR
	}
	if c.K > 0 {
		pc.DP.UsersPerUpdate = c.K
	}
	var err error
	if pc.DP, err = pc.DP.WithOnlineNoise(c.Noise, c.Band); err != nil {
		return agent.Config{}, fmt.Errorf("demo: %w", err)
	}
	ac := agent.DefaultConfig(p.Spec, pc)
	ac.Delta = delta
	switch c.Learner {
	case "", "dppg":
	case "lincb":
		if p.FeatureClip == 0 {
			return agent.Config{}, Fields.Errorf("{Learner} lincb: --env %s states no feature clip (a one-decision task does: bandit)", p.Name)
		}
		if c.Replicas > 0 {
			return agent.Config{}, Fields.Errorf("{Learner} lincb runs in one process, not with {Replicas}")
		}
		lc := lincb.DefaultConfig(0, 0, p.FeatureClip)
		ac.LinCB = &lc
	default:
		return agent.Config{}, Fields.Errorf("{Learner} %q: want dppg or lincb", c.Learner)
	}
	if !(c.Average >= 0 && c.Average < 1) {
		return agent.Config{}, Fields.Errorf("{Average} %v: want a decay in [0, 1) (0: the last release)", c.Average)
	}
	if c.Average > 0 && ac.LinCB != nil {
		return agent.Config{}, Fields.Errorf("{Average} applies to {Learner} dppg, not lincb")
	}
	ac.AverageDecay = c.Average
	ac.RewardLow, ac.RewardHigh = p.RewardLow, p.RewardHigh
	ac.UserEpsilon, ac.MaxUpdatesPerUser = c.UserEpsilon, c.MaxUpdatesPerUser
	ac.Seed = c.Seed
	ac.FlushTimeout = 2 * time.Second
	if c.FlushTimeout != 0 {
		ac.FlushTimeout = c.FlushTimeout
	}
	return ac, ac.Validate()
}

// Service returns the service configuration of the agent of a demo of c
// with agent configuration ac: the embedded NATS server, the data in
// c.Data, or in a new temporary directory if c.Data is "".
func (c Config) Service(ac agent.Config, log zerolog.Logger) (service.ServiceConfig, error) {
	dir, err := c.Data, error(nil)
	if dir == "" {
		if dir, err = os.MkdirTemp("", "dprl-demo-"); err != nil {
			return service.ServiceConfig{}, err
		}
	}
	return service.ServiceConfig{Agent: ac, DataDir: dir, NATS: "embedded", NATSListen: "127.0.0.1:0", SessionLogDir: c.LogSessions, Logger: log}, nil
}

// Prepare resolves a validated c as dprl demo does before Run (set
// reports whether a field was given): with UserEpsilon and no Z given, z is
// derived from UserEpsilon; without Target given, the environment's demo
// target applies. It returns the resolved c, its agent configuration
// (AgentConfig) and the per-session epsilon of one release at its z.
func (c Config) Prepare(set func(field string) bool) (Config, agent.Config, float64, error) {
	if c.UserEpsilon > 0 && !set("Z") {
		c.Z = 0 // derived from UserEpsilon
	}
	prof, err := profile.Get(c.Env)
	if err != nil {
		return c, agent.Config{}, 0, err
	}
	if !set("Average") && (c.Learner == "" || c.Learner == "dppg") {
		c.Average = prof.Average
	}
	ac, err := c.AgentConfig(prof)
	if err != nil {
		return c, ac, 0, err
	}
	eps, err := ac.SessionEpsilon()
	if err != nil {
		return c, ac, 0, err
	}
	if !set("Target") && prof.DemoTargetReturn > 0 {
		c.Target = prof.DemoTargetReturn
	}
	return c, ac, eps, nil
}

// Result is the summary of a demo run. Fields named sim_* are
// simulation-only: measured in the demo process on the public simulator or
// from the simulated users' own sessions, never served by the agent.
type Result struct {
	Env          string  `json:"env"`
	Users        int64   `json:"users"`
	TargetReturn float64 `json:"target_return,omitempty"`
	Updates      int64   `json:"updates"`
	Version      uint64  `json:"version"`
	// SimEval are the stopping rule's evaluations of released policy
	// versions on fresh episodes of the simulator (post-processing of DP
	// releases), in order; SimFinalEval is the final version's.
	SimEval      []Eval `json:"sim_eval"`
	SimFinalEval Eval   `json:"sim_final_eval"`
	EvalEpisodes int    `json:"eval_episodes"`
	// SimExact is, on the bandit, the final release's exact expected click
	// beside the random, best-fixed and oracle baselines on the same
	// held-out users (the evaluations above are then exact too).
	SimExact *ExactEval `json:"sim_exact,omitempty"`
	// SimUsersMeanReturn is the mean return of the simulated users' last
	// (at most 100) sessions, measured by the users themselves.
	SimUsersMeanReturn float64 `json:"sim_users_mean_return"`
	SimUsersSessions   int     `json:"sim_users_sessions"`
	Epsilon            float64 `json:"epsilon"`
	Delta              float64 `json:"delta"`
	// NextEpsilon is the per-session epsilon of a release at Z; Epsilon,
	// the worst release in the ledger, is larger when the data directory
	// held releases made at a smaller z.
	NextEpsilon float64 `json:"next_release_epsilon"`
	Z           float64 `json:"z"`
	K           int     `json:"k"`
	ActP50Ms    float64 `json:"act_p50_ms"`
	ActP99Ms    float64 `json:"act_p99_ms"`
	Seconds     float64 `json:"seconds"`
	DataDir     string  `json:"data_dir"`
	LedgerOK    bool    `json:"ledger_ok"`
	// UserMaxUpdates and UserEpsilon are the most-used user's number of
	// updates and composed epsilon at Delta (from the ledger): with
	// returning users and no per-user cap, the per-user guarantee is this,
	// not the per-session one.
	UserMaxUpdates int     `json:"user_max_updates"`
	UserEpsilon    float64 `json:"user_epsilon"`
	// UserBound is the per-user guarantee the caps give any user, counting
	// the updates the ledger holds at their own z (the headline:
	// agent.Guarantee.UserBound), and UserCaps names the
	// caps; nil and "" without a per-user cap.
	UserBound    *float64 `json:"user_epsilon_bound"`
	UserCaps     string   `json:"user_caps,omitempty"`
	NATSURL      string   `json:"nats_url"`
	ActsPerSec   float64  `json:"acts_per_second"`
	ReturningPct float64  `json:"returning"`
	// Average is the agent's AverageDecay: the versions serve (and are
	// evaluated as) the moving average of the releases; 0: each its own.
	Average float64 `json:"average,omitempty"`
}

// WriteText writes the summary for people: the run, both privacy
// guarantees, the simulation-only values labelled as such, the act latency
// and the ledger verification.
func (r Result) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%d users, %d updates (policy version %d) in %.1f s\n", r.Users, r.Updates, r.Version, r.Seconds)
	if r.Updates == 0 && r.Users > 0 {
		// Say why nothing was learned rather than leave a bare 0.
		if r.Version > 0 && r.UserCaps != "" {
			fmt.Fprintf(w, "no update in this run: an update needs K = %d sessions learned from, and a session whose user is at a cap (%s) is served, not learned from; this data directory already holds %d releases, and a demo resumed on it plays the same user ids (give a new --data to learn again)\n",
				r.K, r.UserCaps, r.Version)
		} else {
			fmt.Fprintf(w, "no update in this run: an update needs K = %d sessions learned from, and %d users played\n", r.K, r.Users)
		}
	}
	updates := fmt.Sprintf("%d updates", r.UserMaxUpdates)
	if r.UserMaxUpdates == 1 {
		updates = "1 update"
	}
	if r.UserBound != nil {
		fmt.Fprintf(w, "privacy per user: epsilon at most %s at delta %g for any user (%s); the most-used user took part in %s (epsilon %s)\n",
			accountant.FormatEpsilon(*r.UserBound), r.Delta, r.UserCaps, updates, accountant.FormatEpsilon(r.UserEpsilon))
	} else {
		fmt.Fprintf(w, "privacy per user: no per-user cap (--max-updates-per-user 0): the most-used user took part in %s: epsilon %s at delta %g (composition)\n",
			updates, accountant.FormatEpsilon(r.UserEpsilon), r.Delta)
	}
	if r.NextEpsilon > 0 && r.Epsilon > r.NextEpsilon {
		fmt.Fprintf(w, "privacy per session: each release (epsilon %s, delta %g)-DP per session at worst (the ledger holds releases made at other settings; one at z = %.6g, K = %d: epsilon %s), analytic Gaussian\n",
			accountant.FormatEpsilon(r.Epsilon), r.Delta, r.Z, r.K, accountant.FormatEpsilon(r.NextEpsilon))
	} else {
		fmt.Fprintf(w, "privacy per session: each release (epsilon %s, delta %g)-DP per session, analytic Gaussian, z = %.6g, K = %d\n",
			accountant.FormatEpsilon(r.Epsilon), r.Delta, r.Z, r.K)
	}
	if x := r.SimExact; x != nil {
		fmt.Fprintf(w, "simulation only (the simulator's users, not private data; exact click probabilities, no click sampled): released policy version %d's expected click per session %.4f on %d fixed held-out users; on the same users a uniformly random item %.4f, the best fixed item (item %d) %.4f, the per-user oracle %.4f\n",
			x.Version, x.Policy, x.Users, x.Uniform, x.BestItem, x.BestFixed, x.Oracle)
	} else {
		served := ""
		if r.Average > 0 {
			served = fmt.Sprintf(", serving the moving average of the releases (decay %g)", r.Average)
		}
		fmt.Fprintf(w, "simulation only: released policy version %d%s returns %.1f on average over %d fresh simulator episodes (post-processing of the release)\n",
			r.SimFinalEval.Version, served, r.SimFinalEval.MeanReturn, r.EvalEpisodes)
	}
	fmt.Fprintf(w, "simulation only: the simulated users' own mean return over their last %d sessions %.1f (measured by the users, not served by the agent)\n",
		r.SimUsersSessions, r.SimUsersMeanReturn)
	fmt.Fprintf(w, "act latency seen by clients over NATS: p50 %.3f ms, p99 %.3f ms (%.0f acts/s)\n", r.ActP50Ms, r.ActP99Ms, r.ActsPerSec)
	ok := "verified"
	if !r.LedgerOK {
		ok = "FAILED verification"
	}
	_, err := fmt.Fprintf(w, "ledger %s; data directory %s (try: dprl ledger show --data %s)\n", ok, r.DataDir, r.DataDir)
	return err
}

// Progress is a running demo's progress: counts of the run and public
// values (the last evaluation is of a released policy, simulation-only).
type Progress struct {
	Users, MaxUsers int64 // sessions admitted, of at most MaxUsers
	Releases        int64
	LastEval        *Eval // nil before the first evaluation
	Epsilon         float64
	ActP99Ms        float64
	// Stopped says the stopping rule admits no more users (an evaluation
	// reached the target); Deadline is when Config.MaxDuration ends the
	// run (zero: no limit).
	Stopped  bool
	Deadline time.Time
}

// Report is the progress report: sessions admitted of at most MaxUsers,
// releases, the last evaluation's return (simulation only), the
// per-session epsilon and the act p99. Its estimate of the time left is
// that of the run that actually happens: the users admitted so far once
// the stopping rule stopped admitting, and never past the MaxDuration
// deadline (not all MaxUsers users play when either ends the run).
func (p Progress) Report() progress.Report {
	fs := []progress.Field{progress.F("releases", p.Releases)}
	if p.LastEval != nil {
		fs = append(fs, progress.Ff("sim_eval_return", "%.1f", p.LastEval.MeanReturn), progress.F("eval_version", p.LastEval.Version))
	}
	// The epsilon is rounded up (4 significant digits), never to nearest.
	fs = append(fs, progress.Ff("epsilon_per_session", "%.4g", accountant.CeilEpsilon(p.Epsilon)), progress.Ff("act_p99_ms", "%.2f", p.ActP99Ms))
	total := p.MaxUsers
	if p.Stopped {
		total = p.Users
	}
	return progress.Report{Done: p.Users, Total: total, Unit: "users", Fields: fs, Deadline: p.Deadline}
}

// String is the progress line.
func (p Progress) String() string {
	evs := "-"
	if p.LastEval != nil {
		evs = fmt.Sprintf("%.1f (v%d)", p.LastEval.MeanReturn, p.LastEval.Version)
	}
	return fmt.Sprintf("users %d/%d  releases %d  eval return %s [simulation-only]  epsilon %s/session  act p99 %.2f ms",
		p.Users, p.MaxUsers, p.Releases, evs, accountant.FormatEpsilon(p.Epsilon), p.ActP99Ms)
}

// Run starts the agent service sc (NATS embedded, on a loopback port, and a
// fresh ledger in sc.DataDir), drives cfg's simulated users against it
// over NATS, stops it, then reopens its ledger read-only and verifies it.
// The result's privacy fields are read from the ledger with sc.Agent's
// settings (agent.Config.LedgerGuarantee); a ledger that fails
// verification is an error.
func Run(ctx context.Context, sc service.ServiceConfig, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if cfg.MaxDuration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.MaxDuration)
		defer cancel()
	}
	// The progress line counts the releases: the agent's line per release
	// would scroll it away.
	sc.Logger = sc.Logger.Hook(zerolog.HookFunc(func(e *zerolog.Event, _ zerolog.Level, msg string) {
		if strings.HasPrefix(msg, agent.ReleaseMessage) {
			e.Discard()
		}
	}))
	var svc *service.Service
	var served func(context.Context, uint64) error
	var stop func() error
	var err error
	if cfg.Replicas > 0 {
		if sc.SessionLogDir != "" || sc.SessionLogWriter != nil {
			return Result{}, errors.New("demo: a session log is written by a single agent, not with replicas")
		}
		svc, served, stop, err = startCluster(ctx, sc, cfg.Replicas)
	} else if svc, err = service.StartService(ctx, sc); err == nil {
		stop = svc.Close
	}
	if err != nil {
		return Result{}, err
	}
	res, runErr := drive(ctx, svc, served, sc.Agent, cfg)
	closeErr := stop()
	if runErr != nil {
		return Result{}, runErr
	}
	if closeErr != nil {
		return Result{}, closeErr
	}
	res.Delta, res.Z, res.K, res.DataDir = sc.Agent.Delta, sc.Agent.Policy.DP.NoiseMultiplier, sc.Agent.Policy.DP.UsersPerUpdate, sc.DataDir
	s, err := ledger.Open(sc.DataDir, ledger.Options{MustExist: true, ReadOnly: true, Logger: sc.Logger})
	if err != nil {
		return Result{}, err
	}
	defer s.Close()
	if err := res.verifyLedger(s); err != nil {
		return Result{}, err
	}
	// The guarantee is the ledger's: a data directory that already held
	// releases at another z keeps them (agent.Guarantee).
	g, err := sc.Agent.LedgerGuarantee(s)
	if err != nil {
		return Result{}, err
	}
	res.Epsilon, res.Delta, res.NextEpsilon = g.Epsilon, g.Delta, g.Next
	res.Average = sc.Agent.AverageDecay
	if g.UserBounded {
		ub := g.UserBound
		res.UserBound, res.UserCaps = &ub, sc.Agent.UserCaps()
	}
	return res, nil
}

// drive plays the users of cfg against the running service svc; served,
// when not nil, waits until the users are served a version (a cluster's
// replicas), which lockstep pacing waits for; nil: svc serves them.
func drive(ctx context.Context, svc *service.Service, served func(context.Context, uint64) error, ac agent.Config, cfg Config) (Result, error) {
	start := time.Now()
	nc, err := stream.Connect(svc.NATSURL(), stream.WithName("dprl-demo-users"))
	if err != nil {
		return Result{}, err
	}
	defer nc.Close()
	// Every session of the Population is opened and ended on this one
	// connection, from which the agent accepts an end naming no user.
	client, err := stream.NewClient(nc)
	if err != nil {
		return Result{}, err
	}
	// Lockstep pacing and the end of the run wait for releases: the
	// agent's dprl.v1.policy announcement wakes them (no polling).
	rel := newReleaseSignal()
	sub, err := client.WatchPolicy(func(stream.PolicyAnnouncement) { rel.notify() })
	if err != nil {
		return Result{}, err
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil { // the server knows the subscription before any release
		return Result{}, fmt.Errorf("demo: watch policy: %w", err)
	}
	var (
		admitted atomic.Int64
		lat      latencies
		rets     simReturns
	)
	master := cfg.Seed
	if master == 0 {
		master = rand.Uint64()
	}
	ag := svc.Agent()
	// blockOf is the update session i enters in lockstep: i / K, or the
	// linear contextual bandit's growing blocks.
	K := ag.K()
	blockOf := func(i int64) uint64 { return uint64(i / int64(K)) }
	if ac.LinCB != nil {
		lc := ac.LinCBConfig()
		blockOf = func(i int64) uint64 { return uint64(lc.BlockOf(int(i))) }
	}
	if served == nil {
		served = func(ctx context.Context, b uint64) error {
			return rel.wait(ctx, func() bool { return ag.Version() >= b })
		}
	}
	ev := &evaluator{store: svc.Store(), spec: ac.Spec, cfg: ac.Policy, env: cfg.Env, master: master,
		every: cfg.EvalEvery, episodes: cfg.EvalEpisodes, target: cfg.Target}
	if env, _ := sims.New(cfg.Env); env != nil {
		if b, ok := env.(*sims.Bandit); ok {
			if ev.exact, err = b.HeldOut(HeldOutUsers, heldOutRand()); err != nil {
				return Result{}, err
			}
		}
	}
	pop, err := sims.NewPopulation(sims.PopulationConfig{
		NewEnv:     func() sims.Env { e, _ := sims.New(cfg.Env); return e }, // checked by Validate (profile.Get)
		Sessions:   cfg.Users,
		Workers:    cfg.Concurrency,
		ReturnProb: cfg.Returning,
		Seed:       master,
		Prefix:     "demo",
		Admit: func(ctx context.Context, i int) (bool, error) {
			v := ag.Version()
			if cfg.Pace == PaceLockstep {
				// Admit session i once the policy it will train has been
				// released: the sessions of update b all start on version b.
				b := blockOf(int64(i))
				if err := served(ctx, b); err != nil {
					return false, nil // ctx is done: Run returns its cause
				}
				v = b
			}
			ok, err := ev.admit(v)
			if ok {
				admitted.Add(1)
			}
			return ok, err
		},
		OnError: func(_ sims.SessionResult, err error) error {
			if errors.Is(err, stream.ErrShuttingDown) {
				return nil // the agent is stopping: the run ends with ctx
			}
			return err
		},
	})
	if err != nil {
		return Result{}, err
	}
	stopProgress := func() {}
	if cfg.StartProgress != nil {
		deadline, _ := ctx.Deadline() // Config.MaxDuration's
		stopProgress = cfg.StartProgress(func() Progress {
			st := ag.Stats()
			return Progress{Users: admitted.Load(), MaxUsers: int64(cfg.Users), Releases: st.Updates, LastEval: ev.latest(),
				Epsilon: st.Epsilon, ActP99Ms: lat.quantiles(0.99)[0], Stopped: ev.stopped.Load(), Deadline: deadline}
		})
	}
	runErr := pop.Run(ctx, timedAgent{Agent: client, lat: &lat}, func(r sims.SessionResult) { rets.add(r.Return) })
	// Let the updater take the last full batch (a partial one is flushed
	// after the flush timeout, or left): wait for its release, at most 3 s.
	// The linear contextual bandit's last block, partial, is waited for
	// too (the demo's flush timeout is 2 s): its users are learned from,
	// as a production agent's would be.
	last := blockOf(admitted.Load())
	if ac.LinCB != nil && admitted.Load() > 0 {
		last = blockOf(admitted.Load()-1) + 1
	}
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
	_ = rel.wait(wctx, func() bool { return uint64(ag.Stats().Updates) >= last })
	wcancel()
	stopProgress()
	if runErr != nil && !errors.Is(runErr, context.DeadlineExceeded) {
		return Result{}, runErr
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return Result{}, err
	}
	st := ag.Stats()
	evals, final, err := ev.final(st.Version)
	if err != nil {
		return Result{}, err
	}
	var exact *ExactEval
	if ev.exact != nil {
		exact = newExactEval(ev.exact, final.Version, final.MeanReturn)
	}
	q := lat.quantiles(0.5, 0.99)
	secs := time.Since(start).Seconds()
	simMean, simN := rets.mean()
	return Result{TargetReturn: cfg.Target, Env: cfg.Env, Users: admitted.Load(), Updates: st.Updates, Version: st.Version,
		SimEval: evals, SimFinalEval: final, EvalEpisodes: cfg.EvalEpisodes, SimExact: exact, SimUsersMeanReturn: simMean, SimUsersSessions: simN,
		ActP50Ms: q[0], ActP99Ms: q[1], Seconds: secs, NATSURL: svc.NATSURL(),
		ActsPerSec: float64(lat.count()) / secs, ReturningPct: cfg.Returning}, nil
}

// verifyLedger verifies the finished run's ledger s and records the
// most-used user's updates and composed epsilon at r.Delta.
func (r *Result) verifyLedger(s *ledger.Store) error {
	v, err := s.Verify()
	if err != nil {
		return err
	}
	r.LedgerOK = v.OK()
	if !v.OK() {
		return fmt.Errorf("demo: ledger verification found %d problems: %v", len(v.Problems), v.Problems)
	}
	return s.Users(func(_ ledger.UserKey, u ledger.UserState) error {
		if u.Updates <= r.UserMaxUpdates {
			return nil
		}
		eps, err := u.Epsilon(r.Delta)
		if err != nil {
			return err
		}
		r.UserMaxUpdates, r.UserEpsilon = u.Updates, eps
		return nil
	})
}
