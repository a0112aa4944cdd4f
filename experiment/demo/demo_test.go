package demo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"dprl/agent"
	"dprl/agent/service"
	"dprl/internal/fielderr"
	"dprl/internal/progress"
	"dprl/ledger"
	"dprl/ledger/accountant"
	"dprl/policy"
	"dprl/profile"
)

// demoConfig is a small lockstep demo on CartPole that evaluates every
// release.
func demoConfig() Config {
	return Config{Env: "cartpole", Users: 24, Concurrency: 4, Returning: 0.2, Seed: 3, Pace: PaceLockstep,
		EvalEvery: 1, EvalEpisodes: 2, Z: 1, K: 8}
}

// TestRun runs the demo end to end on a real agent (embedded NATS on
// loopback, Pebble in a temp dir): lockstep admits exactly K sessions per
// release, every release is evaluated and the evaluations are recomputed
// from the ledger's snapshots and the seed alone, the ledger verifies, and
// the progress callback is started and stopped once.
func TestRun(t *testing.T) {
	cfg := demoConfig()
	ac := agentConfigOf(t, cfg)
	var started, stopped atomic.Int32
	var last atomic.Value
	cfg.StartProgress = func(p func() Progress) func() {
		started.Add(1)
		last.Store(p())
		return func() { last.Store(p()); stopped.Add(1) }
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Run(ctx, service.ServiceConfig{Agent: ac, DataDir: dir, NATS: "embedded", NATSListen: "127.0.0.1:0"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Users != 24 || res.Updates != 3 || res.Version != 3 || !res.LedgerOK || res.DataDir != dir || res.Env != "cartpole" {
		t.Errorf("result %+v", res)
	}
	if res.Z != 1 || res.K != 8 || res.Delta != ac.Delta || res.EvalEpisodes != 2 || res.ReturningPct != 0.2 {
		t.Errorf("settings in the result: %+v", res)
	}
	eps, _ := ac.SessionEpsilon()
	if res.Epsilon != eps || res.UserMaxUpdates < 1 || res.UserEpsilon < eps {
		t.Errorf("privacy: epsilon %v (want %v), most-used user %d updates at %v", res.Epsilon, eps, res.UserMaxUpdates, res.UserEpsilon)
	}
	if res.SimUsersSessions != 24 || !(res.ActP50Ms > 0) || !(res.ActsPerSec > 0) {
		t.Errorf("measurements: %+v", res)
	}
	if started.Load() != 1 || stopped.Load() != 1 {
		t.Errorf("progress started %d and stopped %d times, want once", started.Load(), stopped.Load())
	}
	if p := last.Load().(Progress); p.Users != 24 || p.MaxUsers != 24 || p.Releases != 3 || p.LastEval == nil || p.LastEval.Version != 2 || p.Epsilon != eps {
		t.Errorf("final progress %+v", p)
	}
	// Every release that serves sessions is evaluated before they start
	// (versions 1 and 2); the last one at the end.
	if len(res.SimEval) != 2 || res.SimFinalEval.Version != 3 {
		t.Fatalf("evaluations %+v, final %+v", res.SimEval, res.SimFinalEval)
	}
	store, err := ledger.Open(dir, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for i, e := range append(res.SimEval, res.SimFinalEval) {
		if e.Version != uint64(i+1) {
			t.Errorf("evaluation %d of version %d", i, e.Version)
		}
		got, err := EvaluateRelease(store, ac.Spec, ac.Policy, "cartpole", e.Version, 2, cfg.Seed)
		if err != nil {
			t.Fatal(err)
		}
		if got != e.MeanReturn {
			t.Errorf("version %d: reported %v, the released snapshot evaluates to %v", e.Version, e.MeanReturn, got)
		}
	}
	if _, err := EvaluateRelease(store, ac.Spec, ac.Policy, "cartpole", 99, 2, cfg.Seed); err == nil {
		t.Error("evaluated a version that was never released")
	}
	var b strings.Builder
	if err := res.WriteText(&b); err != nil || !strings.Contains(b.String(), "ledger verified; data directory "+dir) {
		t.Errorf("text %q %v", b.String(), err)
	}
}

// TestRunStopsAtTarget: a target every evaluation reaches stops admitting
// users at the first evaluated release.
func TestRunStopsAtTarget(t *testing.T) {
	cfg := demoConfig()
	cfg.Target = 1 // CartPole returns at least 1
	prof, _ := profile.Get(cfg.Env)
	ac, err := cfg.AgentConfig(prof)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxDuration = time.Minute
	var last atomic.Value
	cfg.StartProgress = func(p func() Progress) func() { return func() { last.Store(p()) } }
	start := time.Now()
	res, err := Run(context.Background(), service.ServiceConfig{Agent: ac, DataDir: t.TempDir(), NATS: "embedded", NATSListen: "127.0.0.1:0"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Version 0 is never evaluated (every release from version 1): the
	// first batch is admitted, version 1 reaches the target.
	if res.Users != 8 || res.Version != 1 || len(res.SimEval) != 1 || res.SimEval[0].Version != 1 || res.TargetReturn != 1 {
		t.Errorf("result %+v", res)
	}
	// The progress of the run that happens: no more users once stopped,
	// and the MaxDuration deadline.
	p := last.Load().(Progress)
	if !p.Stopped || p.Deadline.Before(start.Add(time.Minute)) || p.Deadline.After(time.Now().Add(time.Minute)) {
		t.Errorf("final progress %+v: want stopped, deadline a minute after the start", p)
	}
	if r := p.Report(); r.Total != 8 || progress.TimeLeft(r, start, time.Now()) != 0 {
		t.Errorf("final report %+v: want 8 of 8 users, no time left", r)
	}
}

// TestProgressTimeLeft: the demo's estimate of the time left is that of
// the run that happens, not of all --users users: never past the
// --max-duration deadline, and none once the stopping rule admits no more
// users. (It assumed all 20,000 users would play: 100 users in 10 s gave
// 33 min left of a run that ends in 50 s.)
func TestProgressTimeLeft(t *testing.T) {
	start := time.Unix(1e9, 0)
	now := start.Add(10 * time.Second)
	for _, c := range []struct {
		name string
		p    Progress
		want time.Duration
	}{
		{"all users", Progress{Users: 100, MaxUsers: 20000}, 1990 * time.Second},
		{"max duration", Progress{Users: 100, MaxUsers: 20000, Deadline: now.Add(50 * time.Second)}, 50 * time.Second},
		{"users before the deadline", Progress{Users: 100, MaxUsers: 150, Deadline: now.Add(50 * time.Second)}, 5 * time.Second},
		{"stopped", Progress{Users: 100, MaxUsers: 20000, Stopped: true, Deadline: now.Add(50 * time.Second)}, 0},
	} {
		if got := progress.TimeLeft(c.p.Report(), start, now); got != c.want {
			t.Errorf("%s: %v left, want %v", c.name, got, c.want)
		}
	}
}

// flags are dprl demo's and dprl replay's names of the fields.
var flags = map[string]string{"Users": "--users", "Concurrency": "--concurrency", "EvalEvery": "--eval-every", "EvalEpisodes": "--eval-episodes",
	"Pace": "--pace", "Returning": "--returning", "Clip": "--clip", "LR": "--server-lr", "MaxDuration": "--max-duration", "Z": "--z", "K": "--K", "Rate": "--rate", "Replicas": "--replicas", "Learner": "--learner", "Average": "--average", "FlushTimeout": "--flush-timeout"}

// asFlags renders err as the commands print it.
func asFlags(err error) string {
	return fielderr.Rename(err, func(f string) string { return flags[f] }).Error()
}

// TestConfigValidate: the first problem is reported, named by field and
// rendered as the command's flags, in the command's order.
func TestConfigValidate(t *testing.T) {
	if err := demoConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, f := range Fields {
		if flags[f] == "" {
			t.Errorf("field %s: no flag", f)
		}
	}
	for _, c := range []struct {
		mod         func(*Config)
		plain, flag string
	}{
		{func(c *Config) { c.Users = 0 }, "Users and Concurrency must be >= 1", "--users and --concurrency must be >= 1"},
		{func(c *Config) { c.Concurrency = 0; c.Pace = "x" }, "Users and Concurrency must be >= 1", "--users and --concurrency must be >= 1"},
		{func(c *Config) { c.EvalEvery = 0 }, "EvalEvery and EvalEpisodes must be >= 1", "--eval-every and --eval-episodes must be >= 1"},
		{func(c *Config) { c.EvalEpisodes = 0; c.Z = 0 }, "EvalEvery and EvalEpisodes must be >= 1", "--eval-every and --eval-episodes must be >= 1"},
		{func(c *Config) { c.Pace = "sometimes"; c.Returning = 2 }, `Pace "sometimes": want lockstep or free`, `--pace "sometimes": want lockstep or free`},
		{func(c *Config) { c.Returning = 1 }, "Returning 1: want 0 <= p < 1", "--returning 1: want 0 <= p < 1"},
		{func(c *Config) { c.Returning = -0.1; c.Env = "nope" }, "Returning -0.1: want 0 <= p < 1", "--returning -0.1: want 0 <= p < 1"},
		{func(c *Config) { c.Clip = -1; c.Env = "nope" }, "Clip -1: want a finite clipping norm > 0", "--clip -1: want a finite clipping norm > 0"},
		{func(c *Config) { c.LR = math.NaN() }, "LR NaN: want a finite server step > 0", "--server-lr NaN: want a finite server step > 0"},
		{func(c *Config) { c.MaxDuration = -time.Second }, "MaxDuration -1s: want > 0", "--max-duration -1s: want > 0"},
		{func(c *Config) { c.Env = "nope"; c.Z = 0 }, `sims: unknown environment "nope"`, `sims: unknown environment "nope"`},
		{func(c *Config) { c.K = -1; c.Z = 0 }, "K -1: want sessions per update >= 1", "--K -1: want sessions per update >= 1"},
		{func(c *Config) { c.Z = 0 }, "Z 0: the demo is private, want z > 0", "--z 0: the demo is private, want z > 0"},
		{func(c *Config) { c.Z = -1 }, "Z -1: the demo is private, want z > 0", "--z -1: the demo is private, want z > 0"},
	} {
		cfg := demoConfig()
		c.mod(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), c.plain) || !strings.HasPrefix(asFlags(err), c.flag) {
			t.Errorf("%v, want %q (%q)", err, c.plain, c.flag)
		}
		if _, err := Run(context.Background(), service.ServiceConfig{}, cfg); err == nil {
			t.Errorf("%s: Run accepted the config", c.plain)
		}
	}
	cfg := demoConfig()
	cfg.Pace = PaceFree
	if err := cfg.Validate(); err != nil {
		t.Errorf("free pace: %v", err)
	}
}

// TestAgentConfig: the demo's settings override the profile's learner,
// the reward bound is the profile's, and the demo refuses to be
// non-private.
func TestAgentConfig(t *testing.T) {
	prof, err := profile.Get("pendulum")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Z: 2, K: 4, Seed: 9}
	ac, err := cfg.AgentConfig(prof)
	if err != nil {
		t.Fatal(err)
	}
	dp := ac.Policy.DP
	if dp.NoiseMultiplier != 2 || dp.UsersPerUpdate != 4 || dp.ClipNorm != prof.Learner.DP.ClipNorm || ac.Policy.PPO.ServerLR != prof.Learner.PPO.ServerLR ||
		ac.RewardLow != prof.RewardLow || ac.RewardHigh != prof.RewardHigh || ac.Seed != 9 || ac.FlushTimeout != 2*time.Second || ac.Spec != prof.Spec {
		t.Errorf("agent config %+v", ac)
	}
	cfg.Clip, cfg.LR = 0.7, 0.3
	if ac, err = cfg.AgentConfig(prof); err != nil || ac.Policy.DP.ClipNorm != 0.7 || ac.Policy.PPO.ServerLR != 0.3 {
		t.Errorf("clip and lr: %+v %v", ac.Policy, err)
	}
	for _, z := range []float64{0, -1} {
		var fe *fielderr.Error
		if _, err := (Config{Z: z, K: 4}).AgentConfig(prof); !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), "Z ") {
			t.Errorf("z = %v: %v", z, err)
		}
	}
	if _, err := (Config{Z: 1, K: -1}).AgentConfig(prof); err == nil {
		t.Error("K = -1 accepted")
	}
	if ac, err := (Config{Z: 1}).AgentConfig(prof); err != nil || ac.Policy.DP.UsersPerUpdate != prof.Learner.DP.UsersPerUpdate {
		t.Errorf("K = 0: %d, %v; want the profile's", ac.Policy.DP.UsersPerUpdate, err)
	}
}

// TestResultWriteText pins the text summary, its simulation-only labels
// and the failed-verification wording.
func TestResultWriteText(t *testing.T) {
	bound := 6.5730001
	r := Result{Env: "cartpole", Users: 48, Updates: 6, Version: 6, Seconds: 2.54, Epsilon: 4.377178, Delta: 1e-5, Z: 1, K: 8, UserBound: &bound, UserCaps: "at most 2 updates per user",
		UserMaxUpdates: 2, UserEpsilon: 6.57297, SimFinalEval: Eval{Version: 6, MeanReturn: 18.25}, EvalEpisodes: 10,
		SimUsersSessions: 48, SimUsersMeanReturn: 23.29, ActP50Ms: 0.101, ActP99Ms: 3.582, ActsPerSec: 440.2, DataDir: "/d", LedgerOK: true}
	const want = `48 users, 6 updates (policy version 6) in 2.5 s
privacy per user: epsilon at most 6.574 at delta 1e-05 for any user (at most 2 updates per user); the most-used user took part in 2 updates (epsilon 6.573)
privacy per session: each release (epsilon 4.378, delta 1e-05)-DP per session, analytic Gaussian, z = 1, K = 8
simulation only: released policy version 6 returns 18.2 on average over 10 fresh simulator episodes (post-processing of the release)
simulation only: the simulated users' own mean return over their last 48 sessions 23.3 (measured by the users, not served by the agent)
act latency seen by clients over NATS: p50 0.101 ms, p99 3.582 ms (440 acts/s)
ledger verified; data directory /d (try: dprl ledger show --data /d)
`
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	r.LedgerOK = false
	b.Reset()
	if r.WriteText(&b); !strings.Contains(b.String(), "ledger FAILED verification; data directory /d") {
		t.Errorf("failed verification: %q", b.String())
	}
}

func TestProgressString(t *testing.T) {
	p := Progress{Users: 16, MaxUsers: 400, Releases: 2, Epsilon: 4.377178, ActP99Ms: 1.234}
	const noEval = "users 16/400  releases 2  eval return - [simulation-only]  epsilon 4.378/session  act p99 1.23 ms"
	if p.String() != noEval {
		t.Errorf("got  %q\nwant %q", p.String(), noEval)
	}
	p.LastEval = &Eval{Version: 2, MeanReturn: 21.25}
	const withEval = "users 16/400  releases 2  eval return 21.2 (v2) [simulation-only]  epsilon 4.378/session  act p99 1.23 ms"
	if p.String() != withEval {
		t.Errorf("got  %q\nwant %q", p.String(), withEval)
	}
}

// TestAgentConfigUserEpsilon: the demo's --user-epsilon derives z as dprl
// agent does (a user in every capped update reaches it) and caps users.
func TestAgentConfigUserEpsilon(t *testing.T) {
	cfg := demoConfig()
	cfg.Z, cfg.UserEpsilon, cfg.MaxUpdatesPerUser = 0, 5, 10
	ac := agentConfigOf(t, cfg)
	b, ok, err := ac.UserEpsilonBound()
	if err != nil || !ok || b > 5 || b < 4.99 || ac.UserEpsilon != 5 || ac.MaxUpdatesPerUser != 10 {
		t.Fatalf("z %v: per-user bound %v %v %v, caps %v %d", ac.Policy.DP.NoiseMultiplier, b, ok, err, ac.UserEpsilon, ac.MaxUpdatesPerUser)
	}
}

// TestRunBanded runs the demo with bandmf noise end to end: the agent's
// config carries the noise, every release records its stream and the
// ledger (patterns, noise records) verifies; a band without bandmf and an
// unknown noise are refused.
func TestRunBanded(t *testing.T) {
	cfg := demoConfig()
	cfg.Users, cfg.Returning, cfg.Noise, cfg.Band, cfg.MaxUpdatesPerUser = 32, 0, "bandmf", 3, 2
	ac := agentConfigOf(t, cfg)
	if ac.Policy.DP.Noise != policy.NoiseBandedSqrt || ac.Policy.DP.Band != 3 {
		t.Fatalf("agent DP config %+v", ac.Policy.DP)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Run(ctx, service.ServiceConfig{Agent: ac, DataDir: dir, NATS: "embedded", NATSListen: "127.0.0.1:0"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Updates != 4 || !res.LedgerOK {
		t.Fatalf("result %+v", res)
	}
	s, err := ledger.Open(dir, ledger.Options{ReadOnly: true, MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := 0
	if err := s.Entries(func(e ledger.Entry) error {
		if e.Kind == ledger.KindRelease && (e.Correlation == nil || e.Correlation.Band != 3 || e.Correlation.StreamStart != 1) {
			t.Errorf("release %d: correlation %+v", e.PolicyVersion, e.Correlation)
		}
		n++
		return nil
	}); err != nil || n != 4 {
		t.Fatalf("%d entries, %v", n, err)
	}
	if ns, err := s.NoiseState(); err != nil || ns.Version != 4 || len(ns.X) != 2 {
		t.Fatalf("noise state version %d, %d vectors, %v", ns.Version, len(ns.X), err)
	}
	for _, bad := range []Config{{Noise: "independent", Band: 3}, {Noise: "tree"}} {
		c := demoConfig()
		c.Noise, c.Band = bad.Noise, bad.Band
		prof, _ := profile.Get(c.Env)
		if _, err := c.AgentConfig(prof); err == nil {
			t.Errorf("noise %q band %d accepted", bad.Noise, bad.Band)
		}
	}
}

// TestValidateUserEpsilonWithoutZ: with --user-epsilon and no --z (Z 0),
// z is derived from the per-user epsilon, so Run must not reject Z 0 (it
// did: dprl demo --user-epsilon E failed with "the demo is private"); Z 0
// without a user epsilon and a negative K are still refused, and K 0 takes
// the profile's.
func TestValidateUserEpsilonWithoutZ(t *testing.T) {
	cfg := demoConfig()
	cfg.Z, cfg.UserEpsilon = 0, 1
	if err := cfg.Validate(); err != nil {
		t.Fatalf("user epsilon without z: %v", err)
	}
	cfg.UserEpsilon = 0
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "Z") {
		t.Errorf("z 0 without a user epsilon: %v", err)
	}
	cfg = demoConfig()
	cfg.K = -1
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "K") {
		t.Errorf("K -1: %v", err)
	}
	cfg.K = 0
	prof, err := profile.Get("bandit")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Env = "bandit"
	ac, err := cfg.AgentConfig(prof)
	if err != nil || ac.Policy.DP.UsersPerUpdate != prof.Learner.DP.UsersPerUpdate {
		t.Errorf("K 0: %d, %v; want the profile's %d", ac.Policy.DP.UsersPerUpdate, err, prof.Learner.DP.UsersPerUpdate)
	}
}

// TestProgressEpsilonRoundedUp: the progress line's epsilon is rounded up,
// never to nearest (a %.3g of 4.3718 would print 4.37, below the bound).
func TestProgressEpsilonRoundedUp(t *testing.T) {
	for _, c := range []struct{ eps, want float64 }{{4.37181, 4.372}, {4.999997869, 5}, {0.123401, 0.1235}} {
		var got any
		for _, f := range (Progress{Epsilon: c.eps, MaxUsers: 10}).Report().Fields {
			if f.Key == "epsilon_per_session" {
				got = f.Value
			}
		}
		if got != c.want {
			t.Errorf("epsilon %v: progress field %v, want %v", c.eps, got, c.want)
		}
	}
}

// agentConfigOf is cfg.AgentConfig with cfg.Env's profile; it fails the
// test on an error.
func agentConfigOf(t *testing.T, cfg Config) agent.Config {
	t.Helper()
	prof, err := profile.Get(cfg.Env)
	if err != nil {
		t.Fatal(err)
	}
	ac, err := cfg.AgentConfig(prof)
	if err != nil {
		t.Fatal(err)
	}
	return ac
}

// TestRunAgainWithAnotherZ: a second demo on the data directory of a
// first one, with z = 4 where the first had z = 1, reports the ledger's
// guarantee: per session the worst release recorded (z = 1), per user a
// bound that covers the most-used user's composed epsilon. (Before: the
// summary printed the per-session epsilon and the per-user bound of z = 4
// alone.)
func TestRunAgainWithAnotherZ(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := func(z float64) (Result, agent.Config) {
		t.Helper()
		cfg := demoConfig()
		cfg.Users, cfg.Z, cfg.MaxUpdatesPerUser = 16, z, 3
		ac := agentConfigOf(t, cfg)
		res, err := Run(ctx, service.ServiceConfig{Agent: ac, DataDir: dir, NATS: "embedded", NATSListen: "127.0.0.1:0"}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return res, ac
	}
	first, ac1 := run(1)
	second, ac2 := run(4)
	eps1, _ := ac1.SessionEpsilon()
	eps4, _ := ac2.SessionEpsilon()
	if first.Epsilon != eps1 || first.NextEpsilon != eps1 {
		t.Fatalf("first run: epsilon %v, next %v, want %v", first.Epsilon, first.NextEpsilon, eps1)
	}
	if second.Epsilon != eps1 || second.NextEpsilon != eps4 {
		t.Errorf("second run: epsilon %v, next %v; want the ledger's worst release %v, and %v at z = 4", second.Epsilon, second.NextEpsilon, eps1, eps4)
	}
	if second.UserBound == nil || *second.UserBound < second.UserEpsilon || *second.UserBound < first.UserEpsilon {
		t.Errorf("second run: per-user bound %v below the most-used user's %v (first run's %v)", second.UserBound, second.UserEpsilon, first.UserEpsilon)
	}
	var b strings.Builder
	if err := second.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("(epsilon %.4g, delta %g)-DP per session at worst", accountant.Ceil(eps1, 4), second.Delta); !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
}

// TestResultSaysWhyNoUpdate: a run without an update says why (a demo
// resumed on its data directory printed "64 users, 0 updates" and nothing
// else).
func TestResultSaysWhyNoUpdate(t *testing.T) {
	for _, c := range []struct {
		r    Result
		want string
	}{
		{Result{Users: 64, Version: 40, K: 32, UserCaps: "at most 1 update per user"}, "a demo resumed on it plays the same user ids"},
		{Result{Users: 8, K: 32}, "an update needs K = 32 sessions learned from, and 8 users played"},
	} {
		var b strings.Builder
		if err := c.r.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("%q: want %q", b.String(), c.want)
		}
	}
}

// TestRunCluster runs the demo against a cluster in process (three
// JetStream servers, a learner, two replicas sharing the partitions):
// lockstep users are served by the replicas, the learner releases, and
// the learner's ledger verifies.
func TestRunCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster in process")
	}
	cfg := Config{Env: "cartpole", Users: 64, Concurrency: 4, Pace: PaceLockstep, EvalEvery: 4, EvalEpisodes: 1, Z: 1, K: 8, Seed: 3, Replicas: 2, MaxDuration: 2 * time.Minute}
	p, err := profile.Get("cartpole")
	if err != nil {
		t.Fatal(err)
	}
	ac, err := cfg.AgentConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), service.ServiceConfig{Agent: ac, DataDir: t.TempDir()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Updates < 6 || !res.LedgerOK {
		t.Fatalf("%d users, %d updates, ledger ok %v; want >= 6 updates from 64 users at K = 8", res.Users, res.Updates, res.LedgerOK)
	}
}

// TestDemoLinCB: dprl demo --learner lincb on the bandit learns over NATS
// (scored exactly on held-out users) and refuses an environment without a
// feature clip, a cluster and an unknown learner.
func TestDemoLinCB(t *testing.T) {
	prof, err := profile.Get("bandit")
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Env: "bandit", Users: 3000, Concurrency: 8, Seed: 3, Pace: PaceLockstep, EvalEvery: 1000, EvalEpisodes: 1,
		UserEpsilon: 1, MaxUpdatesPerUser: 1, Learner: "lincb", K: 500}
	ac, err := c.AgentConfig(prof)
	if err != nil {
		t.Fatal(err)
	}
	if ac.LinCB == nil || ac.LinCB.FeatureClip != prof.FeatureClip {
		t.Fatalf("agent config %+v", ac.LinCB)
	}
	res, err := Run(context.Background(), service.ServiceConfig{Agent: ac, DataDir: t.TempDir(), NATS: "embedded", NATSListen: "127.0.0.1:0"}, c)
	if err != nil {
		t.Fatal(err)
	}
	// Blocks of 500, 650, 845 (1,995 users), then 1,005 of the next 1,098,
	// which the demo waits for: the flush releases it.
	if res.SimExact == nil || res.Updates != 4 || !res.LedgerOK {
		t.Fatalf("result %+v", res)
	}
	t.Logf("expected click %.4f after %d updates", res.SimFinalEval.MeanReturn, res.Updates)
	if res.SimFinalEval.MeanReturn < 0.55 {
		t.Errorf("expected click %.4f after 3,000 users, want above the best fixed item's 0.46 by far", res.SimFinalEval.MeanReturn)
	}
	cp, _ := profile.Get("cartpole")
	for _, bad := range []struct {
		c    Config
		p    profile.Profile
		want string
	}{
		{Config{Env: "cartpole", Z: 1, Learner: "lincb"}, cp, "feature clip"},
		{Config{Env: "bandit", Z: 1, Learner: "lincb", Replicas: 2}, prof, "Replicas"},
		{Config{Env: "bandit", Z: 1, Learner: "q"}, prof, `Learner "q"`},
	} {
		if _, err := bad.c.AgentConfig(bad.p); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want an error naming %q", bad.c, err, bad.want)
		}
	}
}
