package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"dprl/agent"
	"dprl/ledger"
	"dprl/policy"
	"dprl/profile"
	"dprl/sims"
	"dprl/stream"

	"github.com/spf13/cobra"
)

// demoResult is the summary of dprl demo. Fields named sim_* are
// simulation-only: measured in the demo process on the public simulator or
// from the simulated users' own sessions, never served by the agent.
type demoResult struct {
	Env          string  `json:"env"`
	Users        int64   `json:"users"`
	TargetReturn float64 `json:"target_return,omitempty"`
	Updates      int64   `json:"updates"`
	Version      uint64  `json:"version"`
	// SimEval are the stopping rule's evaluations of released policy
	// versions on fresh episodes of the simulator (post-processing of DP
	// releases), in order; SimFinalEval is the final version's.
	SimEval      []demoEval `json:"sim_eval"`
	SimFinalEval demoEval   `json:"sim_final_eval"`
	EvalEpisodes int        `json:"eval_episodes"`
	// SimUsersMeanReturn is the mean return of the simulated users' last
	// (at most 100) sessions, measured by the users themselves.
	SimUsersMeanReturn float64 `json:"sim_users_mean_return"`
	SimUsersSessions   int     `json:"sim_users_sessions"`
	Epsilon            float64 `json:"epsilon"`
	Delta              float64 `json:"delta"`
	Z                  float64 `json:"z"`
	K                  int     `json:"k"`
	ActP50Ms           float64 `json:"act_p50_ms"`
	ActP99Ms           float64 `json:"act_p99_ms"`
	Seconds            float64 `json:"seconds"`
	DataDir            string  `json:"data_dir"`
	LedgerOK           bool    `json:"ledger_ok"`
	// UserMaxUpdates and UserEpsilon are the most-used user's number of
	// updates and composed epsilon at Delta (from the ledger): with
	// returning users and no per-user cap, the per-user guarantee is this,
	// not the per-session one.
	UserMaxUpdates int     `json:"user_max_updates"`
	UserEpsilon    float64 `json:"user_epsilon"`
	NATSURL        string  `json:"nats_url"`
	ActsPerSec     float64 `json:"acts_per_second"`
	ReturningPct   float64 `json:"returning"`
}

// demoEval is one simulation-only evaluation of a released policy version.
type demoEval struct {
	Version    uint64  `json:"version"`
	MeanReturn float64 `json:"mean_return"`
}

// demoOptions are the settings of runDemo.
type demoOptions struct {
	env                string
	users, concurrency int
	returning          float64
	seed               uint64
	lockstep           bool
	// target, evalEvery, evalEpisodes: the stopping rule (see evaluator).
	target                  float64
	evalEvery, evalEpisodes int
}

