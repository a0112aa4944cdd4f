package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"dprl/ledger"
	"dprl/offline/budget"
)

// newOfflineCmd returns "dprl offline": the offline modes on session logs.
// Each subcommand charges its run to the dataset it reads (budget.Run).
func newOfflineCmd(a *app) *cobra.Command {
	return groupCmd("offline", "Offline modes on session logs, each run charged to the dataset it reads",
		newOfflineGTD2Cmd(a), newOfflineSVTCmd(a))
}

// offlineBudget holds the flags of the privacy budget every offline run is
// charged against: the ledger it writes to and the cap registered with the
// dataset. The protocol itself (scan and identify the dataset, refuse over
// the cap, validate the whole input, charge synced, then compute) is
// budget.Run, which every offline subcommand goes through; this type only
// turns the flags into a budget.Config and explains a refused run.
//
// The cap: the first private run at a unit stores --dataset-epsilon and
// --dataset-delta (default 10 at 1e-5) with the dataset; later runs use the
// stored cap, and a run giving a different one is refused. Only
// "dprl ledger set-cap" changes a stored cap, with a logged, hash-chained
// entry.
type offlineBudget struct {
	ledgerDir string
	capEps    float64
	capDelta  float64
	flags     *pflag.FlagSet
}

// defaultOfflineLedger is where offline runs are charged when --ledger is not
// given: $XDG_DATA_HOME/dprl/offline-ledger, else
// ~/.local/share/dprl/offline-ledger.
func defaultOfflineLedger() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "dprl", "offline-ledger")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "dprl", "offline-ledger")
	}
	return filepath.Join(os.TempDir(), "dprl-offline-ledger")
}

// register adds --ledger, --dataset-epsilon and --dataset-delta.
func (b *offlineBudget) register(fl *pflag.FlagSet) {
	b.flags = fl
	fl.StringVar(&b.ledgerDir, "ledger", "", "ledger directory the run is charged to (default "+defaultOfflineLedger()+"; an agent's --data directory works too)")
	fl.Float64Var(&b.capEps, "dataset-epsilon", 10, "the dataset's privacy budget at this run's unit, stored with the dataset by its first private run at that unit; later runs use the stored cap, a different value is refused (change it with dprl ledger set-cap)")
	fl.Float64Var(&b.capDelta, "dataset-delta", 1e-5, "delta of the dataset's budget at this run's unit (RDP accountant), stored like --dataset-epsilon")
}

// changed reports whether a flag was given on the command line.
func (b *offlineBudget) changed(name string) bool { return b.flags != nil && b.flags.Changed(name) }

// cap returns the cap given by the flags, checked.
func (b *offlineBudget) cap() (ledger.Cap, error) {
	if !(b.capEps > 0) || math.IsInf(b.capEps, 0) {
		return ledger.Cap{}, usagef("--dataset-epsilon %v: want > 0", b.capEps)
	}
	if !(b.capDelta > 0 && b.capDelta < 1) {
		return ledger.Cap{}, usagef("--dataset-delta %v: want in (0, 1)", b.capDelta)
	}
	return ledger.Cap{Epsilon: b.capEps, Delta: b.capDelta}, nil
}

// config is the budget.Config of a run charged as the flags say; private
// false gives an uncharged run (no ledger is opened).
func (b *offlineBudget) config(a *app, private bool) (budget.Config, error) {
	if !private {
		return budget.Config{Uncharged: true, Logger: a.log}, nil
	}
	c, err := b.cap()
	if err != nil {
		return budget.Config{}, err
	}
	dir := b.ledgerDir
	if dir == "" {
		dir = defaultOfflineLedger()
	}
	return budget.Config{Ledger: dir, Cap: c, EpsilonGiven: b.changed("dataset-epsilon"), DeltaGiven: b.changed("dataset-delta"), Logger: a.log}, nil
}

// explain adds to a refused run's error how the cap is changed. It names
// the file the user gave, not the dataset's id (a function of the data).
// Other errors are returned as they are.
func (b *offlineBudget) explain(err error) error {
	var r *budget.Refusal
	if !errors.As(err, &r) {
		return err
	}
	setCap := fmt.Sprintf("dprl ledger set-cap --data %s --file %s --unit %s --epsilon E --delta D --reason TEXT", r.Ledger, r.Path, r.Unit)
	switch {
	case errors.Is(err, ledger.ErrBudgetExceeded):
		if r.FirstRun {
			return fmt.Errorf("%w (this is the dataset's first run at unit %s: the cap is --dataset-epsilon %g at --dataset-delta %g, which the run would store with the dataset)", err, r.Unit, b.capEps, b.capDelta)
		}
		return fmt.Errorf("%w (the cap is stored with the dataset; raise it only if the dataset's owner agreed: %s)", err, setCap)
	case errors.Is(err, ledger.ErrCapMismatch):
		return fmt.Errorf("%w; leave out --dataset-epsilon/--dataset-delta to use it, or change it with %s", err, setCap)
	}
	return err
}

// commandContext is the command's context, or the background context.
func commandContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
