package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"dprl/cmd/dprl/cliflags"
	"dprl/internal/progress"
	"dprl/offline/budget"
)

// offlineRun is one offline command's run of its mechanism (runOffline):
// name prefixes its errors; cfgErr wraps the budget configuration's errors
// (default: as they are), runErr the run's (default: fieldUsage with the
// flags of the config's fields); prog, if set, is finished right after the
// run; draw writes the result's plot to the file plot, if set.
type offlineRun[R texter] struct {
	name, plot       string
	flags            *cliflags.Flags
	budget           *offlineBudget
	private, derived bool
	in               budget.Input
	m                budget.Mechanism[R]
	prog             *progress.Phases
	draw             func(R, string) error
	cfgErr, runErr   func(error) error
}

// runOffline resolves the run's budget configuration, runs the mechanism
// through budget.Run (refusals explained by budget.Explain), draws its
// plot and prints the result as text or JSON.
func runOffline[R texter](a *app, cmd *cobra.Command, r offlineRun[R]) error {
	if r.cfgErr == nil {
		r.cfgErr = func(err error) error { return err }
	}
	if r.runErr == nil {
		r.runErr = func(err error) error { return fieldUsage(r.name, r.flags, err) }
	}
	cfg, err := r.budget.config(a, r.private)
	if err != nil {
		return r.cfgErr(err)
	}
	cfg.Derived = r.derived
	out, _, err := budget.Run(cmd.Context(), cfg, r.in, r.m)
	if r.prog != nil {
		r.prog.Finish()
	}
	if err != nil {
		return r.runErr(budget.Explain(err))
	}
	if r.plot != "" {
		if err := r.draw(out, r.plot); err != nil {
			return fmt.Errorf("%s: %w", strings.TrimPrefix(r.name+": --plot", ": "), err)
		}
	}
	return emit(a, out, nil)
}