func newDemoCmd(a *app) *cobra.Command {
	var (
		env, data, logSessions  string
		users, k, concurrency   int
		evalEvery, evalEpisodes int
		z, returning            float64
		seed                    uint64
		asJSON                  bool
		pace                    string
		clip, lr, target        float64
		maxDuration             time.Duration
	)
	c := &cobra.Command{
		Use:   "demo [--env cartpole] [--users N] [--z Z] [--K K]",
		Short: "Embedded NATS + the DP agent + simulated users, end to end in one process",
		Long: `Starts an embedded NATS server on a loopback port, the DP agent with a fresh
ledger, and simulated users that play the environment through the real NATS
client (wire protocol v1), concurrently. Every K finished sessions the agent
releases a DP-PPO update.

Every --eval-every releases the demo reads the released policy from the
ledger and evaluates it on --eval-episodes fresh episodes of the simulator, in
its own process (simulation-only: post-processing of a DP release, which
needs a simulator that a production deployment does not have); it stops
admitting users once that evaluation reaches --target-return, or after
--users sessions. Nothing the agent serves about its sessions is read: the
number of releases, and so the final policy, depends only on released
policies and public settings.

A progress line shows users, releases, the last evaluation, the
per-session epsilon and the act latency p99 seen by the clients; the run ends
with a summary, a ledger verification and the data directory, which dprl
ledger show|verify can read afterwards. The simulated users' own mean return
over their last 100 sessions is printed too, labelled simulation-only: the
users measure it themselves; the agent serves no statistic of sessions.`,
		Example: `  dprl demo
  dprl demo --env cartpole --users 3000 --z 1 --K 8 --json`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if users < 1 || concurrency < 1 {
				return usagef("--users and --concurrency must be >= 1")
			}
			if evalEvery < 1 || evalEpisodes < 1 {
				return usagef("--eval-every and --eval-episodes must be >= 1")
			}
			if pace != "lockstep" && pace != "free" {
				return usagef("--pace %q: want lockstep or free", pace)
			}
			if returning < 0 || returning >= 1 {
				return usagef("--returning %v: want 0 <= p < 1", returning)
			}
			prof, err := profile.Get(env)
			if err != nil {
				return usageError{err}
			}
			spec, pc := prof.Spec, prof.Learner
			if z <= 0 {
				return usagef("--z %v: the demo is private, want z > 0", z)
			}
			pc.DP.NoiseMultiplier = z
			if clip > 0 {
				pc.DP.ClipNorm = clip
			}
			if lr > 0 {
				pc.PPO.ServerLR = lr
			}
			pc.DP.UsersPerUpdate = k
			if data == "" {
				if data, err = os.MkdirTemp("", "dprl-demo-"); err != nil {
					return err
				}
			}
			ac := agent.DefaultConfig(spec, pc)
			ac.RewardLow, ac.RewardHigh = prof.RewardLow, prof.RewardHigh
			ac.Seed = seed
			ac.FlushTimeout = 2 * time.Second
			if err := ac.Validate(); err != nil {
				return usageError{err}
			}
			eps, err := accountantEpsilon(z, ac.Delta)
			if err != nil {
				return usageError{err}
			}
			fmt.Fprintf(a.stderr, "dprl demo: %s, %d users, K = %d, z = %g: per-session epsilon %.4g at delta %g (analytic Gaussian); data in %s\n",
				env, users, k, z, eps, ac.Delta, data)
			ctx, cancel := context.WithTimeout(c.Context(), maxDuration)
			defer cancel()
			svc, err := agent.StartService(ctx, agent.ServiceConfig{Agent: ac, DataDir: data, NATS: "embedded", NATSListen: "127.0.0.1:0", SessionLogDir: logSessions, Logger: a.log})
			if err != nil {
				return err
			}
			if !c.Flags().Changed("target-return") && prof.DemoTargetReturn > 0 {
				target = prof.DemoTargetReturn
			}
			res, runErr := runDemo(ctx, a, svc, ac, demoOptions{env: env, users: users, concurrency: concurrency, returning: returning, seed: seed,
				lockstep: pace == "lockstep", target: target, evalEvery: evalEvery, evalEpisodes: evalEpisodes})
			closeErr := svc.Close()
			if runErr != nil {
				return runErr
			}
			if closeErr != nil {
				return closeErr
			}
			res.Epsilon, res.Delta, res.Z, res.K, res.DataDir = eps, ac.Delta, z, k, data
			if err := verifyLedger(a, data, &res); err != nil {
				return err
			}
			return emit(a.stdout, asJSON, res, func(w io.Writer) error {
				fmt.Fprintf(w, "%d users, %d updates (policy version %d) in %.1f s\n", res.Users, res.Updates, res.Version, res.Seconds)
				fmt.Fprintf(w, "privacy: each release (epsilon %.4g, delta %g)-DP per session, analytic Gaussian, z = %g, K = %d\n",
					res.Epsilon, res.Delta, res.Z, res.K)
				fmt.Fprintf(w, "privacy per user: the most-used user took part in %d updates: epsilon %.4g at delta %g (composition; the demo sets no per-user cap, dprl agent --max-updates-per-user does)\n",
					res.UserMaxUpdates, res.UserEpsilon, res.Delta)
				fmt.Fprintf(w, "simulation only: released policy version %d returns %.1f on average over %d fresh simulator episodes (post-processing of the release)\n",
					res.SimFinalEval.Version, res.SimFinalEval.MeanReturn, res.EvalEpisodes)
				fmt.Fprintf(w, "simulation only: the simulated users' own mean return over their last %d sessions %.1f (measured by the users, not served by the agent)\n",
					res.SimUsersSessions, res.SimUsersMeanReturn)
				fmt.Fprintf(w, "act latency seen by clients over NATS: p50 %.3f ms, p99 %.3f ms (%.0f acts/s)\n", res.ActP50Ms, res.ActP99Ms, res.ActsPerSec)
				ok := "verified"
				if !res.LedgerOK {
					ok = "FAILED verification"
				}
				_, err := fmt.Fprintf(w, "ledger %s; data directory %s (try: dprl ledger show --data %s)\n", ok, res.DataDir, res.DataDir)
				return err
			})
		},
	}
	fl := c.Flags()
	fl.StringVar(&env, "env", "cartpole", "environment the simulated users play (see dprl sims list)")
	fl.IntVar(&users, "users", 20000, "maximum number of simulated user sessions")
	fl.Float64Var(&target, "target-return", 0, "stop admitting users once a released policy's mean return on --eval-episodes fresh simulator episodes reaches this (simulation-only; default 475 for cartpole; 0: run all users)")
	fl.IntVar(&evalEvery, "eval-every", 4, "evaluate every this many releases (simulation-only)")
	fl.IntVar(&evalEpisodes, "eval-episodes", 10, "simulator episodes per evaluation of a released policy")
	fl.IntVar(&concurrency, "concurrency", 16, "users playing at the same time")
	fl.Float64Var(&z, "z", 1.0, "noise multiplier z")
	fl.IntVar(&k, "K", 32, "sessions per update K")
	fl.Float64Var(&clip, "clip", 0, "clipping norm S of a local update (default: the environment profile's)")
	fl.Float64Var(&lr, "lr", 0, "server step size eta (default: the environment profile's)")
	fl.Float64Var(&returning, "returning", 0.1, "probability that a session comes from a returning user")
	fl.StringVar(&data, "data", "", "data directory (default: a new temporary directory)")
	fl.StringVar(&logSessions, "log-sessions", "", "write every closed session to rotating dprl.sessions.v1 files in this directory (as dprl agent --log-sessions), for the offline modes")
	fl.Uint64Var(&seed, "seed", 0, "seed the users, the evaluations and the agent (the ledger records a seeded run); 0: secure")
	fl.DurationVar(&maxDuration, "max-duration", 10*time.Minute, "stop the demo after this long")
	fl.BoolVar(&asJSON, "json", false, "print the summary as one JSON object")
	fl.StringVar(&pace, "pace", "lockstep", "lockstep: users arrive as fast as the learner consumes them (K per release); free: as fast as they can play (most sessions then go stale and are not learned from)")
	return c
}

