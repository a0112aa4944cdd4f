package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"dprl/agent/service"
	"dprl/cmd/dprl/cliflags"
	"dprl/experiment/demo"
	"dprl/internal/flagsrc"
	"dprl/internal/progress"
	"dprl/ledger"
	"dprl/ledger/accountant"

	"github.com/spf13/cobra"
)

func newDemoCmd(a *app) *cobra.Command {
	var (
		cfg               demo.Config
		data, logSessions string
		fl                *cliflags.Flags
	)
	c := &cobra.Command{
		Use:   "demo [--env cartpole] [--users N] [--z Z] [--K K]",
		Short: "Embedded NATS + the DP agent + simulated users, end to end in one process",
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cfg.Validate(); err != nil {
				return usageError{fl.Rename(err)}
			}
			cfg, ac, eps, err := cfg.Prepare(fl.FieldChanged)
			if err != nil {
				return usageError{err}
			}
			if data == "" {
				if data, err = os.MkdirTemp("", "dprl-demo-"); err != nil {
					return err
				}
			}
			fmt.Fprintf(a.stderr, "dprl demo: %s, %d users, K = %d, z = %.6g: per-session epsilon %s at delta %g for a release at this z (analytic Gaussian; the summary reads the ledger); data in %s\n",
				cfg.Env, cfg.Users, ac.Policy.DP.UsersPerUpdate, ac.Policy.DP.NoiseMultiplier, accountant.FormatEpsilon(eps), ac.Delta, data)
			cfg.StartProgress = func(p func() demo.Progress) func() {
				return a.task("demo").Every(func() progress.Report { return p().Report() })
			}
			res, err := demo.Run(c.Context(), service.ServiceConfig{Agent: ac, DataDir: data, NATS: "embedded", NATSListen: "127.0.0.1:0", SessionLogDir: logSessions, Logger: a.log}, cfg)
			if errors.Is(err, ledger.ErrNotEmpty) {
				return usagef("--data %s holds files but no ledger (a mistyped path?): give a demo's or an agent's data directory, an empty one, or none for a new temporary one", data)
			}
			return emit(a, res, err)
		},
	}
	fl = cliflags.New(c.Flags(), &cfg)
	fl.StringVar(&cfg.Env, "env", "cartpole", "environment the simulated users play (see dprl sims list)")
	fl.IntVar(&cfg.Users, "users", 20000, "maximum number of simulated user sessions")
	fl.Float64Var(&cfg.Target, "target-return", 0, "stop admitting users once a released policy's mean return on --eval-episodes fresh simulator episodes reaches this (simulation-only; default 475 for cartpole; 0: run all users)")
	fl.IntVar(&cfg.EvalEvery, "eval-every", 4, "evaluate every this many releases (simulation-only)")
	fl.IntVar(&cfg.EvalEpisodes, "eval-episodes", 10, "simulator episodes per evaluation of a released policy (--env bandit: scored exactly on 20,000 held-out users instead)")
	fl.IntVar(&cfg.Concurrency, "concurrency", 16, "users playing at the same time")
	fl.Float64Var(&cfg.Z, "z", 1.0, "noise multiplier z (with --user-epsilon and without --z: derived from it)")
	fl.Float64Var(&cfg.UserEpsilon, "user-epsilon", 0, "per-user epsilon at delta 1e-5, the primary privacy setting as in dprl agent: z is derived so that a user in --max-updates-per-user updates reaches it, and it caps every user")
	fl.StringVar(&cfg.Noise, "noise", "independent", "noise of the releases, as dprl agent: independent, or bandmf (banded square-root correlated noise; a user's updates at least --band apart)")
	fl.IntVar(&cfg.Band, "band", 0, "bands of --noise bandmf, 1 to 4096")
	fl.IntVar(&cfg.MaxUpdatesPerUser, "max-updates-per-user", service.DefaultMaxUpdatesPerUser, "cap on the updates a user takes part in (0: none; returning users beyond it are served, not learned from)")
	fl.IntVar(&cfg.K, "K", 0, "sessions per update K (default: the environment profile's, as dprl agent: 32 for cartpole, 1000 for bandit)")
	fl.Float64Var(&cfg.Clip, "clip", 0, "clipping norm S of a local update (default: the environment profile's)")
	fl.Float64Var(&cfg.LR, "server-lr", 0, "server step size eta of theta <- theta + eta g~, as dprl train --server-lr (default: the environment profile's)")
	flagsrc.Alias(fl.FlagSet, "lr", "server-lr", a.stderr) // --lr is dprl train's local Adam rate
	fl.Float64Var(&cfg.Returning, "returning", 0.1, "probability that a session comes from a returning user")
	fl.StringVar(&data, "data", "", "data directory (default: a new temporary directory)")
	fl.StringVar(&logSessions, "log-sessions", "", "write every closed session to rotating dprl.sessions.v1 files in this directory (as dprl agent --log-sessions), for the offline modes")
	fl.Uint64Var(&cfg.Seed, "seed", 0, "seed the users, the evaluations and the agent (the ledger records a seeded run); 0: secure")
	fl.DurationVar(&cfg.MaxDuration, "max-duration", 10*time.Minute, "stop the demo after this long (0: no limit)")
	fl.IntVar(&cfg.Replicas, "replicas", 0, "run the agent as a cluster in this process instead: three embedded JetStream servers, a learner and this many serving replicas sharing the session partitions (as dprl agent --role; the users play against the replicas, the ledger in --data is the learner's); 0: one agent")
	fl.Bool("json", false, "print the summary as one JSON object")
	fl.StringVar(&cfg.Pace, "pace", demo.PaceLockstep, "lockstep: users arrive as fast as the learner consumes them (K per release); free: as fast as they can play (most sessions then go stale and are not learned from)")
	return c
}
