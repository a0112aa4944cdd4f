package ledger

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"dprl/internal/atomicfile"
	"dprl/ledger/accountant"
)

// Verification is the outcome of VerifyDir ("dprl ledger verify"): the
// report, with Problems and Budgets never nil, and whether it found no
// problem.
type Verification struct {
	OK bool `json:"ok"`
	Report
}

// VerifyDir verifies the existing ledger in dir, opened read-only with o's
// file system and logger: Verify, and CheckHead against expect when it is
// not nil. Damage is a problem in the result, not an error: a store too
// damaged to open (ErrCorrupt) gives a Verification with that one problem.
// The error is for everything else (no ledger in dir, a store in use).
func VerifyDir(dir string, o Options, expect *HeadRef) (Verification, error) {
	o.MustExist, o.ReadOnly = true, true
	var res Verification
	s, err := Open(dir, o)
	switch {
	case errors.Is(err, ErrCorrupt):
		res.Problems = []string{err.Error()}
	case err != nil:
		return Verification{}, err
	default:
		defer s.Close()
		if res.Report, err = s.Verify(); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				return Verification{}, err
			}
			res.Problems = append(res.Problems, err.Error())
		}
		if expect != nil {
			if err := s.CheckHead(*expect); err != nil {
				res.Problems = append(res.Problems, err.Error())
			}
		}
	}
	if res.Problems == nil {
		res.Problems = []string{}
	}
	if res.Budgets == nil {
		res.Budgets = []DatasetBudget{}
	}
	res.OK = len(res.Problems) == 0
	return res, nil
}

// WriteText writes the recomputed per-unit totals, the notes, the problems
// and a status line.
func (v Verification) WriteText(w io.Writer) error {
	r := v.Report
	for _, b := range r.Budgets {
		if b.Cap.Delta == 0 {
			fmt.Fprintf(w, "dataset %s unit %s: %d runs, no cap\n", b.Dataset, b.Unit, b.Runs)
			continue
		}
		fmt.Fprintf(w, "dataset %s unit %s: %d runs, epsilon %s of cap %g at delta %g\n", b.Dataset, b.Unit, b.Runs, accountant.FormatEpsilon(b.Epsilon), b.Cap.Epsilon, b.Cap.Delta)
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	for _, p := range r.Problems {
		fmt.Fprintln(w, "problem:", p)
	}
	status := "OK"
	if !v.OK {
		status = fmt.Sprintf("FAILED (%d problems)", len(r.Problems))
	}
	_, err := fmt.Fprintf(w, "ledger %s: %d entries (%d releases, %d offline runs, %d cap changes, %d derived files), %d users, %d datasets, head version %d\n",
		status, r.Entries, r.Releases, r.OfflineRuns, r.CapChanges, r.DerivedFiles, r.Users, r.Datasets, r.Head.Version)
	return err
}

// HeadInfo is a verified ledger's head ("dprl ledger head").
type HeadInfo struct {
	Seq     uint64 `json:"seq"`
	Hash    string `json:"hash"`
	Version uint64 `json:"version"`
	// Ref is SEQ:HASH, the form ParseHeadRef reads.
	Ref string `json:"ref"`
}

// VerifiedHead verifies the ledger and returns its head, to record outside
// the data directory (CheckHead checks it later). A ledger with a problem,
// or without entries, has no head to record: both are errors.
func (s *Store) VerifiedHead() (HeadInfo, error) {
	r, err := s.Verify()
	if err != nil {
		return HeadInfo{}, err
	}
	if !r.OK() {
		return HeadInfo{}, fmt.Errorf("ledger %s fails verification (%d problems; dprl ledger verify lists them): %s", s.dir, len(r.Problems), r.Problems[0])
	}
	if r.Head.Seq == 0 {
		return HeadInfo{}, fmt.Errorf("ledger %s has no entry yet: no head to record", s.dir)
	}
	return HeadInfo{Seq: r.Head.Seq, Hash: r.Head.Hash, Version: r.Head.Version, Ref: HeadRef{Seq: r.Head.Seq, Hash: r.Head.Hash}.String()}, nil
}

// WriteText writes the head as SEQ:HASH.
func (h HeadInfo) WriteText(w io.Writer) error {
	_, err := fmt.Fprintln(w, h.Ref)
	return err
}

// CapChange is a change of a dataset's cap at one unit (ChangeCap).
type CapChange struct {
	// Dataset is the dataset's id (ResolveDataset finds it from a file).
	Dataset string
	// Unit is the protected unit; "" means the dataset's only unit.
	Unit Unit
	// Cap is the new cap.
	Cap Cap
	// Reason is recorded in the entry; it must not be blank.
	Reason string
}

// Validate checks the cap and the reason (SetCap checks the unit against
// the dataset).
func (c CapChange) Validate() error {
	if err := c.Cap.check(); err != nil {
		return err
	}
	if strings.TrimSpace(c.Reason) == "" {
		return fmt.Errorf("%w: a cap change needs a reason", ErrInvalid)
	}
	return nil
}

// UnitError is ChangeCap's refusal of a change that names no unit for a
// dataset with budgets at several.
type UnitError struct {
	Dataset string
	// Units are the dataset's units, sorted.
	Units []Unit
}

func (e *UnitError) Error() string {
	return fmt.Sprintf("ledger: dataset %s has budgets at units %s: name one", e.Dataset, e.UnitList())
}

// UnitList returns the units separated by ", ".
func (e *UnitError) UnitList() string {
	names := make([]string, len(e.Units))
	for i, u := range e.Units {
		names[i] = string(u)
	}
	return strings.Join(names, ", ")
}

// CapChangeResult is what ChangeCap wrote ("dprl ledger set-cap").
type CapChangeResult struct {
	Dataset string  `json:"dataset"`
	Unit    Unit    `json:"unit"`
	Old     Cap     `json:"old_cap"`
	Cap     Cap     `json:"cap"`
	Reason  string  `json:"reason"`
	Seq     uint64  `json:"ledger_seq"`
	Runs    int     `json:"runs"`
	Spent   float64 `json:"spent_epsilon"`
}

// ChangeCap changes a dataset's cap at one unit with SetCap and returns the
// old and new caps, the entry's sequence number and what the unit has
// spent. A dataset the ledger does not hold is ErrNotFound; a change
// without a unit for a dataset with several is a *UnitError; an invalid
// cap or reason wraps ErrInvalid.
func (s *Store) ChangeCap(c CapChange) (CapChangeResult, error) {
	if err := c.Validate(); err != nil {
		return CapChangeResult{}, err
	}
	d, ok, err := s.Dataset(c.Dataset)
	if err != nil {
		return CapChangeResult{}, err
	}
	if !ok {
		return CapChangeResult{}, fmt.Errorf("%w: no dataset %s in this ledger (a dataset is registered by its first private run)", ErrNotFound, c.Dataset)
	}
	u := c.Unit
	if u == "" {
		units := make([]Unit, 0, len(d.Units))
		for k := range d.Units {
			units = append(units, k)
		}
		slices.Sort(units)
		if len(units) != 1 {
			return CapChangeResult{}, &UnitError{Dataset: c.Dataset, Units: units}
		}
		u = units[0]
	}
	e, err := s.SetCap(c.Dataset, u, c.Cap, c.Reason)
	if err != nil {
		return CapChangeResult{}, err
	}
	nd, _, err := s.Dataset(c.Dataset)
	if err != nil {
		return CapChangeResult{}, err
	}
	res := CapChangeResult{Dataset: c.Dataset, Unit: u, Old: d.Units[u].Cap, Cap: *e.Cap, Reason: e.Reason, Seq: e.Seq, Runs: nd.Units[u].Runs}
	if res.Spent, err = nd.Units[u].Spent(); err != nil {
		return CapChangeResult{}, err
	}
	return res, nil
}

// WriteText writes the change as one line.
func (r CapChangeResult) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "dataset %s unit %s: cap (epsilon %g, delta %g) -> (epsilon %g, delta %g), ledger entry %d; spent epsilon %s in %d runs\n",
		r.Dataset, r.Unit, r.Old.Epsilon, r.Old.Delta, r.Cap.Epsilon, r.Cap.Delta, r.Seq, accountant.FormatEpsilon(r.Spent), r.Runs)
	return err
}