// evaluator is the demo's stopping rule. It reads released policy versions
// from the ledger and evaluates them in-process on fresh episodes of the
// public simulator, with a generator derived from the demo's seed and the
// version only: a function of DP releases and public settings
// (post-processing), never of anything the agent serves about its
// sessions. It is simulation-only: production has no simulator.
type evaluator struct {
	store    *ledger.Store
	spec     policy.Spec
	cfg      policy.Config
	env      string
	master   uint64
	every    int
	episodes int
	target   float64

	mu      sync.Mutex
	last    uint64 // last evaluated version (0: none yet)
	history []demoEval
	stopped atomic.Bool
}

// admit is called before a session that will start on version v: every
// `every` versions it evaluates v, and it reports false once a release has
// reached the target (no more users are admitted).
func (e *evaluator) admit(v uint64) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped.Load() {
		return false, nil
	}
	if v >= e.last+uint64(e.every) {
		mean, err := e.evaluate(v)
		if err != nil {
			return false, err
		}
		e.last = v
		e.history = append(e.history, demoEval{Version: v, MeanReturn: mean})
		if e.target > 0 && mean >= e.target {
			e.stopped.Store(true)
		}
	}
	return !e.stopped.Load(), nil
}

// evaluate returns the mean return of released version v over e.episodes
// fresh simulator episodes.
func (e *evaluator) evaluate(v uint64) (float64, error) {
	return evaluateRelease(e.store, e.spec, e.cfg, e.env, v, e.episodes, e.master)
}

// final returns the stopping rule's evaluations and that of the last
// released version v (evaluated now unless it already was).
func (e *evaluator) final(v uint64) ([]demoEval, demoEval, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	h := append([]demoEval(nil), e.history...)
	if n := len(h); n > 0 && h[n-1].Version == v {
		return h, h[n-1], nil
	}
	mean, err := e.evaluate(v)
	if err != nil {
		return nil, demoEval{}, err
	}
	return h, demoEval{Version: v, MeanReturn: mean}, nil
}

// evaluateRelease reads the snapshot of released version v from the ledger
// and returns its policy's mean undiscounted return over episodes fresh
// episodes of env, drawing from demoEvalRand(master, v).
func evaluateRelease(store *ledger.Store, spec policy.Spec, cfg policy.Config, envName string, v uint64, episodes int, master uint64) (float64, error) {
	b, err := store.Snapshot(v)
	if err != nil {
		return 0, fmt.Errorf("demo: evaluate version %d: %w", v, err)
	}
	snap, err := policy.UnmarshalSnapshot(b)
	if err != nil {
		return 0, fmt.Errorf("demo: evaluate version %d: %w", v, err)
	}
	if err := snap.CheckCompatible(spec, cfg.PPO.Hidden); err != nil {
		return 0, fmt.Errorf("demo: evaluate version %d: %w", v, err)
	}
	actor, err := policy.NewActorFor(spec, cfg.PPO)
	if err != nil {
		return 0, err
	}
	env, err := sims.New(envName)
	if err != nil {
		return 0, err
	}
	mean, _ := policy.Evaluate(env, actor, snap.Theta, episodes, demoEvalRand(master, v))
	return mean, nil
}

