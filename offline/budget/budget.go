// Package budget runs the offline budget protocol: the one order in which
// every offline mechanism on a session log reads its input, is checked
// against the dataset's privacy budget in the ledger, is charged, and
// computes. A mechanism states its cost, validates its input and computes
// its result (the Mechanism interface); Run does the rest, by construction
// in this order, so that no offline mode can skip or reorder a step:
//
//  1. scan: read the log once, streaming, checking every record as it is
//     read (the mechanism's Check) and hashing it (sessionlog.ScanLog): the
//     dataset's identity is its records. A malformed log stops at its first
//     bad record, before the ledger is opened: it costs nothing;
//  2. open: open the ledger and find the dataset the records belong to;
//  3. check: ask the mechanism for its cost (Entry, from public inputs and
//     the record count, before it validates the data) and refuse the run,
//     writing nothing, if the cost would take the dataset over its cap at
//     the run's unit or if an explicitly given cap differs from the stored
//     one;
//  4. validate: the mechanism checks everything the scan could not,
//     computing nothing it releases; an error costs nothing;
//  5. charge: write the run's entry (one synced batch), again refusing it
//     above the cap;
//  6. compute: the mechanism computes its result, which Run returns with
//     the charge it was computed under. An error or a panic in Compute
//     leaves the entry in place: the data was read under the charge, so
//     the cost was spent.
//
// Nothing a mechanism releases can exist before step 5 returns: Compute is
// the only step that receives the charge, and Run calls it only after the
// entry is durably written.
//
// The cap: a dataset's first run at a unit stores Config.Cap with the
// dataset; later runs are checked against the stored cap, and a run whose
// explicitly given cap (Config.EpsilonGiven, Config.DeltaGiven) differs
// from it is refused with ledger.ErrCapMismatch. Only ledger.Store.SetCap
// changes a stored cap.
//
// Lineage: a run whose input is a file derived from a dataset (an SVT
// release's unstable set) sets Config.Derived, and is refused before
// anything is charged unless the ledger knows every one of its records; it
// is charged to the source dataset. A mechanism that also reads a public
// side input (an SVT stable release) checks it with Dataset.CheckReleased
// before the charge: every record must come from a released derived file
// of the run's own dataset. A mechanism that reads a log the user declares
// public (primorl's --public-data, gtd2's --eval-data) checks it with
// Dataset.CheckPublic before the charge: no record of it may be a record of
// the run's input or of a dataset the ledger knows, unless it is exactly a
// record of a released file of the run's dataset.
//
// A record's identity is its content (sessionlog.ContentHash): a copy of a
// log with ids renamed, behaviour probabilities or final_obs dropped, or
// reformatted, is the same dataset, charged to the same budget, and refused
// as a public input like the log itself.
package budget

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"dprl/ledger"
	"dprl/sessionlog"
)

// Errors of the protocol's lineage checks. Test with errors.Is.
var (
	// ErrUnknownSource refuses a run with Config.Derived whose input has
	// records the ledger does not know: its source dataset was never
	// registered in this ledger (or the file is not derived from it).
	ErrUnknownSource = errors.New("budget: the input's source is unknown to the ledger")
	// ErrNotReleased refuses a public side input (Dataset.CheckReleased)
	// with a record that is not a record of a released derived file of the
	// run's dataset.
	ErrNotReleased = errors.New("budget: the file is not a released file of the run's dataset")
	// ErrNotPublic refuses a log declared public (Dataset.CheckPublic) that
	// holds a record of the run's input or of a dataset the ledger knows.
	ErrNotPublic = errors.New("budget: the file declared public holds private records")
)

// fileRecords is what the ledger looks an indexed log up by.
func fileRecords(ix *sessionlog.Index) ledger.FileRecords {
	return ledger.FileRecords{ID: ix.ID(), Records: ix.Records(), LegacyID: ix.LegacyID(), Exact: ix.Exact()}
}