// SnapshotExport is a released policy written to a file
// ("dprl ledger snapshot").
type SnapshotExport struct {
	Version uint64 `json:"version"`
	Out     string `json:"out"`
	Bytes   int    `json:"bytes"`
	Params  int    `json:"params"`
}

// ExportSnapshot writes the snapshot of a released policy version (a
// negative version: the serving one, the head's) to the file out,
// atomically. The ledger stores snapshots as opaque bytes: decode checks
// one (policy.UnmarshalSnapshot) and returns its number of parameters,
// before anything is written. A released policy is differentially private
// output: exporting it costs no privacy.
func (s *Store) ExportSnapshot(version int64, out string, decode func(snapshot []byte) (params int, err error)) (SnapshotExport, error) {
	v := uint64(version)
	if version < 0 {
		h, err := s.Head()
		if err != nil {
			return SnapshotExport{}, err
		}
		v = h.Version
	}
	b, err := s.Snapshot(v)
	if err != nil {
		return SnapshotExport{}, fmt.Errorf("version %d: %w", v, err)
	}
	n, err := decode(b)
	if err != nil {
		return SnapshotExport{}, fmt.Errorf("version %d: stored snapshot: %w", v, err)
	}
	if err := atomicfile.WriteFile(out, b, 0o644); err != nil {
		return SnapshotExport{}, err
	}
	return SnapshotExport{Version: v, Out: out, Bytes: len(b), Params: n}, nil
}

// WriteText writes what was written as one line.
func (e SnapshotExport) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "wrote policy version %d (%d parameters, %d bytes) to %s\n", e.Version, e.Params, e.Bytes, e.Out)
	return err
}
