package main

import (
	"dprl/internal/progress"
	"dprl/offline/budget"
	"dprl/offline/evaluate"

	"github.com/spf13/cobra"
)

func newOfflineGTD2Cmd(a *app) *cobra.Command {
	f := offlineFlags[evaluate.Config]{cfg: evaluate.Config{Method: evaluate.GPOPE}} // the default of --method
	c := &cobra.Command{
		Use:   "gtd2",
		Short: "Evaluate a target policy on a session log: GPOPE (DP GTD2), DP-LSW, or non-private LSTD",
		RunE:  func(cmd *cobra.Command, _ []string) error { return runOfflineGTD2(a, cmd, &f) },
	}
	fl := f.register(c)
	fl.Name("Curve", "plot")
	fl.StringVar(&f.plot, "plot", "", "gpope: write the MSPBE vs iteration curve as PNG to this file (public moments: --env chain or --eval-data; else only with --non-private)")
	fl.Bool("json", false, "print JSON")
	return c
}

func runOfflineGTD2(a *app, cmd *cobra.Command, f *offlineFlags[evaluate.Config]) error {
	fl, ec := cmd.Flags(), f.cfg
	ec.Curve, ec.Seeded = f.plot != "", fl.Changed("seed")
	ec.EpsilonGiven, ec.DeltaGiven, ec.PublicNGiven, ec.ActionsGiven = fl.Changed("epsilon"), fl.Changed("delta"), fl.Changed("n"), fl.Changed("actions")
	if fl.Changed("interval-level") && ec.IntervalSplits == 0 {
		return usagef("--interval-level is the level of the --interval-splits interval: give --interval-splits B (B >= 2) too")
	}
	prog := a.task("gpope")
	defer prog.Finish()
	total := int64(ec.Iters) * int64(max(1, ec.IntervalSplits)) // every part's steps
	ec.Progress = func(t int) { prog.Update(progress.Report{Done: int64(t), Total: total, Unit: "steps"}) }
	m, opt, err := evaluate.New(ec)
	if err != nil {
		return fieldUsage("", f.fl, err)
	}
	defer m.Close()
	return runOffline(a, cmd, offlineRun[*evaluate.Result]{budget: &f.budget, private: ec.Private(),
		in: budget.Input{Path: ec.Data, Reader: opt}, m: m, flags: f.fl,
		plot: f.plot, draw: func(out *evaluate.Result, p string) error { out.Plot = p; return out.WritePlot(p, ec.Data) }})
}