// Mechanism is an offline mechanism as the protocol sees it. R is its
// result. Run calls its methods in this order, each at most once except
// Check: Check for every record, Scanned (if implemented), Entry, Validate,
// Compute; a step that fails ends the run.
type Mechanism[R any] interface {
	// Check checks one record as the scan reads it (sessionlog.ScanLog names
	// its line in errors). It must compute nothing that is released.
	Check(s *sessionlog.Session) error
	// Entry states the run's cost: the ledger entry's Unit, Mechanism,
	// Method, Events, Fixed, Epsilon, Delta, Participants and Seeded (the
	// ledger fills in the rest). It is called after the scan and before
	// Validate, so the cost may depend on public inputs and the record
	// count (ix.Len()) only, and on the dataset's cap (ds.Cap). Not called
	// for an uncharged run.
	Entry(ix *sessionlog.Index, ds Dataset) (ledger.Entry, error)
	// Validate checks everything the scan could not (what needs the whole
	// log, or dimensions learned from it), re-reading the log through ix if
	// it needs to, and computes nothing that is released. It may set
	// e.Participants (e.g. the number of experts found) and nothing else of
	// the entry: a changed cost is refused. For an uncharged run e points to
	// a zero entry.
	Validate(ix *sessionlog.Index, e *ledger.Entry) error
	// Compute computes the result, after the run was charged (c.Entry is
	// the entry as written; for an uncharged run c.Entry is zero). Files
	// derived from the data are registered with c.RegisterDerived before
	// they are written.
	Compute(ctx context.Context, ix *sessionlog.Index, c *Charge) (R, error)
}

// Scanned is implemented by a mechanism that acts on the index as soon as
// the scan ends, before the ledger is opened (e.g. to size a memory limit by
// the record count). It must compute nothing that is released.
type Scanned interface {
	Scanned(ix *sessionlog.Index)
}

// Input is the session log a run reads.
type Input struct {
	// Path is the log's file (a regular file: it is read more than once).
	Path string
	// Reader are the options the log is read with.
	Reader sessionlog.ReaderOptions
}

// Config is the budget a run is charged against.
type Config struct {
	// Ledger is the ledger directory, created (mode 0700) if missing.
	Ledger string
	// Cap is the cap a run stores with its dataset when the dataset has
	// none at the run's unit (its first run there).
	Cap ledger.Cap
	// EpsilonGiven and DeltaGiven say that Cap's epsilon or delta was given
	// explicitly rather than being a default: a stored cap that differs in
	// a given component refuses the run (ledger.ErrCapMismatch), and a
	// component not given takes the stored value.
	EpsilonGiven, DeltaGiven bool
	// Uncharged runs a mechanism that releases nothing it claims is
	// private (a non-private reference estimate): the same order without
	// the ledger (no open, check or charge; Entry is not called). Its
	// caller must label the result as not differentially private.
	Uncharged bool
	// Derived says that the run's input is a file derived from a dataset
	// this ledger knows (an SVT release's unstable set): every one of its
	// records must be known to the ledger, and the run is charged to that
	// dataset. An input with a record the ledger does not know, or a
	// ledger that does not exist, is refused with ErrUnknownSource when the
	// ledger is opened, before anything is charged (and no ledger is
	// created).
	Derived bool
	// WaitLock, when > 0, waits up to this long for a ledger another
	// process holds (another offline run) instead of failing at once
	// (ledger.Options.WaitLock). A run serves live copies of the ledger
	// it holds (ledger.Options.LiveView), so dprl ledger show reads it
	// meanwhile.
	WaitLock time.Duration
	// Logger receives the ledger's log lines and a panic's stack.
	Logger zerolog.Logger
}

// checkCap checks the configured cap: an invalid component is a
// *CapError wrapped in ledger.ErrInvalid.
func (c Config) checkCap() error {
	if err := validCap(c.Cap); err != nil {
		return fmt.Errorf("%w: %w", ledger.ErrInvalid, err)
	}
	return nil
}

// Refusal is the error of a run the ledger refused (over the cap, or a cap
// that differs from the stored one), before or at the charge: nothing was
// written. It wraps the ledger's error (ledger.ErrBudgetExceeded or
// ledger.ErrCapMismatch) and says what a caller needs to explain it.
type Refusal struct {
	// Err is the ledger's error.
	Err error
	// Unit is the run's unit.
	Unit ledger.Unit
	// FirstRun says that the dataset has no cap at Unit yet: the run was
	// checked against Config.Cap, which it would have stored.
	FirstRun bool
	// Cap is the configured cap (Config.Cap): the one a first run is
	// checked against.
	Cap ledger.Cap
	// Ledger is the ledger directory and Path the log the run read.
	Ledger, Path string
}