// demoEvalRand is the generator of the evaluation of version v: disjoint
// from the users' streams (PCG(master, worker+1)).
func demoEvalRand(master, v uint64) *rand.Rand {
	return rand.New(rand.NewPCG(master^0x9e3779b97f4a7c15, v))
}

// simReturns keeps the simulated users' last 100 session returns, as the
// users measured them (simulation-only).
type simReturns struct {
	mu  sync.Mutex
	buf [100]float64
	i   int
	n   int
}

func (r *simReturns) add(x float64) {
	r.mu.Lock()
	r.buf[r.i] = x
	r.i = (r.i + 1) % len(r.buf)
	r.n = min(r.n+1, len(r.buf))
	r.mu.Unlock()
}

func (r *simReturns) mean() (float64, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		return 0, 0
	}
	s := 0.0
	for _, x := range r.buf[:r.n] {
		s += x
	}
	return s / float64(r.n), r.n
}

// latencies keeps the last client-side act latencies.
type latencies struct {
	mu  sync.Mutex
	buf []time.Duration
	i   int
	n   int64
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	if len(l.buf) < 20000 {
		l.buf = append(l.buf, d)
	} else {
		l.buf[l.i] = d
		l.i = (l.i + 1) % len(l.buf)
	}
	l.n++
	l.mu.Unlock()
}

func (l *latencies) quantiles(qs ...float64) []float64 {
	l.mu.Lock()
	s := append([]time.Duration(nil), l.buf...)
	l.mu.Unlock()
	out := make([]float64, len(qs))
	if len(s) == 0 {
		return out
	}
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	for i, q := range qs {
		out[i] = float64(s[min(len(s)-1, int(q*float64(len(s))))].Microseconds()) / 1000
	}
	return out
}

