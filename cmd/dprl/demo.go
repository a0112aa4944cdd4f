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
	"dprl/sims"
	"dprl/stream"

	"github.com/spf13/cobra"
)

// demoResult is the summary of dprl demo.
type demoResult struct {
	Env          string  `json:"env"`
	Users        int64   `json:"users"`
	TargetReturn float64 `json:"target_return,omitempty"`
	Updates      int64   `json:"updates"`
	Version      uint64  `json:"version"`
	MeanReturn   float64 `json:"mean_return"`
	Epsilon      float64 `json:"epsilon"`
	Delta        float64 `json:"delta"`
	Z            float64 `json:"z"`
	K            int     `json:"k"`
	UsersCapped  int64   `json:"users_capped"`
	ActP50Ms     float64 `json:"act_p50_ms"`
	ActP99Ms     float64 `json:"act_p99_ms"`
	Seconds      float64 `json:"seconds"`
	DataDir      string  `json:"data_dir"`
	LedgerOK     bool    `json:"ledger_ok"`
	NATSURL      string  `json:"nats_url"`
	ActsPerSec   float64 `json:"acts_per_second"`
	ReturningPct float64 `json:"returning"`
}

func newDemoCmd(a *app) *cobra.Command {
	var (
		env, data, logSessions string
		users, k, concurrency  int
		z, returning           float64
		seed                   uint64
		asJSON                 bool
		pace                   string
		clip, lr, target       float64
		maxDuration            time.Duration
	)
	c := &cobra.Command{
		Use:   "demo [--env cartpole] [--users N] [--z Z] [--K K]",
		Short: "Embedded NATS + the DP agent + simulated users, end to end in one process",
		Long: `Starts an embedded NATS server on a loopback port, the DP agent with a fresh
ledger, and simulated users that play the environment through the real NATS
client (wire protocol v1), concurrently. Every K finished sessions the agent
releases a DP-PPO update. A progress line shows users, updates, the mean
return of the last 100 sessions, the per-session epsilon, users at their cap
and the act latency p99 seen by the clients; the run ends with a summary, a
ledger verification and the data directory, which dprl ledger show|verify can
read afterwards.`,
		Example: `  dprl demo
  dprl demo --env cartpole --users 3000 --z 1 --K 8 --json`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if users < 1 || concurrency < 1 {
				return usagef("--users and --concurrency must be >= 1")
			}
			if pace != "lockstep" && pace != "free" {
				return usagef("--pace %q: want lockstep or free", pace)
			}
			if returning < 0 || returning >= 1 {
				return usagef("--returning %v: want 0 <= p < 1", returning)
			}
			spec, pc, err := envProfile(env)
			if err != nil {
				return err
			}
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
			if !c.Flags().Changed("target-return") && env == "cartpole" {
				target = 475
			}
			res, runErr := runDemo(ctx, a, svc, env, users, concurrency, returning, seed, pace == "lockstep", target)
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
				fmt.Fprintf(w, "%d users, %d updates (policy version %d) in %.1f s; mean return of the last 100 sessions %.1f\n",
					res.Users, res.Updates, res.Version, res.Seconds, res.MeanReturn)
				fmt.Fprintf(w, "privacy: each session (epsilon %.4g, delta %g)-DP, analytic Gaussian, z = %g, K = %d; users at their cap: %d\n",
					res.Epsilon, res.Delta, res.Z, res.K, res.UsersCapped)
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
	fl.Float64Var(&target, "target-return", 0, "stop admitting users once the mean return of the last 100 sessions reaches this (default 475 for cartpole; 0: run all users)")
	fl.IntVar(&concurrency, "concurrency", 16, "users playing at the same time")
	fl.Float64Var(&z, "z", 1.0, "noise multiplier z")
	fl.IntVar(&k, "K", 32, "sessions per update K")
	fl.Float64Var(&clip, "clip", 0, "clipping norm S of a local update (default: the environment profile's)")
	fl.Float64Var(&lr, "lr", 0, "server step size eta (default: the environment profile's)")
	fl.Float64Var(&returning, "returning", 0.1, "probability that a session comes from a returning user")
	fl.StringVar(&data, "data", "", "data directory (default: a new temporary directory)")
	fl.StringVar(&logSessions, "log-sessions", "", "write every closed session to rotating dprl.sessions.v1 files in this directory (as dprl agent --log-sessions), for the offline modes")
	fl.Uint64Var(&seed, "seed", 0, "seed the users and the agent (the ledger records a seeded run); 0: secure")
	fl.DurationVar(&maxDuration, "max-duration", 10*time.Minute, "stop the demo after this long")
	fl.BoolVar(&asJSON, "json", false, "print the summary as one JSON object")
	fl.StringVar(&pace, "pace", "lockstep", "lockstep: users arrive as fast as the learner consumes them (K per release); free: as fast as they can play (most sessions then go stale and are not learned from)")
	return c
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

func runDemo(ctx context.Context, a *app, svc *agent.Service, envName string, users, concurrency int, returning float64, seed uint64, lockstep bool, target float64) (demoResult, error) {
	start := time.Now()
	nc, err := stream.Connect(svc.NATSURL(), stream.WithName("dprl-demo-users"))
	if err != nil {
		return demoResult{}, err
	}
	defer nc.Close()
	client, err := stream.NewClient(nc)
	if err != nil {
		return demoResult{}, err
	}
	var (
		next    atomic.Int64
		lat     latencies
		errOnce sync.Once
		runErr  error
		wg      sync.WaitGroup
	)
	master := seed
	if master == 0 {
		master = rand.Uint64()
	}
	ag := svc.Agent()
	stopProgress := startProgress(a, func() string {
		st := ag.Stats()
		p := lat.quantiles(0.99)
		return fmt.Sprintf("users %d/%d  updates %d  mean return %.1f  epsilon %.3g/session  users at cap %d  act p99 %.2f ms",
			next.Load(), users, st.Updates, st.MeanReturn, st.Epsilon, st.UsersCapped, p[0])
	})
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(master, uint64(w)+1))
			env, err := sims.New(envName)
			if err != nil {
				errOnce.Do(func() { runErr = err })
				return
			}
			obs := make([]float64, env.ObservationSpace().Dim())
			for {
				if target > 0 {
					if st := ag.Stats(); st.RecentSessions >= 100 && st.MeanReturn >= target {
						return // learned: stop admitting users
					}
				}
				i := next.Add(1)
				if i > int64(users) || ctx.Err() != nil {
					return
				}
				if lockstep {
					// Admit session i once the policy it will train has been
					// released: the sessions of update b all start on version b.
					b := uint64((i - 1) / int64(ag.K()))
					for ag.Version() < b && ctx.Err() == nil {
						time.Sleep(time.Millisecond)
					}
				}
				user := fmt.Sprintf("user-%d", i)
				if i > 1 && rng.Float64() < returning {
					user = fmt.Sprintf("user-%d", 1+rng.Int64N(i-1))
				}
				if err := playSession(ctx, client, env, rng, obs, fmt.Sprintf("s-%d", i), user, &lat); err != nil {
					errOnce.Do(func() { runErr = err })
					return
				}
			}
		}(w)
	}
	wg.Wait()
	// Let the updater take the last full batch.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) && ag.Stats().Updates < int64(users/svc.Agent().K()) {
		time.Sleep(20 * time.Millisecond)
	}
	stopProgress()
	if runErr != nil {
		return demoResult{}, runErr
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return demoResult{}, err
	}
	st := ag.Stats()
	q := lat.quantiles(0.5, 0.99)
	secs := time.Since(start).Seconds()
	return demoResult{TargetReturn: target, Env: envName, Users: min(next.Load(), int64(users)), Updates: st.Updates, Version: st.Version, MeanReturn: st.MeanReturn,
		UsersCapped: st.UsersCapped, ActP50Ms: q[0], ActP99Ms: q[1], Seconds: secs, NATSURL: svc.NATSURL(),
		ActsPerSec: float64(lat.n) / secs, ReturningPct: returning}, nil
}

