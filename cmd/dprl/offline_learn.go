package main

import (
	"github.com/spf13/cobra"

	"dprl/internal/chart"
	"dprl/internal/progress"
	"dprl/offline/qlearn"
)

func newOfflineLearnCmd(a *app) *cobra.Command {
	f := &offlineFlags[qlearn.LearnConfig]{cfg: qlearn.DefaultLearnConfig()}
	c := &f.cfg
	cmd := &cobra.Command{
		Use:   "learn --algo cql|bcq --env ENV (--data LOG | --stable S --unstable U) --epsilon E --delta D",
		Short: "Learn a discrete-action policy from a session log with expert-level DP-SGD (CQL or BCQ)",
		RunE:  func(cmd *cobra.Command, _ []string) error { return runOfflineLearn(a, cmd, f) },
	}
	fl := f.register(cmd)
	fl.Float64Var(&c.Adam.LR, "lr", c.Adam.LR, "the networks' local Adam learning rate eta")
	fl.Bool("json", false, "print JSON")
	fl.StringVar(&f.plot, "plot", "", "draw the evaluation return against steps (PNG or SVG by extension)")
	return cmd
}

func runOfflineLearn(a *app, cmd *cobra.Command, f *offlineFlags[qlearn.LearnConfig]) error {
	c := f.cfg
	if err := c.Check(f.fl.FieldChanged); err != nil {
		return usagef("offline learn: %w", f.fl.Rename(err))
	}
	c.Seeded = f.fl.Changed("seed")
	if _, err := chart.FormatOf(f.plot); f.plot != "" && err != nil {
		return usagef("offline learn: --plot: %v", err)
	} else if f.plot != "" && c.EvalEvery == 0 {
		return usagef("offline learn: --plot needs --eval-every > 0")
	}
	prog := progress.NewPhases(func(string) *progress.Task { return a.task("offline learn " + string(c.Algo)) }, map[string]string{"": "steps"})
	c.Progress = func(done, total int) { prog.Update("", done, total) }
	m, in, err := qlearn.NewLearn(c)
	if err != nil {
		return fieldUsage("offline learn", f.fl, err)
	}
	// A selective run reads a derived file: the ledger must know its
	// source.
	return runOffline(a, cmd, offlineRun[*qlearn.Result]{name: "offline learn", flags: f.fl, budget: &f.budget,
		private: !c.NonPrivate, derived: c.Unstable != "", in: in, m: m, prog: prog,
		plot: f.plot, draw: (*qlearn.Result).PlotCurve})
}