func runDemo(ctx context.Context, a *app, svc *agent.Service, ac agent.Config, o demoOptions) (demoResult, error) {
	start := time.Now()
	if _, err := sims.New(o.env); err != nil {
		return demoResult{}, err
	}
	nc, err := stream.Connect(svc.NATSURL(), stream.WithName("dprl-demo-users"))
	if err != nil {
		return demoResult{}, err
	}
	defer nc.Close()
	client, err := stream.NewClient(nc)
	if err != nil {
		return demoResult{}, err
	}
	// Lockstep pacing and the end of the run wait for releases: the
	// agent's dprl.v1.policy announcement wakes them (no polling).
	rel := newReleaseSignal()
	sub, err := client.WatchPolicy(func(stream.PolicyAnnouncement) { rel.notify() })
	if err != nil {
		return demoResult{}, err
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil { // the server knows the subscription before any release
		return demoResult{}, fmt.Errorf("demo: watch policy: %w", err)
	}
	var (
		admitted atomic.Int64
		lat      latencies
		rets     simReturns
	)
	master := o.seed
	if master == 0 {
		master = rand.Uint64()
	}
	ag := svc.Agent()
	K := ag.K()
	ev := &evaluator{store: svc.Store(), spec: ac.Spec, cfg: ac.Policy, env: o.env, master: master,
		every: o.evalEvery, episodes: o.evalEpisodes, target: o.target}
	pop, err := sims.NewPopulation(sims.PopulationConfig{
		NewEnv:     func() sims.Env { e, _ := sims.New(o.env); return e }, // checked above
		Sessions:   o.users,
		Workers:    o.concurrency,
		ReturnProb: o.returning,
		Seed:       master,
		Prefix:     "demo",
		Admit: func(ctx context.Context, i int) (bool, error) {
			v := ag.Version()
			if o.lockstep {
				// Admit session i once the policy it will train has been
				// released: the sessions of update b all start on version b.
				b := uint64(i / K)
				if err := rel.wait(ctx, func() bool { return ag.Version() >= b }); err != nil {
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
		return demoResult{}, err
	}
	stopProgress := startProgress(a, func() string {
		st := ag.Stats()
		p := lat.quantiles(0.99)
		evs := "-"
		ev.mu.Lock()
		if n := len(ev.history); n > 0 {
			evs = fmt.Sprintf("%.1f (v%d)", ev.history[n-1].MeanReturn, ev.history[n-1].Version)
		}
		ev.mu.Unlock()
		return fmt.Sprintf("users %d/%d  releases %d  eval return %s [simulation-only]  epsilon %.3g/session  act p99 %.2f ms",
			admitted.Load(), o.users, st.Updates, evs, st.Epsilon, p[0])
	})
	runErr := pop.Run(ctx, natsUsers{c: client, lat: &lat}, func(r sims.SessionResult) { rets.add(r.Return) })
	// Let the updater take the last full batch (a partial one is flushed
	// after the flush timeout, or left): wait for its release, at most 3 s.
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
	_ = rel.wait(wctx, func() bool { return ag.Stats().Updates >= admitted.Load()/int64(K) })
	wcancel()
	stopProgress()
	if runErr != nil && !errors.Is(runErr, context.DeadlineExceeded) {
		return demoResult{}, runErr
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return demoResult{}, err
	}
	st := ag.Stats()
	evals, final, err := ev.final(st.Version)
	if err != nil {
		return demoResult{}, err
	}
	q := lat.quantiles(0.5, 0.99)
	secs := time.Since(start).Seconds()
	simMean, simN := rets.mean()
	return demoResult{TargetReturn: o.target, Env: o.env, Users: admitted.Load(), Updates: st.Updates, Version: st.Version,
		SimEval: evals, SimFinalEval: final, EvalEpisodes: o.evalEpisodes, SimUsersMeanReturn: simMean, SimUsersSessions: simN,
		ActP50Ms: q[0], ActP99Ms: q[1], Seconds: secs, NATSURL: svc.NATSURL(),
		ActsPerSec: float64(lat.n) / secs, ReturningPct: o.returning}, nil
}

// natsUsers is the sims.Agent of simulated users: the agent's NATS client
// (wire protocol v1), timing every act as the client sees it.
type natsUsers struct {
	c   *stream.Client
	lat *latencies
}

// Act asks the agent for the action of one step and records its latency.
func (u natsUsers) Act(ctx context.Context, session, user string, obs []float64, reward float64, first bool) (sims.Action, error) {
	t0 := time.Now()
	act, err := u.c.Act(ctx, session, user, obs, reward, first)
	if err != nil {
		return act, err
	}
	u.lat.add(time.Since(t0))
	return act, nil
}

// End closes the session. It names no user: every session of a
// Population is opened and ended on the one connection of u.c, from which
// the agent accepts that.
func (u natsUsers) End(ctx context.Context, session string, reward float64, terminal bool) error {
	return u.c.End(ctx, session, reward, terminal)
}

// releaseSignal wakes waiters at every policy release announcement.
type releaseSignal struct {
	mu sync.Mutex
	ch chan struct{} // closed and replaced at each release
}

func newReleaseSignal() *releaseSignal { return &releaseSignal{ch: make(chan struct{})} }

// notify wakes every current waiter.
func (r *releaseSignal) notify() {
	r.mu.Lock()
	close(r.ch)
	r.ch = make(chan struct{})
	r.mu.Unlock()
}

// wait blocks until cond holds, checking it at every release, or until
// ctx is done (then it returns ctx.Err()).
func (r *releaseSignal) wait(ctx context.Context, cond func() bool) error {
	for {
		r.mu.Lock()
		ch := r.ch // taken before cond: a release after the check still wakes us
		r.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// startProgress prints a live line on a terminal (stderr) or a log line
// every few seconds otherwise; it returns a stop function.
func startProgress(a *app, line func() string) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	tty := isTerminal(a.stderr)
	go func() {
		defer wg.Done()
		period := 5 * time.Second
		if tty {
			period = 500 * time.Millisecond
		}
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				if tty {
					fmt.Fprintf(a.stderr, "\r\033[K%s\n", line())
				}
				return
			case <-t.C:
				if tty {
					fmt.Fprintf(a.stderr, "\r\033[K%s", line())
				} else {
					a.log.Info().Msg(line())
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// verifyLedger reopens the finished run's ledger read-only and verifies it.
func verifyLedger(a *app, dir string, res *demoResult) error {
	s, err := openLedger(a, dir)
	if err != nil {
		return err
	}
	defer s.Close()
	r, err := s.Verify()
	if err != nil {
		return err
	}
	res.LedgerOK = r.OK()
	if !r.OK() {
		return fmt.Errorf("demo: ledger verification found %d problems: %v", len(r.Problems), r.Problems)
	}
	return s.Users(func(_ ledger.UserKey, u ledger.UserState) error {
		if u.Updates <= res.UserMaxUpdates {
			return nil
		}
		eps, err := u.Epsilon(res.Delta)
		if err != nil {
			return err
		}
		res.UserMaxUpdates, res.UserEpsilon = u.Updates, eps
		return nil
	})
}
