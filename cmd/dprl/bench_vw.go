package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"dprl/cmd/dprl/cliflags"
	"dprl/experiment/bandit"
	"dprl/experiment/vw"
)

// newBenchVWCmd returns "dprl bench vw": Vowpal Wabbit as a peer learner
// and server on the contextual bandit, beside dprl's learners on the same
// seeds (package experiment/vw).
func newBenchVWCmd(a *app) *cobra.Command {
	var (
		r        banditRuns
		learners []string
		fl       *cliflags.Flags
	)
	c := vw.Config{Bandit: bandit.Config{UserEpsilons: []float64{1, 5}}}
	cmd := &cobra.Command{
		Use:   "vw --vw PATH [--users N] [--seed S --seeds N] [--user-epsilon 1,5] [--learner ARGS]... [--serve D] [--plot F.png] [--json]",
		Short: "Vowpal Wabbit's contextual-bandit learners and daemon beside dprl's (PPO, DPPG, the linear contextual bandit, the DP agent) on the bandit, same seeds and users",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := r.apply(cmd, &c.Bandit); err != nil {
				return err
			}
			var err error
			if c.Learners, err = vw.ParseLearners(learners); err != nil {
				return fieldUsage("", fl, err)
			}
			if err := c.Validate(); err != nil {
				return usageError{err}
			}
			c.Logger = a.log
			c.Log = func(line string) { fmt.Fprintln(a.stderr, "dprl bench vw:", line) }
			res, err := vw.Run(cmd.Context(), c)
			if err == nil && r.plot != "" {
				if err = res.Plot(r.plot); err != nil {
					err = fmt.Errorf("bench vw: --plot: %w", err)
				}
			}
			return emit(a, res, err)
		},
	}
	fl = cliflags.New(cmd.Flags(), &c)
	fl.Name("Learners", "learner")
	r.register(cmd.Flags())
	cmd.Flags().StringArrayVar(&learners, "learner", []string{"--squarecb -q UA", "--epsilon 0.05 -q UA"}, "VW's arguments after --cb_explore_adf for one learner (repeat for more)")
	cmd.Flags().StringVar(&r.plot, "plot", "", "write the regret curves of every learner as PNG (or another format by extension) to this file")
	_ = cmd.MarkFlagRequired("vw")
	return cmd
}
