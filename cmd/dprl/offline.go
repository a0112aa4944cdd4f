package main

import (
	"errors"
	"fmt"
	"math"
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
// the ledger it writes to, the dataset the run's records belong to, and the
// cap registered with that dataset. Its flags are shared by the offline
// subcommands, and its methods are the one implementation of the protocol
// they follow, in this order, so that bad input and refused runs cost
// nothing and nothing released is computed before the cost is written:
//  1. scan and open: read the log once, streaming, validating every record
//     as it is read and hashing it (the dataset's identity is its records:
//     offline.ScanLog), then open the ledger and find the dataset the
//     records belong to. This reads the data but computes nothing that is
//     released; a malformed log stops at its first bad line, costing
//     nothing. Only the records' hashes and places are kept (44 bytes per
//     record);
//  2. check: refuse the run if its cost would take the dataset over its cap
//     at the run's unit, or if a cap given by flag differs from the stored
//     one;
//  3. the caller validates what the scan could not (the target, features,
//     experts against dimensions learned from the whole log) without
//     computing anything it releases, re-reading the log through the index,
//     which checks every record against its hash;
//  4. charge: write the run's entry (synced), again refusing above the cap;
//  5. the caller computes and prints the result, reading the log through
//     the index again (a log changed since step 1 is an error, never other
//     data under the charge); a command that writes files derived from the
//     data (SVT) registers them with registerDerived before writing them, so
//     any run on them is charged to the dataset.
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

	store     *ledger.Store
	path      string              // the file read
	fileID    string              // content id of the file read
	records   []ledger.RecordHash // its records' hashes
	datasetID string              // the dataset the run is charged to
	unit      ledger.Unit         // the unit of the last check or charge
	charged   ledger.OfflineCharge
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

// scan reads the log at path once, streaming (offline.ScanLog with opt and
// the caller's per-record check), stopping at its first bad record: a log
// bad at line 2 is refused after reading two lines, before the ledger is
// opened. It returns the log's index (its records' hashes and places: 44
// bytes per record, the memory the protocol itself needs).
func (b *offlineBudget) scan(path string, opt offline.ReaderOptions, check func(*offline.Session) error) (*offline.Index, error) {
	ix, err := offline.ScanLog(path, opt, check)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	if ix.Len() == 0 {
		return nil, fmt.Errorf("dataset %s: no sessions", path)
	}
	return ix, nil
}

// open opens the ledger and finds the dataset the scanned log's records
// belong to. Close the budget with close.
func (b *offlineBudget) open(a *app, ix *offline.Index) error {
	if _, err := b.cap(); err != nil {
		return err
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
	ds, err := s.ResolveDataset(ix.ID(), ix.Records())
	if err != nil {
		s.Close()
		return fmt.Errorf("ledger %s: %w", dir, err)
	}
	b.store, b.path, b.fileID, b.records, b.datasetID, b.ledgerDir = s, ix.Path(), ix.ID(), ix.Records(), ds, dir
	return nil
}

// storedCap returns the dataset's stored cap at a unit, if it has one.
func (b *offlineBudget) storedCap(unit ledger.Unit) (ledger.Cap, bool, error) {
	d, ok, err := b.store.Dataset(b.datasetID)
	if err != nil || !ok {
		return ledger.Cap{}, false, err
	}
	u, ok := d.Units[unit]
	return u.Cap, ok, nil
}

// capFor returns the cap a run at unit is checked against: the dataset's
// stored cap, else the flags' (which the run will store). Call it after
// open.
func (b *offlineBudget) capFor(unit ledger.Unit) (ledger.Cap, error) {
	c, ok, err := b.storedCap(unit)
	if err != nil || ok {
		return c, err
	}
	return b.cap()
}

// run is the ledger's view of the run with entry e. A cap flag that was
// given is passed as given (the ledger refuses it if it differs from the
// stored cap); a flag left at its default takes the stored value.
func (b *offlineBudget) run(e ledger.Entry) (ledger.OfflineRun, error) {
	c, err := b.cap()
	if err != nil {
		return ledger.OfflineRun{}, err
	}
	r := ledger.OfflineRun{File: b.fileID, Records: b.records, Entry: e, Cap: c}
	epsGiven, deltaGiven := b.changed("dataset-epsilon"), b.changed("dataset-delta")
	if epsGiven || deltaGiven {
		r.CapGiven = true
		stored, ok, err := b.storedCap(e.Unit)
		if err != nil {
			return ledger.OfflineRun{}, err
		}
		if ok && !epsGiven {
			r.Cap.Epsilon = stored.Epsilon
		}
		if ok && !deltaGiven {
			r.Cap.Delta = stored.Delta
		}
	}
	b.unit = e.Unit
	return r, nil
}

// check refuses the run when its cost would exceed the dataset's cap; it
// writes nothing.
func (b *offlineBudget) check(e ledger.Entry) error {
	r, err := b.run(e)
	if err != nil {
		return err
	}
	ch, err := b.store.CheckOffline(r)
	if err != nil {
		return b.budgetError(err)
	}
	b.datasetID, b.charged = ch.Dataset, ch
	return nil
}

// charge writes the run's entry (synced) and returns it as written.
func (b *offlineBudget) charge(e ledger.Entry) (ledger.Entry, error) {
	r, err := b.run(e)
	if err != nil {
		return ledger.Entry{}, err
	}
	ch, err := b.store.ChargeOffline(r)
	if err != nil {
		return ledger.Entry{}, b.budgetError(err)
	}
	b.datasetID, b.charged = ch.Dataset, ch
	return ch.Entry, nil
}

// spent returns the dataset's composed epsilon, at the charged run's unit and
// its cap's delta, after the run.
func (b *offlineBudget) spent() (float64, error) {
	if b.charged.Entry.Seq == 0 {
		return 0, errors.New("offline budget: spent before charge")
	}
	return b.charged.Spent, nil
}

// derivedOutput is a file a run writes from its dataset.
type derivedOutput struct {
	note     string
	sessions []offline.Session
}

// registerDerived records the files the charged run is about to write from
// its dataset (their records' content ids), so that any later run on them,
// or on part of them, is charged to the dataset. Call it after charge and
// before writing the files. Empty outputs are not registered (no run can
// read them).
func (b *offlineBudget) registerDerived(outs ...derivedOutput) error {
	if b.charged.Entry.Seq == 0 {
		return errors.New("offline budget: derived files before the charge")
	}
	var files []ledger.DerivedFile
	for _, o := range outs {
		if len(o.sessions) == 0 {
			continue
		}
		id, recs := offline.SessionsID(o.sessions)
		files = append(files, ledger.DerivedFile{ID: id, Records: recs, Note: o.note})
	}
	if len(files) == 0 {
		return nil
	}
	if _, err := b.store.RegisterDerived(b.charged.Entry.Seq, files); err != nil {
		return fmt.Errorf("ledger: register derived files: %w", err)
	}
	return nil
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

// budgetError explains a refused run and how the cap is changed. It names
// the file the user gave, not the dataset's id (a function of the data).
func (b *offlineBudget) budgetError(err error) error {
	setCap := fmt.Sprintf("dprl ledger set-cap --data %s --file %s --unit %s --epsilon E --delta D --reason TEXT", b.ledgerDir, b.path, b.unit)
	switch {
	case errors.Is(err, ledger.ErrBudgetExceeded):
		if _, stored, serr := b.storedCap(b.unit); serr == nil && !stored {
			return fmt.Errorf("%w (this is the dataset's first run at unit %s: the cap is --dataset-epsilon %g at --dataset-delta %g, which the run would store with the dataset)", err, b.unit, b.capEps, b.capDelta)
		}
		return fmt.Errorf("%w (the cap is stored with the dataset; raise it only if the dataset's owner agreed: %s)", err, setCap)
	case errors.Is(err, ledger.ErrCapMismatch):
		return fmt.Errorf("%w; leave out --dataset-epsilon/--dataset-delta to use it, or change it with %s", err, setCap)
	}
	return err
}
