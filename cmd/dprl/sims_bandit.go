package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"dprl/cmd/dprl/cliflags"
	"dprl/experiment"
	"dprl/experiment/bandit"
)

// banditRuns are the flags dprl sims bandit and dprl bench vw share beside
// their configurations' own: the seeds and --no-demo.
type banditRuns struct {
	seed   uint64
	seeds  int
	noDemo bool
	plot   string
}

func (r *banditRuns) register(fl *pflag.FlagSet) {
	fl.Uint64Var(&r.seed, "seed", 0, "first seed (default: from the OS)")
	fl.IntVar(&r.seeds, "seeds", 5, "runs per learner, seeds --seed, --seed+1, ...")
	fl.BoolVar(&r.noDemo, "no-demo", false, "skip the DP agent over NATS")
	fl.Bool("json", false, "print the result as JSON")
}

// apply sets c's seeds and Demo from the flags.
func (r *banditRuns) apply(cmd *cobra.Command, c *bandit.Config) error {
	if r.seeds < 1 {
		return usagef("--seeds %d: want >= 1", r.seeds)
	}
	c.Seeds = experiment.SeedRange(seedFlag(cmd, "seed", r.seed), r.seeds)
	c.Demo = !r.noDemo
	return nil
}

// newSimsBanditCmd returns "dprl sims bandit": the contextual-bandit
// measurement (package experiment/bandit).
func newSimsBanditCmd(a *app) *cobra.Command {
	var r banditRuns
	c := bandit.Config{UserEpsilons: []float64{1}}
	cmd := &cobra.Command{
		Use:   "bandit [--users N] [--seed S --seeds N] [--user-epsilon 1,5] [--plot F.png] [--json]",
		Short: "Measure the contextual-bandit task: baselines, PPO, DPPG, the linear contextual bandit and the DP agent over NATS, with regret curves",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := r.apply(cmd, &c); err != nil {
				return err
			}
			if err := c.Validate(); err != nil {
				return usageError{err}
			}
			c.Log = func(line string) { fmt.Fprintln(a.stderr, "dprl sims bandit:", line) }
			res, err := bandit.Run(cmd.Context(), c)
			if err == nil && r.plot != "" {
				if err = res.Plot(r.plot); err != nil {
					err = fmt.Errorf("sims bandit: --plot: %w", err)
				}
			}
			return emit(a, res, err)
		},
	}
	cliflags.New(cmd.Flags(), &c)
	r.register(cmd.Flags())
	cmd.Flags().StringVar(&r.plot, "plot", "", "write the regret curves as PNG (or another format by extension) to this file")
	return cmd
}