// Error returns the ledger's message.
func (r *Refusal) Error() string { return r.Err.Error() }

// Unwrap returns the ledger's error.
func (r *Refusal) Unwrap() error { return r.Err }

// Dataset is the run's dataset as the protocol knows it when it asks the
// mechanism for its cost. Its methods read the ledger, which is open until
// Run returns: a mechanism may keep it from Entry to call them in Validate.
type Dataset struct {
	p *protocol
}

// ID returns the id of the dataset the run is charged to: a function of
// the data, so not covered by the run's guarantee.
func (d Dataset) ID() string { return d.p.dataset }

// CheckReleased checks a public side input of the run, the session log at
// path read with opt (an SVT stable release carries no behaviour
// probabilities: set opt.OptionalProb), and returns its index, through
// which the mechanism reads it (each record checked against the hash that
// was checked here). Every record of the file must be a record of a
// released derived file of the run's own dataset (ledger.Lineage): a file
// with a record the ledger does not know, with a record of another
// dataset, or with a record that is not released (an SVT unstable set, or
// the source log itself) is refused with an error wrapping ErrNotReleased.
// Call it in Entry or Validate, so that a refused input costs nothing.
func (d Dataset) CheckReleased(path string, opt sessionlog.ReaderOptions) (*sessionlog.Index, error) {
	p := d.p
	ix, l, err, lerr := d.sideLineage("CheckReleased", path, opt)
	if err != nil {
		return nil, err
	}
	switch err := lerr; {
	case errors.Is(err, ledger.ErrOverlap):
		return nil, fmt.Errorf("%w: %s: %w", ErrNotReleased, path, err)
	case err != nil:
		return nil, fmt.Errorf("ledger %s: %w", p.cfg.Ledger, err)
	case !l.Known():
		return nil, fmt.Errorf("%w: %s: %d of its %d distinct records are unknown to ledger %s", ErrNotReleased, path, l.Fresh, l.Records, p.cfg.Ledger)
	case l.Dataset != p.dataset:
		return nil, fmt.Errorf("%w: %s belongs to another dataset than %s, the run's input", ErrNotReleased, path, p.in.Path)
	case !l.AllReleased():
		return nil, fmt.Errorf("%w: %s: %d of its %d distinct records are not records of a released file of the dataset of %s (an SVT unstable set is private: it is not released)", ErrNotReleased, path, l.Records-l.Released, l.Records, p.in.Path)
	}
	return ix, nil
}

// sideLineage reads a side input of the run (a public log) at path with
// opt, and returns its index and its records' lineage, looked up as a
// public input's (exact hashes too). err is a use outside a charged run,
// a scan error or an empty log, to return as it is; lerr is the ledger's
// (ledger.ErrOverlap among them), for the caller to explain.
func (d Dataset) sideLineage(caller, path string, opt sessionlog.ReaderOptions) (ix *sessionlog.Index, l ledger.Lineage, err, lerr error) {
	p := d.p
	if p == nil || p.store == nil {
		return nil, l, fmt.Errorf("budget: %s outside a charged run", caller), nil
	}
	if ix, err = sessionlog.ScanLog(path, opt, nil); err != nil {
		return nil, l, fmt.Errorf("public input: %w", err), nil
	}
	if ix.Len() == 0 {
		return nil, l, fmt.Errorf("public input %s: no sessions", path), nil
	}
	f := fileRecords(ix)
	f.Public = true
	l, lerr = p.store.LineageOf(f)
	return ix, l, nil, lerr
}

