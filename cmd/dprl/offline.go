package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"dprl/ledger"
	"dprl/offline"
)

// newOfflineCmd returns "dprl offline": the offline modes on session logs.
// Each subcommand charges its run to the dataset it reads (offlineBudget).
func newOfflineCmd(a *app) *cobra.Command {
	return groupCmd("offline", "Offline modes on session logs, each run charged to the dataset it reads",
		newOfflineGTD2Cmd(a), newOfflineSVTCmd(a))
}

// offlineBudget is the privacy budget every offline run is charged against:
// the ledger it writes to and the dataset's cap. Its flags are shared by the
// offline subcommands.
//
// The protocol, in this order, so that bad input and refused runs cost
// nothing and read no more than the bytes to hash:
//  1. open: hash the dataset file (its ledger id) and open the ledger;
//  2. check: refuse the run if its cost would take the dataset over the cap;
//  3. the caller validates the whole log (and the target, features, experts
//     against it) without computing anything it releases;
//  4. charge: write the run's entry (synced), again refusing above the cap;
//  5. the caller computes and prints the result.
type offlineBudget struct {
	ledgerDir string
	capEps    float64
	capDelta  float64

	store     *ledger.Store
	datasetID string
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
	fl.StringVar(&b.ledgerDir, "ledger", "", "ledger directory the run is charged to (default "+defaultOfflineLedger()+"; an agent's --data directory works too)")
	fl.Float64Var(&b.capEps, "dataset-epsilon", 10, "the dataset's total privacy budget: a run whose composition with the dataset's earlier runs would exceed it is refused before the data is read")
	fl.Float64Var(&b.capDelta, "dataset-delta", 1e-5, "delta at which the dataset's budget is composed (RDP accountant)")
}

// cap returns the dataset cap, checked.
func (b *offlineBudget) cap() (ledger.Cap, error) {
	if !(b.capEps > 0) {
		return ledger.Cap{}, usagef("--dataset-epsilon %v: want > 0", b.capEps)
	}
	if !(b.capDelta > 0 && b.capDelta < 1) {
		return ledger.Cap{}, usagef("--dataset-delta %v: want in (0, 1)", b.capDelta)
	}
	return ledger.Cap{Epsilon: b.capEps, Delta: b.capDelta}, nil
}

// open hashes the dataset at path and opens the ledger. Close it with close.
func (b *offlineBudget) open(a *app, path string) error {
	if _, err := b.cap(); err != nil {
		return err
	}
	id, err := offline.DatasetID(path)
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	dir := b.ledgerDir
	if dir == "" {
		dir = defaultOfflineLedger()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	s, err := ledger.Open(dir, ledger.Options{Logger: a.log})
	if err != nil {
		return fmt.Errorf("ledger %s: %w", dir, err)
	}
	b.store, b.datasetID, b.ledgerDir = s, id, dir
	return nil
}

// check refuses the run when its cost would exceed the dataset's cap; it
// writes nothing.
func (b *offlineBudget) check(e ledger.Entry) error {
	c, err := b.cap()
	if err != nil {
		return err
	}
	if _, err := b.store.CheckOffline(b.datasetID, e, c); err != nil {
		return budgetError(err)
	}
	return nil
}

// charge writes the run's entry (synced) and returns it as written.
func (b *offlineBudget) charge(e ledger.Entry) (ledger.Entry, error) {
	c, err := b.cap()
	if err != nil {
		return ledger.Entry{}, err
	}
	out, err := b.store.ChargeOffline(b.datasetID, e, c)
	if err != nil {
		return ledger.Entry{}, budgetError(err)
	}
	return out, nil
}

// spent returns the dataset's composed epsilon at the cap's delta.
func (b *offlineBudget) spent() (float64, error) {
	d, err := b.store.Dataset(b.datasetID)
	if err != nil {
		return 0, err
	}
	return d.Spent(b.capDelta)
}

// close closes the ledger if it was opened.
func (b *offlineBudget) close() error {
	if b.store == nil {
		return nil
	}
	err := b.store.Close()
	b.store = nil
	return err
}

// budgetError explains a refused run.
func budgetError(err error) error {
	if errors.Is(err, ledger.ErrBudgetExceeded) {
		return fmt.Errorf("%w (raise --dataset-epsilon only if the dataset's owner agreed to a larger budget)", err)
	}
	return err
}
