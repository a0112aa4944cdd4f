package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"dprl/cmd/dprl/cliflags"
	"dprl/internal/fielderr"
	"dprl/internal/progress"
	"dprl/offline/budget"
)

// newOfflineCmd returns "dprl offline": the offline modes on session logs.
// Each subcommand charges its run to the dataset it reads (budget.Run).
func newOfflineCmd(a *app) *cobra.Command {
	return groupCmd("offline", "Offline modes on session logs, each run charged to the dataset it reads",
		newOfflineGTD2Cmd(a), newOfflineSVTCmd(a), newOfflinePriMORLCmd(a), newOfflineLearnCmd(a), newOfflineOPECmd(a))
}

// offlineBudget holds the flags of the privacy budget every offline run is
// charged against (budget.Flags): the ledger and the cap registered with
// the dataset. The first private run at a unit stores the cap with the
// dataset, later runs use the stored one (budget.Config, budget.Run); a
// refused run is explained by budget.Explain.
type offlineBudget struct {
	budget.Flags
	fl *cliflags.Flags
}

// register adds --ledger, --dataset-epsilon, --dataset-delta and --wait-lock.
func (b *offlineBudget) register(fs *pflag.FlagSet) {
	b.fl = cliflags.New(fs, &b.Flags)
	b.fl.StringVar(&b.Ledger, "ledger", "", "ledger directory the run is charged to (default "+budget.DefaultLedger()+"; an agent's --data directory works too)")
}

// offlineFlags are the flags of an offline command: those filling cfg,
// its mechanism's configuration, --plot and the budget's.
type offlineFlags[C any] struct {
	cfg    C
	fl     *cliflags.Flags
	plot   string
	budget offlineBudget
}

// register makes c's flags fill f.cfg and the structs more points to, and
// adds the budget's.
func (f *offlineFlags[C]) register(c *cobra.Command, more ...any) *cliflags.Flags {
	f.fl = cliflags.New(c.Flags(), append([]any{&f.cfg}, more...)...)
	f.budget.register(c.Flags())
	return f.fl
}

// config is the budget.Config of a run charged as the flags say; private
// false gives an uncharged run (no ledger is opened).
func (b *offlineBudget) config(a *app, private bool) (budget.Config, error) {
	c, err := b.Config(b.fl.FieldChanged, private, a.log)
	if ce := (*budget.CapError)(nil); errors.As(err, &ce) {
		return c, usagef("--dataset-%s %v: want %s", ce.Component, ce.Value, ce.Want)
	}
	return c, err
}

// fieldUsage makes an error naming a configuration's fields (a
// *fielderr.Error) a usage error naming their flags (fl; a field of no
// flag keeps its name); any other error is returned prefixed with the
// command's name, if any.
func fieldUsage(cmd string, fl *cliflags.Flags, err error) error {
	if ce := (*fielderr.Error)(nil); errors.As(err, &ce) {
		return usageError{fl.Rename(err)}
	} else if cmd == "" {
		return err
	}
	return fmt.Errorf("%s: %w", cmd, err)
}

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