// playSession plays one episode through the agent over NATS.
func playSession(ctx context.Context, c *stream.Client, env sims.Env, rng *rand.Rand, obs []float64, session, user string, lat *latencies) error {
	_, err := playSessionReturn(ctx, c, env, rng, obs, session, user, lat)
	return err
}

// playSessionReturn plays one episode and returns its return.
func playSessionReturn(ctx context.Context, c *stream.Client, env sims.Env, rng *rand.Rand, obs []float64, session, user string, lat *latencies) (float64, error) {
	env.Reset(rng, obs)
	var reward, ret float64
	for step := 0; ; step++ {
		t0 := time.Now()
		act, err := c.Act(ctx, session, user, obs, reward, step == 0)
		if err != nil {
			if errors.Is(err, stream.ErrShuttingDown) || ctx.Err() != nil {
				return ret, nil
			}
			return ret, fmt.Errorf("act %s: %w", session, err)
		}
		lat.add(time.Since(t0))
		r, term, trunc := env.Step(act, obs)
		ret += r
		if term || trunc {
			_, err := c.EndDetail(ctx, session, r, term)
			if err != nil && ctx.Err() == nil {
				return ret, fmt.Errorf("end %s: %w", session, err)
			}
			return ret, nil
		}
		reward = r
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
	return nil
}