// CheckPublic checks a log the user declares public, read by the run as a
// side input (primorl's --public-data, gtd2's --eval-data), at path with
// opt, and returns its index, through which the mechanism reads it (each
// record checked against the hash that was checked here). Records are
// compared by identity (sessionlog.ContentHash), so a copy, a subset, or a
// reformatted, id-renamed or probability-stripped copy of private data is
// found. It is refused with an error wrapping ErrNotPublic when any record
// is a record of the run's own input, or of a dataset the ledger knows
// (the run's or another), unless it is exactly (sessionlog.HashRecord) a
// record of a released derived file of the run's dataset (an SVT stable
// release: public). Records nobody registered are the user's declaration:
// they are accepted. Call it in Entry or Validate, so that a refused input
// costs nothing.
func (d Dataset) CheckPublic(path string, opt sessionlog.ReaderOptions) (*sessionlog.Index, error) {
	p := d.p
	ix, l, err, lerr := d.sideLineage("CheckPublic", path, opt)
	if err != nil {
		return nil, err
	}
	switch err := lerr; {
	case errors.Is(err, ledger.ErrOverlap):
		return nil, fmt.Errorf("%w: %s: %w", ErrNotPublic, path, err)
	case err != nil:
		return nil, fmt.Errorf("ledger %s: %w", p.cfg.Ledger, err)
	}
	known := l.Records - l.Fresh
	switch {
	case known > 0 && l.Dataset != p.dataset:
		return nil, fmt.Errorf("%w: %s: %d of its %d distinct records belong to a dataset of ledger %s other than that of %s, the run's input", ErrNotPublic, path, known, l.Records, p.cfg.Ledger, p.in.Path)
	case known > l.Released:
		return nil, fmt.Errorf("%w: %s: %d of its %d distinct records are records of the dataset of %s, the run's input, and not of a release of it", ErrNotPublic, path, known-l.Released, l.Records, p.in.Path)
	}
	input := make(map[ledger.RecordHash]bool, len(p.records))
	for _, h := range p.records {
		input[h] = true
	}
	n := 0
	for _, h := range l.NotReleased {
		if input[h] {
			n++
		}
	}
	if n > 0 {
		return nil, fmt.Errorf("%w: %s: %d of its %d distinct records are records of %s, the run's private input (compared by content: ids, behaviour probabilities, final_obs and formatting aside)", ErrNotPublic, path, n, l.Records, p.in.Path)
	}
	return ix, nil
}

// Cap returns the cap a run at unit is checked against: the dataset's
// stored cap, else the configured one (which the run will store). A cap
// component given explicitly (Config.EpsilonGiven, DeltaGiven) that differs
// from the stored one refuses the run here, as the charge would (a
// *Refusal wrapping ledger.ErrCapMismatch), so that a mechanism never
// checks its cost against a cap other than the one the user asked for
// without saying so.
func (d Dataset) Cap(unit ledger.Unit) (ledger.Cap, error) {
	p := d.p
	c, ok, err := p.storedCap(unit)
	if err != nil {
		return c, err
	}
	if !ok {
		return p.cfg.Cap, nil
	}
	if g := p.given(c); (p.cfg.EpsilonGiven || p.cfg.DeltaGiven) && g != c {
		return c, p.refusal(unit, ledger.CapMismatch(unit, c, g))
	}
	return c, nil
}

// Refuse returns err, which must wrap ledger.ErrBudgetExceeded (a cost
// that the cap at unit cannot hold, found by the mechanism in Entry), as a
// *Refusal, so that Explain adds how the cap is changed. Other errors are
// returned as they are.
func (d Dataset) Refuse(unit ledger.Unit, err error) error { return d.p.refusal(unit, err) }

// Charge is what a run was charged: the entry as written and the dataset's
// budget after it.
type Charge struct {
	// Entry is the entry as written (zero for an uncharged run).
	Entry ledger.Entry
	// Dataset is the id of the dataset the run was charged to: a function
	// of the data, so not covered by the run's guarantee.
	Dataset string
	// Cap is the dataset's cap at the run's unit.
	Cap ledger.Cap
	// Spent is the dataset's composed epsilon at the run's unit and its
	// cap's delta, with the run.
	Spent float64

	store *ledger.Store // open during Compute only
}

// Charged reports whether the run was charged (its entry written).
func (c *Charge) Charged() bool { return c != nil && c.Entry.Seq != 0 }

// Derived is a file a run writes from its dataset.
type Derived struct {
	// Note says what the file is, e.g. "svt stable prefixes (out.jsonl)".
	Note string
	// Sessions are the file's records.
	Sessions []sessionlog.Session
	// Released says the file is the output of a differentially private
	// release charged by the run (an SVT stable release), which later runs
	// on the dataset may read as public (Dataset.CheckReleased); a file
	// that is not released (an SVT unstable set) stays private.
	Released bool
}

