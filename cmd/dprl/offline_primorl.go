package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"dprl/internal/chart"
	"dprl/internal/progress"
	"dprl/offline/budget"
	"dprl/offline/primorl"
)

// primorlFlags are the flags of "dprl offline primorl".
type primorlFlags struct {
	offlineFlags[primorl.Config]
	args primorl.Args
}

func newOfflinePriMORLCmd(a *app) *cobra.Command {
	f := &primorlFlags{offlineFlags: offlineFlags[primorl.Config]{cfg: primorl.DefaultConfig()}}
	cmd := &cobra.Command{
		Use:   "primorl --data LOG --env pendulum --epsilon E",
		Short: "Learn a policy from a session log with a trajectory-level DP dynamics model (PriMORL)",
		RunE:  func(cmd *cobra.Command, _ []string) error { return runOfflinePriMORL(a, cmd, f) },
	}
	fl := f.register(cmd, &f.args)
	fl.Bool("json", false, "print JSON")
	fl.StringVar(&f.plot, "plot", "", "draw the policy's return on the simulator during its training in the model (PNG or SVG by extension)")
	return cmd
}

func runOfflinePriMORL(a *app, cmd *cobra.Command, f *primorlFlags) error {
	fl := f.fl
	if f.cfg.ModelFile != "" && !fl.FieldChanged("Env") {
		// The model file's environment, and its per-task settings below;
		// a file that does not load is reported by TrainInModel.
		if b, err := os.ReadFile(f.cfg.ModelFile); err == nil {
			if m, err := primorl.LoadModel(b); err == nil {
				f.cfg.Env = m.Env
			}
		}
	}
	// The paper's per-task settings, where the user did not set them.
	c, err := f.cfg.Resolve(f.args, fl.FieldChanged)
	if err != nil {
		return usagef("offline primorl: %w", fl.Rename(err))
	}
	c.Seeded = fl.Changed("seed")
	units := map[string]string{"model": "rounds", "policy": "steps"}
	if c.MOPO {
		units["model"] = "minibatches"
	}
	prog := progress.NewPhases(func(phase string) *progress.Task { return a.task("primorl " + phase) }, units)
	c.Progress = prog.Update
	if _, err := chart.FormatOf(f.plot); f.plot != "" && err != nil {
		return usagef("offline primorl: --plot: %v", err)
	}
	if c.ModelFile != "" {
		// Post-processing of a released model: no log, no ledger.
		res, err := primorl.TrainInModel(cmd.Context(), c)
		prog.Finish()
		if err != nil {
			return fieldUsage("offline primorl", fl, err)
		}
		if f.plot != "" {
			if err := res.PlotCurve(f.plot); err != nil {
				return fmt.Errorf("offline primorl: --plot: %w", err)
			}
		}
		return emit(a, res, nil)
	}
	m, opt, err := primorl.New(c)
	if err != nil {
		return fieldUsage("offline primorl", fl, err)
	}
	return runOffline(a, cmd, offlineRun[*primorl.Result]{name: "offline primorl", flags: fl, budget: &f.budget,
		private: !c.NonPrivate && !c.MOPO, in: budget.Input{Path: c.Data, Reader: opt}, m: m, prog: prog,
		plot: f.plot, draw: (*primorl.Result).PlotCurve})
}
