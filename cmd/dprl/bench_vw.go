package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"dprl/experiment"
	"dprl/experiment/vw"
)

// newBenchVWCmd returns "dprl bench vw": Vowpal Wabbit as a peer learner
// and server on the contextual bandit, beside dprl's learners on the same
// seeds (package experiment/vw).
func newBenchVWCmd(a *app) *cobra.Command {
	var (
		c        vw.Config
		seed     uint64
		seeds    int
		learners []string
		noDemo   bool
		plot     string
	)
	cmd := &cobra.Command{
		Use:   "vw --vw PATH [--users N] [--seed S --seeds N] [--user-epsilon 1,5] [--learner ARGS]... [--serve D] [--plot F.png] [--json]",
		Short: "Vowpal Wabbit's contextual-bandit learners and daemon beside the DP agent and PPO on the bandit, same seeds and users",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if seeds < 1 {
				return usagef("--seeds %d: want >= 1", seeds)
			}
			c.Bandit.Seeds = experiment.SeedRange(seedFlag(cmd, "seed", seed), seeds)
			c.Bandit.Demo = !noDemo
			c.Learners = nil
			for _, l := range learners {
				f := strings.Fields(l)
				if len(f) == 0 {
					return usagef("--learner %q: want VW arguments, such as \"--squarecb -q UA\"", l)
				}
				lr := vw.Learner{Args: f}
				if err := lr.Validate(); err != nil {
					return usagef("--learner %q: %v", l, err)
				}
				c.Learners = append(c.Learners, lr)
			}
			if err := c.Validate(); err != nil {
				return usageError{err}
			}
			c.Logger = a.log
			c.Log = func(line string) { fmt.Fprintln(a.stderr, "dprl bench vw:", line) }
			res, err := vw.Run(cmd.Context(), c)
			if err == nil && plot != "" {
				if err = res.Plot(plot); err != nil {
					err = fmt.Errorf("bench vw: --plot: %w", err)
				}
			}
			return emit(a, res, err)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&c.Bin, "vw", "", "the Vowpal Wabbit binary (vw, 9.x) (required)")
	fl.StringArrayVar(&learners, "learner", []string{"--squarecb -q UA", "--epsilon 0.05 -q UA"}, "VW's arguments after --cb_explore_adf for one learner (repeat for more)")
	fl.IntVar(&c.Bandit.Users, "users", 50000, "simulated users (one session each) per run")
	fl.Uint64Var(&seed, "seed", 0, "first seed (default: from the OS)")
	fl.IntVar(&seeds, "seeds", 5, "runs per learner, seeds --seed, --seed+1, ...")
	fl.Float64SliceVar(&c.Bandit.UserEpsilons, "user-epsilon", []float64{1, 5}, "user-level epsilons of dprl's private learners at delta 1e-5 (comma-separated)")
	fl.IntVar(&c.Bandit.HeldOut, "held-out", 20000, "held-out users of the exact evaluation of every final policy")
	fl.IntVar(&c.Bandit.BaselineUsers, "baseline-users", 1000000, "users averaged over for the reference policies")
	fl.IntVar(&c.Bandit.Workers, "workers", 0, "goroutines of dprl's in-process local updates (default GOMAXPROCS; the result does not depend on it)")
	fl.BoolVar(&noDemo, "no-demo", false, "skip the DP agent over NATS")
	fl.BoolVar(&c.NoDPRL, "no-dprl", false, "skip dprl's learners (VW's rows and the references only)")
	fl.DurationVar(&c.ServeDuration, "serve", 4*time.Second, "time of each side in the serving comparison (the agent's act path vs VW's daemon with the first --learner); 0: skip it")
	fl.IntVar(&c.ServeRounds, "serve-rounds", 4, "alternating rounds of the serving comparison")
	fl.StringVar(&plot, "plot", "", "write the regret curves of every learner as PNG (or another format by extension) to this file")
	fl.Bool("json", false, "print the result as JSON")
	_ = cmd.MarkFlagRequired("vw")
	return cmd
}