// RegisterDerived records the files the charged run is about to write from
// its dataset (their records' content ids) in one synced batch, so that any
// later run on them, or on part of them, is charged to the dataset. Call it
// in Compute, before writing the files. Empty outputs are not registered
// (no run can read them). List a released file before the others: a
// record two files share goes with the first.
func (c *Charge) RegisterDerived(outs ...Derived) error {
	if !c.Charged() {
		return errors.New("budget: derived files of an uncharged run")
	}
	if c.store == nil {
		return errors.New("budget: derived files registered outside Compute")
	}
	var files []ledger.DerivedFile
	for _, o := range outs {
		if len(o.Sessions) == 0 {
			continue
		}
		id, recs := sessionlog.SessionsID(o.Sessions)
		files = append(files, ledger.DerivedFile{ID: id, Records: recs, Exact: sessionlog.SessionsExact(o.Sessions), Note: o.Note, Released: o.Released})
	}
	if len(files) == 0 {
		return nil
	}
	if _, err := c.store.RegisterDerived(c.Entry.Seq, files); err != nil {
		return fmt.Errorf("ledger: register derived files: %w", err)
	}
	return nil
}

// protocol is one run's state.
type protocol struct {
	cfg     Config
	in      Input
	store   *ledger.Store
	file    string
	records []ledger.RecordHash
	legacy  string
	exact   []ledger.RecordHash
	dataset string
}

// Run runs mechanism m on the log in, charged against cfg, in the
// protocol's order (see the package doc), and returns its result with the
// charge it was computed under.
//
// Errors: a malformed log is "dataset: ..." (a *sessionlog.LineError inside
// names the line); a refused run is a *Refusal; the mechanism's own errors
// are returned as they are. An error returned with c.Charged() true came
// after the charge: the entry stands. A cancelled ctx stops the run before
// its next step; once charged, Compute decides.
func Run[R any](ctx context.Context, cfg Config, in Input, m Mechanism[R]) (res R, c Charge, err error) {
	p := &protocol{cfg: cfg, in: in}
	if !cfg.Uncharged {
		if err := cfg.checkCap(); err != nil {
			return res, c, err
		}
		if cfg.Ledger == "" {
			return res, c, fmt.Errorf("%w: no ledger directory", ledger.ErrInvalid)
		}
	}
	// 1. scan.
	if err := ctx.Err(); err != nil {
		return res, c, err
	}
	ix, err := sessionlog.ScanLog(in.Path, in.Reader, m.Check)
	if err != nil {
		return res, c, fmt.Errorf("dataset: %w", err)
	}
	if ix.Len() == 0 {
		return res, c, fmt.Errorf("dataset %s: no sessions", in.Path)
	}
	if s, ok := m.(Scanned); ok {
		s.Scanned(ix)
	}
	if cfg.Uncharged {
		var e ledger.Entry
		if err := m.Validate(ix, &e); err != nil {
			return res, c, err
		}
		if err := ctx.Err(); err != nil {
			return res, c, err
		}
		return compute(ctx, ix, &c, m, cfg.Logger)
	}
	// 2. open.
	if err := ctx.Err(); err != nil {
		return res, c, err
	}
	if err := p.open(ix); err != nil {
		return res, c, err
	}
	defer func() {
		c.store = nil
		if cerr := p.store.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("ledger %s: %w", cfg.Ledger, cerr)
		}
	}()
	// 3. check.
	e, err := m.Entry(ix, Dataset{p})
	if err != nil {
		return res, c, err
	}
	if _, err := p.check(e); err != nil {
		return res, c, err
	}
	// 4. validate.
	v := e
	if err := m.Validate(ix, &v); err != nil {
		return res, c, err
	}
	if err := sameCost(e, v); err != nil {
		return res, c, err
	}
	// 5. charge.
	if err := ctx.Err(); err != nil {
		return res, c, err
	}
	if c, err = p.charge(v); err != nil {
		return res, c, err
	}
	// 6. compute.
	return compute(ctx, ix, &c, m, cfg.Logger)
}

