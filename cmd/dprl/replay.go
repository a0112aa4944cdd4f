package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"dprl/sims"
	"dprl/stream"

	"github.com/spf13/cobra"
)

// replayResult is the summary of dprl replay.
type replayResult struct {
	Env        string  `json:"env"`
	Users      int64   `json:"users"`
	Acts       int64   `json:"acts"`
	Seconds    float64 `json:"seconds"`
	ActsPerSec float64 `json:"acts_per_second"`
	P50Ms      float64 `json:"act_p50_ms"`
	P99Ms      float64 `json:"act_p99_ms"`
	Errors     int64   `json:"errors"`
	// SimUsersCurve is the simulated users' own mean return per tenth of the
	// run, measured by the users (simulation only: not released by the
	// agent, not covered by its guarantee).
	SimUsersCurve []float64 `json:"sim_users_curve"`
	LastVersion   uint64    `json:"last_version"`
}

func newReplayCmd(a *app) *cobra.Command {
	var (
		url, env, prefix   string
		users, concurrency int
		returning          float64
		seed               uint64
		asJSON             bool
		cflags             natsClientFlags
	)
	c := &cobra.Command{
		Use:   "replay --nats URL --env E --users N [--concurrency C] [--returning P]",
		Short: "Drive simulated users against a running agent over NATS",
		Long: `Plays N simulated user sessions of an environment against any running agent
(wire protocol v1), C at a time, and prints the throughput, the act latency
p50/p99 seen by the clients and, labelled simulation-only, the simulated users'
own learning curve (their mean session return per tenth of the run, measured by
the users: not something the agent releases). With --returning P a session comes from an earlier user with
probability P, which exercises the agent's per-user contribution bounds.`,
		Example: `  dprl replay --nats nats://127.0.0.1:4222 --env cartpole --users 2000 --concurrency 16`,
		Args:    noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if users < 1 || concurrency < 1 {
				return usagef("--users and --concurrency must be >= 1")
			}
			if returning < 0 || returning >= 1 {
				return usagef("--returning %v: want 0 <= p < 1", returning)
			}
			if _, err := sims.New(env); err != nil {
				return usageError{err}
			}
			copts, err := cflags.options()
			if err != nil {
				return err
			}
			nc, err := stream.Connect(url, append([]stream.Option{stream.WithName("dprl-replay")}, copts...)...)
			if err != nil {
				return err
			}
			defer nc.Close()
			client, err := stream.NewClient(nc, stream.WithPrefix(prefix))
			if err != nil {
				return err
			}
			var lastVer atomic.Uint64
			if sub, err := client.WatchPolicy(func(p stream.PolicyAnnouncement) { lastVer.Store(p.Version) }); err == nil {
				defer sub.Unsubscribe()
			}
			master := seed
			if master == 0 {
				master = rand.Uint64()
			}
			var (
				played, errs atomic.Int64
				lat          latencies
				returns      = make([]float64, users)
			)
			pop, err := sims.NewPopulation(sims.PopulationConfig{
				NewEnv:     func() sims.Env { e, _ := sims.New(env); return e }, // checked above
				Sessions:   users,
				Workers:    concurrency,
				ReturnProb: returning,
				Seed:       master,
				Prefix:     fmt.Sprintf("replay-%d", master),
				OnError: func(r sims.SessionResult, err error) error {
					// A failed session is counted and the run goes on.
					played.Add(1)
					errs.Add(1)
					a.log.Warn().Err(err).Str("session", r.Session).Msg("session failed")
					return nil
				},
			})
			if err != nil {
				return err
			}
			start := time.Now()
			ctx := c.Context()
			stop := startProgress(a, func() string {
				p := lat.quantiles(0.99)
				return fmt.Sprintf("users %d/%d  errors %d  policy version %d  act p99 %.2f ms", played.Load(), users, errs.Load(), lastVer.Load(), p[0])
			})
			runErr := pop.Run(ctx, natsUsers{c: client, lat: &lat}, func(r sims.SessionResult) {
				returns[r.Index] = r.Return // serialised with OnError, read after Run
				played.Add(1)
			})
			stop()
			if runErr != nil && ctx.Err() == nil {
				return runErr
			}
			// Interrupted: report the sessions played so far.
			secs := time.Since(start).Seconds()
			q := lat.quantiles(0.5, 0.99)
			res := replayResult{Env: env, Users: played.Load(), Acts: lat.n, Seconds: secs, ActsPerSec: float64(lat.n) / secs,
				P50Ms: q[0], P99Ms: q[1], Errors: errs.Load(), LastVersion: lastVer.Load()}
			for d := 0; d < 10; d++ {
				lo, hi := d*users/10, (d+1)*users/10
				var s float64
				for _, r := range returns[lo:hi] {
					s += r
				}
				res.SimUsersCurve = append(res.SimUsersCurve, s/float64(max(hi-lo, 1)))
			}
			return emit(a.stdout, asJSON, res, func(w io.Writer) error {
				fmt.Fprintf(w, "%d sessions, %d acts in %.1f s: %.0f acts/s, act p50 %.3f ms, p99 %.3f ms, %d errors, policy version %d\n",
					res.Users, res.Acts, res.Seconds, res.ActsPerSec, res.P50Ms, res.P99Ms, res.Errors, res.LastVersion)
				fmt.Fprint(w, "simulation only: the simulated users' own mean return per tenth of the run (measured by the users, not released by the agent):")
				for _, v := range res.SimUsersCurve {
					fmt.Fprintf(w, " %.1f", v)
				}
				_, err := fmt.Fprintln(w)
				return err
			})
		},
	}
	fl := c.Flags()
	fl.StringVar(&url, "nats", "nats://127.0.0.1:4222", "URL of the NATS server the agent listens on")
	fl.StringVar(&prefix, "prefix", stream.DefaultPrefix, "subject prefix")
	fl.StringVar(&env, "env", "cartpole", "environment the users play")
	fl.IntVar(&users, "users", 1000, "number of sessions")
	fl.IntVar(&concurrency, "concurrency", 16, "sessions at the same time")
	fl.Float64Var(&returning, "returning", 0, "probability that a session comes from a returning user")
	fl.Uint64Var(&seed, "seed", 0, "seed of the simulated users (0: random)")
	fl.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	cflags.register(fl)
	return c
}
