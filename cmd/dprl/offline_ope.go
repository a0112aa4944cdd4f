package main

import (
	"github.com/spf13/cobra"

	"dprl/offline/budget"
	"dprl/offline/ope"
)

func newOfflineOPECmd(a *app) *cobra.Command {
	var f offlineFlags[ope.Config]
	o := &f.cfg
	c := &cobra.Command{
		Use:   "ope --data FILE --target SPEC (--epsilon E --delta D --actions K --weight-bound C | --non-private)",
		Short: "Audit a target policy on a log of one-step decisions: its value with a confidence interval (private, or the non-private report)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Seeded = cmd.Flags().Changed("seed")
			m, in, err := ope.New(*o)
			if err != nil {
				return fieldUsage("", f.fl, err)
			}
			return runOffline(a, cmd, offlineRun[*ope.Result]{name: "offline ope", budget: &f.budget, private: o.Private(),
				in: budget.Input{Path: o.Data, Reader: in}, m: m, flags: f.fl, plot: f.plot, draw: (*ope.Result).Plot})
		},
	}
	fl := f.register(c)
	fl.StringVar(&o.Data, "data", "", "session log (dprl.sessions.v1) of one-step decisions with logged probabilities, the private dataset (a DSJSON log: dprl sessions import-dsjson first)")
	fl.StringVar(&o.Target, "target", "", "target policy: uniform, snapshot:FILE, greedy:FILE, softmax:FILE:TEMP, epsilon-greedy:FILE:EPS")
	fl.IntVar(&o.Actions, "actions", 0, "the public number of actions (required for a private audit)")
	fl.Float64Var(&o.WeightBound, "weight-bound", 0, "public bound c on the importance weights pi/p, e.g. 1 / the logger's smallest probability (required for a private audit; weights above it are clipped)")
	fl.Float64Var(&o.RewardLow, "reward-low", 0, "public lower end of the reward range")
	fl.Float64Var(&o.RewardHigh, "reward-high", 1, "public upper end of the reward range")
	fl.Float64Var(&o.Epsilon, "epsilon", 0, "epsilon of the private audit, per decision")
	fl.Float64Var(&o.Delta, "delta", 0, "delta of the private audit")
	fl.Float64Var(&o.Level, "level", 0.95, "confidence level of the intervals")
	fl.IntVar(&o.Bootstrap, "bootstrap", 1000, "percentile-bootstrap resamples of the non-private report")
	fl.Uint64Var(&o.Seed, "seed", 0, "seed the noise, the folds and the bootstrap (repeatable research runs; recorded in the ledger)")
	fl.BoolVar(&o.NonPrivate, "non-private", false, "add the report NOT covered by any DP guarantee: every estimator and interval, the lower bound and the weight diagnostics of the raw log")
	fl.StringVar(&f.plot, "plot", "", "write the intervals as a figure (PNG, or another format by extension) to this file; with --non-private it shows the non-private estimates too, labelled")
	fl.Bool("json", false, "print JSON")
	return c
}