// compute calls m.Compute, turning a panic into an error.
func compute[R any](ctx context.Context, ix *sessionlog.Index, c *Charge, m Mechanism[R], log zerolog.Logger) (res R, charged Charge, err error) {
	defer func() {
		if v := recover(); v != nil {
			charged = *c
			log.Error().Str("stack", string(debug.Stack())).Uint64("seq", c.Entry.Seq).Msg("offline mechanism panicked")
			var zero R
			res = zero
			if c.Charged() {
				err = fmt.Errorf("budget: the mechanism panicked after the run was charged (ledger entry %d stands): %v", c.Entry.Seq, v)
			} else {
				err = fmt.Errorf("budget: the mechanism panicked: %v", v)
			}
		}
	}()
	res, err = m.Compute(ctx, ix, c)
	return res, *c, err
}

// sameCost refuses an entry whose cost Validate changed: only
// Participants may be set after the check.
func sameCost(checked, validated ledger.Entry) error {
	a, b := checked, validated
	a.Participants, b.Participants = 0, 0
	if a.Unit != b.Unit || a.Mechanism != b.Mechanism || a.Method != b.Method || a.Epsilon != b.Epsilon ||
		a.Delta != b.Delta || a.Seeded != b.Seeded || !slices.Equal(a.Events, b.Events) || !slices.Equal(a.Fixed, b.Fixed) {
		return errors.New("budget: the mechanism changed its cost after the budget check")
	}
	return nil
}

// open opens the ledger and finds the dataset the scanned records belong
// to. A derived input (Config.Derived) needs an existing ledger that knows
// every one of its records.
func (p *protocol) open(ix *sessionlog.Index) error {
	dir := p.cfg.Ledger
	const unknown = "run dprl offline svt on the source log with this ledger first"
	if !p.cfg.Derived {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
	}
	s, err := ledger.Open(dir, ledger.Options{Logger: p.cfg.Logger, MustExist: p.cfg.Derived, WaitLock: p.cfg.WaitLock, LiveView: true})
	if p.cfg.Derived && errors.Is(err, ledger.ErrNotFound) {
		return fmt.Errorf("%w: %s is derived, and there is no ledger in %s: %s", ErrUnknownSource, p.in.Path, dir, unknown)
	}
	if err != nil {
		return fmt.Errorf("ledger %s: %w", dir, err)
	}
	l, err := s.LineageOf(fileRecords(ix))
	if err != nil {
		s.Close()
		return fmt.Errorf("ledger %s: %w", dir, err)
	}
	if p.cfg.Derived && !l.Known() {
		s.Close()
		return fmt.Errorf("%w: %s: %d of its %d distinct records are unknown to ledger %s: %s", ErrUnknownSource, p.in.Path, l.Fresh, l.Records, dir, unknown)
	}
	p.store, p.file, p.records, p.dataset = s, ix.ID(), ix.Records(), l.Dataset
	p.legacy, p.exact = ix.LegacyID(), ix.Exact()
	return nil
}

// storedCap returns the dataset's stored cap at a unit, if it has one.
func (p *protocol) storedCap(unit ledger.Unit) (ledger.Cap, bool, error) {
	d, ok, err := p.store.Dataset(p.dataset)
	if err != nil || !ok {
		return ledger.Cap{}, false, err
	}
	u, ok := d.Units[unit]
	return u.Cap, ok, nil
}

// run is the ledger's view of the run with entry e. A cap component that
// was given is passed as given (the ledger refuses it if it differs from
// the stored cap); one left at its default takes the stored value.
func (p *protocol) run(e ledger.Entry) (ledger.OfflineRun, error) {
	r := ledger.OfflineRun{File: p.file, Records: p.records, LegacyFile: p.legacy, Exact: p.exact, Entry: e, Cap: p.cfg.Cap}
	if p.cfg.EpsilonGiven || p.cfg.DeltaGiven {
		r.CapGiven = true
		stored, ok, err := p.storedCap(e.Unit)
		if err != nil {
			return ledger.OfflineRun{}, err
		}
		if ok {
			r.Cap = p.given(stored)
		}
	}
	return r, nil
}

