package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"dprl/experiment"
	"dprl/experiment/bandit"
)

// newSimsBanditCmd returns "dprl sims bandit": the contextual-bandit
// measurement (package experiment/bandit).
func newSimsBanditCmd(a *app) *cobra.Command {
	var (
		c      bandit.Config
		seed   uint64
		seeds  int
		plot   string
		noDemo bool
	)
	cmd := &cobra.Command{
		Use:   "bandit [--users N] [--seed S --seeds N] [--user-epsilon 1,5] [--plot F.png] [--json]",
		Short: "Measure the contextual-bandit task: baselines, PPO, DPPG and the DP agent over NATS, with regret curves",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if seeds < 1 {
				return usagef("--seeds %d: want >= 1", seeds)
			}
			c.Seeds = experiment.SeedRange(seedFlag(cmd, "seed", seed), seeds)
			c.Demo = !noDemo
			if err := c.Validate(); err != nil {
				return usageError{err}
			}
			c.Log = func(line string) { fmt.Fprintln(a.stderr, "dprl sims bandit:", line) }
			res, err := bandit.Run(cmd.Context(), c)
			if err == nil && plot != "" {
				if err = res.Plot(plot); err != nil {
					err = fmt.Errorf("sims bandit: --plot: %w", err)
				}
			}
			return emit(a, res, err)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&c.Users, "users", 50000, "simulated users (one session each) per run")
	fl.Uint64Var(&seed, "seed", 0, "first seed (default: from the OS)")
	fl.IntVar(&seeds, "seeds", 5, "runs per learner, seeds --seed, --seed+1, ...")
	fl.Float64SliceVar(&c.UserEpsilons, "user-epsilon", []float64{1}, "user-level epsilons of the private learners at delta 1e-5 (comma-separated)")
	fl.IntVar(&c.HeldOut, "held-out", 20000, "held-out users of the exact evaluation of every policy version")
	fl.IntVar(&c.BaselineUsers, "baseline-users", 1000000, "users averaged over for the reference policies")
	fl.IntVar(&c.Workers, "workers", 0, "goroutines of the in-process local updates (default GOMAXPROCS; the result does not depend on it)")
	fl.BoolVar(&noDemo, "no-demo", false, "skip the DP agent over NATS")
	fl.StringVar(&plot, "plot", "", "write the regret curves as PNG (or another format by extension) to this file")
	fl.Bool("json", false, "print the result as JSON")
	return cmd
}