// given returns the cap the run gives where the dataset stored the cap
// stored: the configured components that were given, the stored ones
// otherwise.
func (p *protocol) given(stored ledger.Cap) ledger.Cap {
	c := p.cfg.Cap
	if !p.cfg.EpsilonGiven {
		c.Epsilon = stored.Epsilon
	}
	if !p.cfg.DeltaGiven {
		c.Delta = stored.Delta
	}
	return c
}

// check refuses the run when its cost would exceed the dataset's cap; it
// writes nothing.
func (p *protocol) check(e ledger.Entry) (ledger.OfflineCharge, error) {
	r, err := p.run(e)
	if err != nil {
		return ledger.OfflineCharge{}, err
	}
	ch, err := p.store.CheckOffline(r)
	if err != nil {
		return ledger.OfflineCharge{}, p.refusal(e.Unit, err)
	}
	return ch, nil
}

// charge writes the run's entry (synced).
func (p *protocol) charge(e ledger.Entry) (Charge, error) {
	r, err := p.run(e)
	if err != nil {
		return Charge{}, err
	}
	ch, err := p.store.ChargeOffline(r)
	if err != nil {
		return Charge{}, p.refusal(e.Unit, err)
	}
	return Charge{Entry: ch.Entry, Dataset: ch.Dataset, Cap: ch.Cap, Spent: ch.Spent, store: p.store}, nil
}

// refusal wraps a refused run's error in a *Refusal; other errors are
// returned as they are.
func (p *protocol) refusal(unit ledger.Unit, err error) error {
	if !errors.Is(err, ledger.ErrBudgetExceeded) && !errors.Is(err, ledger.ErrCapMismatch) {
		return err
	}
	_, stored, serr := p.storedCap(unit)
	return &Refusal{Err: err, Unit: unit, FirstRun: serr == nil && !stored, Cap: p.cfg.Cap, Ledger: p.cfg.Ledger, Path: p.in.Path}
}

// DatasetOfFile returns the dataset of s that the records of the session
// log file belong to: the dataset a run on that log would be charged to
// (nothing is registered). A log with no session is an error.
func DatasetOfFile(s *ledger.Store, file string) (string, error) {
	ix, err := sessionlog.ScanLog(file, sessionlog.ReaderOptions{OptionalProb: true}, nil)
	if err != nil {
		return "", err
	}
	if ix.Len() == 0 {
		return "", fmt.Errorf("%s: no sessions", file)
	}
	return s.ResolveFile(fileRecords(ix))
}

// LinkResult is what LinkFile did.
type LinkResult struct {
	// File is the log; Dataset the dataset its records belong to.
	File    string `json:"file"`
	Dataset string `json:"dataset"`
	// Linked is the number of record identities linked (0: all were
	// already known by identity); Seq the records_linked entry (0: none).
	Linked int    `json:"linked"`
	Seq    uint64 `json:"seq,omitempty"`
}

// WriteText prints the result.
func (r LinkResult) WriteText(w io.Writer) error {
	if r.Linked == 0 {
		_, err := fmt.Fprintf(w, "every record of %s is known by its content already (dataset %s): nothing to link\n", r.File, r.Dataset)
		return err
	}
	_, err := fmt.Fprintf(w, "linked the content of %d records of %s to dataset %s (ledger entry %d): copies of them stripped of ids or behaviour probabilities are charged to it\n", r.Linked, r.File, r.Dataset, r.Seq)
	return err
}

// LinkFile links the identities (content hashes) of the records of the
// session log file, which a ledger written before content hashes holds
// only under their exact hashes, to the dataset that holds them
// (ledger.Store.LinkFile): afterwards a copy of the log stripped of ids or
// behaviour probabilities, or reformatted, is charged to that dataset, as
// after a run on the log. It costs nothing.
func LinkFile(s *ledger.Store, file, reason string) (LinkResult, error) {
	ix, err := sessionlog.ScanLog(file, sessionlog.ReaderOptions{OptionalProb: true}, nil)
	if err != nil {
		return LinkResult{}, err
	}
	if ix.Len() == 0 {
		return LinkResult{}, fmt.Errorf("%s: no sessions", file)
	}
	ds, e, err := s.LinkFile(fileRecords(ix), reason)
	if err != nil {
		return LinkResult{}, err
	}
	return LinkResult{File: file, Dataset: ds, Linked: e.LinkedRecords, Seq: e.Seq}, nil
}
