package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"dprl/ledger/accountant"

	"github.com/cockroachdb/pebble/v2"
)

// Errors of the offline budget. Test with errors.Is.
var (
	// ErrCapMismatch is returned when a run gives a cap that differs from
	// the one stored with the dataset; only SetCap changes a stored cap.
	ErrCapMismatch = errors.New("ledger: cap differs from the dataset's stored cap")
	// ErrOverlap is returned when a file holds records of more than one
	// registered dataset.
	ErrOverlap = errors.New("ledger: the file holds records of several datasets")
)

// CapMismatch returns the error, wrapping ErrCapMismatch, of a run at unit
// that gives the cap given where the dataset stored the cap stored.
func CapMismatch(unit Unit, stored, given Cap) error {
	return fmt.Errorf("%w: the dataset has the cap (epsilon %g, delta %g) at unit %s, stored with it; a run cannot change it (given: epsilon %g, delta %g)", ErrCapMismatch, stored.Epsilon, stored.Delta, unit, given.Epsilon, given.Delta)
}

// Cap is a dataset's privacy budget at one protected unit: the runs charged
// at that unit must compose to at most Epsilon at Delta.
type Cap struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

func (c Cap) check() error {
	if !(c.Epsilon > 0) || math.IsInf(c.Epsilon, 0) || !(c.Delta > 0 && c.Delta < 1) {
		return fmt.Errorf("%w: cap (%v, %v): want epsilon > 0 and 0 < delta < 1", ErrInvalid, c.Epsilon, c.Delta)
	}
	return nil
}

// RecordHash is the SHA-256 of one record's canonical encoding: its
// identity (sessionlog.ContentHash) or its exact hash
// (sessionlog.HashRecord).
type RecordHash = [32]byte

// FileRecords is a file's records as the ledger looks them up: by content
// hash (sessionlog.ContentHash) and, for ledgers written before it and for
// a released derived file's records, by exact hash (sessionlog.HashRecord).
// Why a record's identity is its content, and how old ledgers keep their
// budgets: docs/privacy.md, section 10.
type FileRecords struct {
	// ID is the file's content id (sessionlog.RecordsID of Records).
	ID string
	// Records are the records' identities, in any order.
	Records []RecordHash
	// LegacyID is the file's id computed from Exact, as ledgers before
	// content hashes knew it ("" if unknown).
	LegacyID string
	// Exact are the records' exact hashes, parallel to Records (nil if
	// unknown: then no record is looked up as a legacy or released one).
	Exact []RecordHash
	// Public says the file is checked as a public input: LineageOf counts
	// its released records (Lineage.Released) and lists the others
	// (Lineage.NotReleased). Without it the exact hashes are looked up only
	// in a ledger written before content identity (legacy records), no
	// record counts as released, and no list, as long as the file, is
	// built.
	Public bool
}

// offlineUnits are the protected units an offline run may charge.
var offlineUnits = []Unit{UnitTrajectory, UnitUser, UnitExpert}

func checkOfflineUnit(u Unit) error {
	if !slices.Contains(offlineUnits, u) {
		return fmt.Errorf("%w: unit %q: an offline budget is kept per trajectory, user or expert", ErrInvalid, u)
	}
	return nil
}

// UnitBudget is a dataset's budget at one protected unit: its cap and the
// costs of the runs charged at that unit.
type UnitBudget struct {
	Cap    Cap                `json:"cap"`
	Runs   int                `json:"runs"`
	Events []accountant.Event `json:"events,omitempty"`
	Fixed  []FixedCost        `json:"fixed,omitempty"`
	// Method is the accountant of the total: "" (RDP, as every budget
	// before the PLD accountant existed) until a run charged with pld
	// composes into it, "pld" from then on (see addRun and SpentAt).
	Method accountant.Method `json:"method,omitempty"`
}

// Spent returns the unit's composed epsilon at the cap's delta: the
// accountant of the runs' noise events at the delta left after the fixed
// costs' deltas, plus the fixed costs' epsilons (basic composition). It is
// 0 before the first run.
func (u UnitBudget) Spent() (float64, error) { return u.SpentAt(u.Cap.Delta) }

// SpentAt returns the unit's composed epsilon at delta. The events compose
// with the RDP accountant, and, once a run charged with the PLD accountant
// is among them (Method pld), with both, the smaller total counting: each is
// an upper bound on the same composition's epsilon, so their minimum is
// one too, and a run calibrated with pld to the cap still fits under it
// where RDP alone would refuse it.
func (u UnitBudget) SpentAt(delta float64) (float64, error) {
	if u.Runs == 0 {
		return 0, nil
	}
	rdp, err := totalEpsilon(accountant.MethodRDP, delta, u.Events, u.Fixed)
	if err != nil || u.Method != accountant.MethodPLD || len(u.Events) == 0 {
		return rdp, err
	}
	pld, err := totalEpsilon(accountant.MethodPLD, delta, u.Events, u.Fixed)
	if err != nil {
		return 0, err
	}
	return math.Min(rdp, pld), nil
}

// addRun composes an offline run's entry into the budget.
func (u *UnitBudget) addRun(e Entry) {
	u.Runs++
	u.Events = append(slices.Clip(u.Events), e.Events...)
	u.Fixed = append(slices.Clip(u.Fixed), e.Fixed...)
	if e.Method == accountant.MethodPLD && len(e.Events) > 0 {
		u.Method = accountant.MethodPLD
	}
}

func (u UnitBudget) equal(v UnitBudget) bool {
	return u.Cap == v.Cap && u.Runs == v.Runs && u.Method == v.Method && slices.Equal(u.Events, v.Events) && slices.Equal(u.Fixed, v.Fixed)
}

// DatasetState is a dataset's budgets, one per protected unit.
//
// The units' totals are never added and no unit's cost is converted into
// another's: a trajectory-level guarantee bounds what a run reveals about
// one trajectory, and says about an expert or user with many trajectories
// only what group privacy over their (private, unbounded) number of
// trajectories gives; an expert-level SVT release publishes trajectory
// prefixes verbatim, so it has no trajectory-level guarantee at all. So the
// total at a unit bounds the privacy loss, at that unit, of the runs charged
// at that unit, and only of them.
type DatasetState struct {
	Units map[Unit]UnitBudget `json:"units"`
}

// Dataset returns a dataset's state and whether the ledger holds it.
func (s *Store) Dataset(id string) (DatasetState, bool, error) {
	var d DatasetState
	ok, err := s.getJSON(budgetKey(id), &d)
	if err != nil || !ok {
		return DatasetState{}, false, err
	}
	return d, true, nil
}

// Datasets calls fn for every dataset in id order.
func (s *Store) Datasets(fn func(id string, d DatasetState) error) error {
	return s.scan(prefBudget, prefixEnd(prefBudget), func(k, v []byte) error {
		id := string(k[len(prefBudget):])
		var d DatasetState
		if err := decodeStrict(v, &d); err != nil {
			return fmt.Errorf("%w: dataset %s: %v", ErrCorrupt, id, err)
		}
		return fn(id, d)
	})
}

// OfflineRun is one offline run to check or charge.
type OfflineRun struct {
	// File is the content id of the file the run reads.
	File string
	// Records are the identities of the file's records, in any order.
	Records []RecordHash
	// LegacyFile and Exact are the file's legacy id and its records' exact
	// hashes, parallel to Records (see FileRecords); optional.
	LegacyFile string
	Exact      []RecordHash
	// Entry is the run's cost: Unit, Mechanism, Events and Fixed, Method,
	// Epsilon, Delta, Participants, Seeded. The ledger fills in the rest.
	Entry Entry
	// Cap is the cap registered with the dataset when it has none at the
	// entry's unit (the dataset's first run at that unit).
	Cap Cap
	// CapGiven says that Cap was given explicitly: a stored cap that
	// differs from it refuses the run with ErrCapMismatch rather than being
	// used silently.
	CapGiven bool
}

// OfflineCharge is what CheckOffline found or ChargeOffline wrote.
type OfflineCharge struct {
	// Dataset is the dataset the run is charged to.
	Dataset string
	// NewCap is true when the run registers the dataset's cap at its unit.
	NewCap bool
	// Cap is the dataset's cap at the run's unit.
	Cap Cap
	// Spent is the unit's composed epsilon at Cap.Delta with the run.
	Spent float64
	// Entry is the entry as written (ChargeOffline).
	Entry Entry
}

// ResolveDataset returns the dataset a file's records are charged to: the
// dataset the file itself was registered in (by an earlier run on it, or as
// a derived file), else the registered dataset that holds any of its
// records, else the file's own id. An unregistered file with records of two
// or more datasets is refused with ErrOverlap. (A registered file goes to
// its dataset even if some of its records also equal records of another,
// which happens by coincidence: a record's identity is its content, without
// ids, and short trajectories of small environments, or SVT prefixes, can
// coincide. Coinciding content never makes a run cheaper: an unregistered
// file holding it is refused, and a registered file is charged to the
// dataset whose data it was read or derived from.) The errors of the offline budget do not name datasets: an id is
// a function of the data, and the caller knows which file it asked about.
func (s *Store) ResolveDataset(file string, records []RecordHash) (string, error) {
	return s.ResolveFile(FileRecords{ID: file, Records: records})
}

// ResolveFile is ResolveDataset with the file's legacy id and exact hashes
// (FileRecords), so that a file of a dataset an older dprl registered is
// recognised.
func (s *Store) ResolveFile(f FileRecords) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", ErrClosed
	}
	r, err := s.resolve(f)
	return r.dataset, err
}

// Lineage is where a file's records come from, as the ledger knows them
// (Store.Lineage). Counts are of distinct records.
type Lineage struct {
	// Dataset is the dataset a run on the file is charged to
	// (ResolveDataset); the file's own id when no record is known.
	Dataset string
	// Records is the number of the file's distinct records.
	Records int
	// Fresh is the number of them no dataset holds yet: a run on the file
	// would add them to Dataset.
	Fresh int
	// Released is the number of them that are, exactly (their exact hash,
	// FileRecords.Exact), records of a released derived file of Dataset
	// (DerivedFile.Released): records of a differentially private release
	// of Dataset, public once it is made. A record with the content of a
	// released one but other ids, behaviour probabilities or final_obs is
	// not counted, nor a record of a derived file that is not released (an
	// SVT unstable set) or of another dataset's release.
	Released int
	// NotReleased are the identities of the file's distinct records that
	// are not counted in Released, sorted (only with FileRecords.Public).
	NotReleased []RecordHash
}

// Known reports whether every record of the file is held by a dataset of
// the ledger: a run on it adds nothing to any dataset.
func (l Lineage) Known() bool { return l.Fresh == 0 }

// AllReleased reports whether every record of the file is a record of a
// released derived file of Dataset, so that the file may be read as public
// data by a run charged to Dataset.
func (l Lineage) AllReleased() bool { return l.Records > 0 && l.Released == l.Records }

// Lineage returns the lineage of a file's records: the dataset they are
// charged to (as ResolveDataset, with its errors), how many the ledger
// does not know, and how many are records of released derived files of
// that dataset. It writes nothing.
//
// Each record is looked up by one hash, taken as its identity and as its
// exact hash (as in a ledger whose hashes are opaque); LineageOf takes both.
func (s *Store) Lineage(file string, records []RecordHash) (Lineage, error) {
	return s.LineageOf(FileRecords{ID: file, Records: records, Exact: records, Public: true})
}

// LineageOf is Lineage with the file's legacy id and exact hashes
// (FileRecords): without them no record counts as released.
func (s *Store) LineageOf(f FileRecords) (Lineage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Lineage{}, ErrClosed
	}
	r, err := s.resolve(f)
	if err != nil {
		return Lineage{}, err
	}
	l := Lineage{Dataset: r.dataset, Records: len(r.ids), Fresh: len(r.fresh)}
	for i, h := range r.ids {
		released := false
		r.byExact.each(i, func(seq uint64) {
			if e := r.entries[seq]; e.Kind == KindDerived && e.Released && e.DatasetID == r.dataset {
				released = true
			}
		})
		switch {
		case released:
			l.Released++
		case f.Public:
			l.NotReleased = append(l.NotReleased, h)
		}
	}
	return l, nil
}

// resolution is where a file's records stand in the ledger.
type resolution struct {
	// dataset is the dataset the file is charged to.
	dataset string
	// ids are the file's distinct records, sorted by identity; byID the
	// entries that hold each under its identity (the record index and
	// links), byExact under its exact hashes; fresh those no entry holds,
	// sorted.
	ids           []RecordHash
	byID, byExact holders
	fresh         []RecordHash
	// links are the records known only by a legacy (exact) hash: a charge
	// links their identities to the entry that holds them.
	links []link
	// entries holds the entries the records were found under.
	entries map[uint64]Entry
}

// holders are the entries that hold each of n records, compactly: the
// first (0 for none: entries are numbered from 1) in a slice, any others
// (a record in several datasets' releases) in a map.
type holders struct {
	first []uint64
	more  map[int][]uint64
}

func newHolders(n int) holders { return holders{first: make([]uint64, n)} }

// get returns record i's first holder, 0 for none (or when nothing was
// looked up).
func (h *holders) get(i int) uint64 {
	if h.first == nil {
		return 0
	}
	return h.first[i]
}

// legacyRecords reports whether the store's record index may hold exact
// hashes (records registered before content identity: records and no
// identity mark), and whether it holds no record at all.
func (s *Store) legacyRecords() (legacy, empty bool, err error) {
	mark, err := s.get(keyIdentity)
	if err != nil || mark != nil {
		return false, false, err
	}
	empty = true
	err = s.scan(prefRecord, prefixEnd(prefRecord), func(_, _ []byte) error {
		empty = false
		return errStop
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return !empty, empty, err
}

// markIdentity adds the identity mark to a batch that writes a store's
// first records.
func (s *Store) markIdentity(b *pebble.Batch) error {
	_, empty, err := s.legacyRecords()
	if err != nil || !empty {
		return err
	}
	return b.Set(keyIdentity, []byte("content"), nil)
}

func (h *holders) add(i int, seq uint64) {
	switch {
	case h.first[i] == 0:
		h.first[i] = seq
	case h.first[i] != seq && !slices.Contains(h.more[i], seq):
		if h.more == nil {
			h.more = map[int][]uint64{}
		}
		h.more[i] = append(h.more[i], seq)
	}
}

func (h *holders) each(i int, fn func(seq uint64)) {
	if h.first == nil || h.first[i] == 0 {
		return
	}
	fn(h.first[i])
	for _, seq := range h.more[i] {
		fn(seq)
	}
}

// link ties a record hash to the entry whose records it joins (target).
type link struct {
	h      RecordHash
	target uint64
}

// exactHash is a record's exact hash and the index of its identity.
type exactHash struct {
	x  RecordHash
	id int
}

// resolve returns the dataset of a file's records and where each of its
// distinct records stands in the record index.
func (s *Store) resolve(f FileRecords) (resolution, error) {
	if err := checkFileRecords(f); err != nil {
		return resolution{}, err
	}
	uniq := sortedUnique(f.Records)
	r := resolution{ids: uniq, byID: newHolders(len(uniq)), entries: map[uint64]Entry{}}
	err := s.holdersOf(len(uniq), func(i int) RecordHash { return uniq[i] }, r.byID.add)
	if err != nil {
		return resolution{}, err
	}
	legacy, _, err := s.legacyRecords()
	if err != nil {
		return resolution{}, err
	}
	if f.Exact != nil && (legacy || f.Public) {
		if err := s.resolveExact(f, &r); err != nil {
			return resolution{}, err
		}
	}
	found, err := s.resolveHolders(&r)
	if err != nil {
		return resolution{}, err
	}
	if r.dataset, err = s.fileDataset(f, found); err != nil {
		return resolution{}, err
	}
	r.linkExact()
	return r, nil
}

// checkFileRecords checks that a file has an id, at least one record and,
// if it has exact hashes, one for each record.
func checkFileRecords(f FileRecords) error {
	if f.ID == "" || len(f.Records) == 0 {
		return fmt.Errorf("%w: a file id and at least one record are needed", ErrInvalid)
	}
	if f.Exact != nil && len(f.Exact) != len(f.Records) {
		return fmt.Errorf("%w: %d exact hashes for %d records", ErrInvalid, len(f.Exact), len(f.Records))
	}
	return nil
}

// resolveExact fills r.byExact: the entries that hold each of the file's
// distinct records under one of its exact hashes.
func (s *Store) resolveExact(f FileRecords, r *resolution) error {
	uniq := r.ids
	r.byExact = newHolders(len(uniq))
	xs := make([]exactHash, len(f.Exact))
	for i, x := range f.Exact {
		id, _ := slices.BinarySearchFunc(uniq, f.Records[i], func(a, b RecordHash) int { return bytes.Compare(a[:], b[:]) })
		xs[i] = exactHash{x: x, id: id}
	}
	slices.SortFunc(xs, func(a, b exactHash) int { return bytes.Compare(a.x[:], b.x[:]) })
	xs = slices.CompactFunc(xs, func(a, b exactHash) bool { return a.x == b.x })
	return s.holdersOf(len(xs), func(i int) RecordHash { return xs[i].x }, func(i int, seq uint64) { r.byExact.add(xs[i].id, seq) })
}

// resolveHolders reads every entry that holds one of the file's records
// into r.entries, sets r.fresh to the records no entry holds, and returns
// the datasets of the holding entries.
func (s *Store) resolveHolders(r *resolution) (map[string]bool, error) {
	found := map[string]bool{}
	var nerr error
	note := func(seq uint64) {
		e, ok := r.entries[seq]
		if !ok {
			var err error
			if e, err = s.entry(seq); err != nil {
				nerr = err
				return
			}
			r.entries[seq] = e
		}
		found[e.DatasetID] = true
	}
	nfresh := 0
	for i := range r.ids {
		if r.byID.first[i] == 0 && r.byExact.get(i) == 0 {
			nfresh++
		}
	}
	r.fresh = make([]RecordHash, 0, nfresh)
	for i, h := range r.ids {
		if r.byID.first[i] == 0 && r.byExact.get(i) == 0 {
			r.fresh = append(r.fresh, h)
		}
		r.byID.each(i, note)
		r.byExact.each(i, note)
		if nerr != nil {
			return nil, nerr
		}
	}
	return found, nil
}

// fileDataset returns the dataset a file is charged to: the one the file
// index names for it (or for its legacy id), else the one dataset its
// records belong to, else a new dataset named by the file's id. Records of
// several datasets are an overlap.
func (s *Store) fileDataset(f FileRecords, found map[string]bool) (string, error) {
	known, err := s.get(fileKey(f.ID))
	if err != nil {
		return "", err
	}
	if known == nil && f.LegacyID != "" {
		if known, err = s.get(fileKey(f.LegacyID)); err != nil {
			return "", err
		}
	}
	switch {
	case known != nil:
		return string(known), nil
	case len(found) == 0:
		return f.ID, nil
	case len(found) == 1:
		for id := range found {
			return id, nil
		}
	}
	return "", fmt.Errorf("%w: its records belong to %d registered datasets, and a run on them would spend every one of their budgets: run on each dataset's records separately", ErrOverlap, len(found))
}

// linkExact sets r.links for the records known only by an exact hash:
// their identities are linked to an entry that holds them, one of the
// file's dataset if there is one.
func (r *resolution) linkExact() {
	for i, h := range r.ids {
		if r.byID.first[i] != 0 || r.byExact.get(i) == 0 {
			continue
		}
		target := r.byExact.first[i]
		r.byExact.each(i, func(seq uint64) {
			if r.entries[seq].DatasetID == r.dataset && r.entries[target].DatasetID != r.dataset {
				target = seq
			}
		})
		r.links = append(r.links, link{h: h, target: target})
	}
}

// holdersOf calls fn with i and each entry that holds record hash
// hash(i), for i in [0, n) (the hashes in increasing order): the entry the
// record index maps it to, and the targets of its links. It reads both
// indexes with one iterator each, seeking forward.
func (s *Store) holdersOf(n int, hash func(i int) RecordHash, fn func(i int, seq uint64)) (err error) {
	if s.dbClosed.Load() {
		return ErrClosed
	}
	defer s.recoverInto(&err)
	var p []byte
	for _, idx := range []struct {
		prefix []byte
		exact  bool
	}{{prefRecord, true}, {prefLink, false}} { // keys: prefix, hash[, seq]
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: idx.prefix, UpperBound: prefixEnd(idx.prefix)})
		if err != nil {
			return fmt.Errorf("%w: %s", ErrCorrupt, firstLine(err.Error()))
		}
		for i := range n {
			h := hash(i)
			p = append(append(p[:0], idx.prefix...), h[:]...)
			for it.SeekGE(p); it.Valid() && bytes.HasPrefix(it.Key(), p); it.Next() {
				k, v := it.Key(), it.Value()
				if (idx.exact && len(k) != len(p)) || (!idx.exact && len(k) != len(p)+8) || len(v) != 8 {
					it.Close()
					return fmt.Errorf("%w: index key of %d bytes, value of %d bytes", ErrCorrupt, len(k), len(v))
				}
				fn(i, binary.BigEndian.Uint64(v))
				if idx.exact {
					break
				}
			}
		}
		if err := it.Close(); err != nil {
			return fmt.Errorf("%w: %s", ErrCorrupt, firstLine(err.Error()))
		}
	}
	return nil
}

// entry reads the entry with sequence number seq.
func (s *Store) entry(seq uint64) (Entry, error) {
	var e Entry
	ok, err := s.getJSON(entryKey(seq), &e)
	if err != nil {
		return Entry{}, err
	}
	if !ok {
		return Entry{}, fmt.Errorf("%w: entry %d is missing", ErrCorrupt, seq)
	}
	return e, nil
}

// offlinePlan is a checked run: the dataset's state with the run added.
type offlinePlan struct {
	dataset string
	state   DatasetState
	newCap  bool
	fresh   []RecordHash
	links   []link
	spent   float64
}

// planOffline resolves the run's dataset, applies its cap and composes the
// run with the dataset's earlier runs at the same unit, refusing it above
// the cap. It writes nothing.
func (s *Store) planOffline(r *OfflineRun) (offlinePlan, error) {
	e := &r.Entry
	if err := checkOfflineUnit(e.Unit); err != nil {
		return offlinePlan{}, err
	}
	if err := e.validate(); err != nil {
		return offlinePlan{}, err
	}
	res, err := s.resolve(FileRecords{ID: r.File, Records: r.Records, LegacyID: r.LegacyFile, Exact: r.Exact})
	if err != nil {
		return offlinePlan{}, err
	}
	id, fresh := res.dataset, res.fresh
	st, _, err := s.Dataset(id)
	if err != nil {
		return offlinePlan{}, err
	}
	if st.Units == nil {
		st.Units = map[Unit]UnitBudget{}
	}
	u, has := st.Units[e.Unit]
	p := offlinePlan{dataset: id, fresh: fresh, links: res.links}
	switch {
	case !has:
		if err := r.Cap.check(); err != nil {
			return offlinePlan{}, err
		}
		u.Cap, p.newCap = r.Cap, true
	case r.CapGiven && r.Cap != u.Cap:
		return offlinePlan{}, CapMismatch(e.Unit, u.Cap, r.Cap)
	}
	u.addRun(*e)
	var fd float64
	for _, f := range u.Fixed {
		fd += f.Delta
	}
	if fd > u.Cap.Delta || (len(u.Events) > 0 && fd >= u.Cap.Delta) {
		return offlinePlan{}, fmt.Errorf("%w: at unit %s the runs' fixed deltas would sum to %g, reaching the cap's delta %g (basic composition adds them)", ErrBudgetExceeded, e.Unit, fd, u.Cap.Delta)
	}
	if p.spent, err = u.Spent(); err != nil {
		return offlinePlan{}, err
	}
	if p.spent > u.Cap.Epsilon {
		return offlinePlan{}, fmt.Errorf("%w: the dataset would reach epsilon %.4g > cap %g at delta %g, unit %s, after %d runs", ErrBudgetExceeded, p.spent, u.Cap.Epsilon, u.Cap.Delta, e.Unit, u.Runs)
	}
	st.Units[e.Unit] = u
	p.state = st
	return p, nil
}

// CheckOffline reports, without writing anything, whether ChargeOffline
// would accept the run: the dataset it is charged to, its cap and the
// unit's composed epsilon after the run; or ErrBudgetExceeded,
// ErrCapMismatch or ErrOverlap. Callers check before validating the data (a
// malformed dataset then costs nothing) and charge after.
func (s *Store) CheckOffline(r OfflineRun) (OfflineCharge, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return OfflineCharge{}, ErrClosed
	}
	p, err := s.planOffline(&r)
	if err != nil {
		return OfflineCharge{}, err
	}
	return OfflineCharge{Dataset: p.dataset, NewCap: p.newCap, Cap: p.state.Units[r.Entry.Unit].Cap, Spent: p.spent}, nil
}

// ChargeOffline records an offline run on the dataset its records belong
// to, refusing it (and writing nothing) as CheckOffline does. In one synced
// batch it writes the run's entry (which records the cap when the run
// registers it, the file's id, its records new to the dataset and its
// records known only by their legacy hash, whose identities it links to
// the entries that hold them), the dataset's budgets, the record, link and
// file index entries, and the head.
// A file whose records overlap a registered dataset is charged to that
// dataset, and its other records join it.
func (s *Store) ChargeOffline(r OfflineRun) (OfflineCharge, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return OfflineCharge{}, ErrClosed
	}
	p, err := s.planOffline(&r)
	if err != nil {
		return OfflineCharge{}, err
	}
	u := p.state.Units[r.Entry.Unit]
	e := r.Entry
	e.Kind, e.DatasetID, e.File = KindOffline, p.dataset, r.File
	e.Cap, e.Reason, e.DerivedFrom, e.Released, e.PolicyVersion, e.Users = nil, "", 0, false, 0, nil
	if p.newCap {
		c := u.Cap
		e.Cap = &c
	}
	e.NewRecords, e.NewRecordsDigest = len(p.fresh), ""
	if len(p.fresh) > 0 {
		e.NewRecordsDigest = recordsDigest(p.fresh)
	}
	e.LinkedRecords, e.LinkedRecordsDigest = len(p.links), ""
	if len(p.links) > 0 {
		e.LinkedRecordsDigest = linksDigest(p.links)
	}
	h, err := s.Head()
	if err != nil {
		return OfflineCharge{}, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	if e, err = s.appendEntry(b, h, e); err != nil {
		return OfflineCharge{}, err
	}
	if err := s.markIdentity(b); err != nil {
		return OfflineCharge{}, err
	}
	if err := indexRecords(b, p.fresh, e.Seq); err != nil {
		return OfflineCharge{}, err
	}
	if err := indexLinks(b, p.links, e.Seq); err != nil {
		return OfflineCharge{}, err
	}
	if err := s.indexFile(b, r.File, p.dataset); err != nil {
		return OfflineCharge{}, err
	}
	if err := setJSON(b, budgetKey(p.dataset), p.state); err != nil {
		return OfflineCharge{}, err
	}
	if err := s.commit(b, h, Head{Seq: e.Seq, Hash: e.Hash, Version: h.Version}); err != nil {
		return OfflineCharge{}, fmt.Errorf("ledger: offline charge: %w", err)
	}
	return OfflineCharge{Dataset: p.dataset, NewCap: p.newCap, Cap: u.Cap, Spent: p.spent, Entry: e}, nil
}

// DerivedFile is a file an offline run wrote from its dataset.
type DerivedFile struct {
	// ID is the file's content id.
	ID string
	// Records are the identities of its records.
	Records []RecordHash
	// Exact are its records' exact hashes (sessionlog.HashRecord), parallel
	// to Records, for a released file: a record is read as released only if
	// it is one of them exactly (Lineage.Released). Nil: Records are taken
	// as the exact hashes too.
	Exact []RecordHash
	// Note says what the file is, e.g. "svt stable prefixes".
	Note string
	// Released says that the file is the output of a differentially
	// private release, already charged to the dataset by the run it is
	// derived from, and may be read as public (an SVT run's stable
	// prefixes; not its unstable set). See Entry.Released and Lineage.
	Released bool
}

// RegisterDerived records files that the offline run with sequence number
// from wrote from its dataset (an SVT release's outputs) as part of that
// dataset: one derived_file entry per file, and the files' records that no
// dataset holds yet join the run's dataset in the record index, so that any
// later run on them (or on a subset of them) is charged to it. A record some
// dataset already holds stays with it, and a record two of the files share
// goes with the first of them (list a released file first: its records are
// public). A released file's exact hashes (DerivedFile.Exact) are linked to
// its entry, whoever holds the records, so that the file and its subsets
// read as released (Lineage). Call it before the files are written: one
// synced batch, so a file on disk is never missing from the ledger.
func (s *Store) RegisterDerived(from uint64, files []DerivedFile) ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	run, err := s.entry(from)
	if err != nil {
		return nil, err
	}
	if run.Kind != KindOffline {
		return nil, fmt.Errorf("%w: entry %d is a %s, not an offline run", ErrInvalid, from, run.Kind)
	}
	h, err := s.Head()
	if err != nil {
		return nil, err
	}
	prev := h
	b := s.db.NewBatch()
	defer b.Close()
	claimed := map[RecordHash]bool{}
	registered := map[string]bool{}
	if err := s.markIdentity(b); err != nil {
		return nil, err
	}

	var out []Entry
	for _, f := range files {
		if f.ID == "" || f.Note == "" {
			return nil, fmt.Errorf("%w: derived file without id or note", ErrInvalid)
		}
		var fresh []RecordHash
		uniq := sortedUnique(f.Records)
		held := make([]bool, len(uniq))
		if err := s.holdersOf(len(uniq), func(i int) RecordHash { return uniq[i] }, func(i int, _ uint64) { held[i] = true }); err != nil {
			return nil, err
		}
		for i, r := range uniq {
			if claimed[r] {
				continue
			}
			if !held[i] {
				fresh = append(fresh, r)
				claimed[r] = true
			}
		}
		var exact []RecordHash
		if f.Released {
			if f.Exact == nil {
				f.Exact = f.Records
			}
			if len(f.Exact) != len(f.Records) {
				return nil, fmt.Errorf("%w: released derived file with %d exact hashes for %d records", ErrInvalid, len(f.Exact), len(f.Records))
			}
			exact = sortedUnique(f.Exact)
		}
		e := Entry{Kind: KindDerived, Mechanism: f.Note, DatasetID: run.DatasetID, File: f.ID, DerivedFrom: from,
			Released: f.Released, Seeded: run.Seeded, NewRecords: len(fresh), LinkedRecords: len(exact)}
		if len(fresh) > 0 {
			e.NewRecordsDigest = recordsDigest(fresh)
		}
		// The links' target is the entry itself, whose seq appendEntry
		// assigns: h.Seq + 1.
		links := make([]link, len(exact))
		for i, x := range exact {
			links[i] = link{h: x, target: h.Seq + 1}
		}
		if len(links) > 0 {
			e.LinkedRecordsDigest = linksDigest(links)
		}
		if e, err = s.appendEntry(b, h, e); err != nil {
			return nil, err
		}
		if err := indexRecords(b, fresh, e.Seq); err != nil {
			return nil, err
		}
		if err := indexLinks(b, links, e.Seq); err != nil {
			return nil, err
		}
		if !registered[f.ID] {
			registered[f.ID] = true
			if err := s.indexFile(b, f.ID, run.DatasetID); err != nil {
				return nil, err
			}
		}
		h = Head{Seq: e.Seq, Hash: e.Hash, Version: h.Version}
		out = append(out, e)
	}
	if err := s.commit(b, prev, h); err != nil {
		return nil, fmt.Errorf("ledger: derived files: %w", err)
	}
	return out, nil
}

// LinkFile links the identities of a file's records that the ledger holds
// only under their exact hashes (records of a dataset registered before
// content hashes, FileRecords) to the entries that hold them, in one
// records_linked entry (KindLink) with the reason: afterwards a copy of the
// file stripped of ids or behaviour probabilities, or reformatted, is
// recognised as that dataset's, as after a run charged on the file. It
// costs nothing and reads no data beyond the hashes. It returns the
// dataset and the entry; with nothing to link (Entry.Seq 0) it writes
// nothing. A file none of whose records the ledger holds is ErrNotFound; a
// file of several datasets is ErrOverlap.
func (s *Store) LinkFile(f FileRecords, reason string) (string, Entry, error) {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return "", Entry{}, fmt.Errorf("%w: a link needs a reason", ErrInvalid)
	}
	if f.Exact == nil {
		return "", Entry{}, fmt.Errorf("%w: linking needs the records' exact hashes", ErrInvalid)
	}
	f.Public = false
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", Entry{}, ErrClosed
	}
	r, err := s.resolve(f)
	if err != nil {
		return "", Entry{}, err
	}
	if len(r.fresh) == len(r.ids) {
		return "", Entry{}, fmt.Errorf("%w: no record of the file is in the ledger", ErrNotFound)
	}
	if len(r.links) == 0 {
		return r.dataset, Entry{}, nil
	}
	if _, ok, err := s.Dataset(r.dataset); err != nil || !ok {
		return "", Entry{}, fmt.Errorf("%w: the file's dataset has no budget in this ledger (%v)", ErrNotFound, err)
	}
	e := Entry{Kind: KindLink, Mechanism: "link: records known by their exact hashes, linked by content", DatasetID: r.dataset, File: f.ID,
		Reason: reason, LinkedRecords: len(r.links), LinkedRecordsDigest: linksDigest(r.links)}
	h, err := s.Head()
	if err != nil {
		return "", Entry{}, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	if e, err = s.appendEntry(b, h, e); err != nil {
		return "", Entry{}, err
	}
	if err := indexLinks(b, r.links, e.Seq); err != nil {
		return "", Entry{}, err
	}
	if err := s.commit(b, h, Head{Seq: e.Seq, Hash: e.Hash, Version: h.Version}); err != nil {
		return "", Entry{}, fmt.Errorf("ledger: link: %w", err)
	}
	return r.dataset, e, nil
}

// SetCap changes a dataset's cap at one unit (or sets it before the unit's
// first run) and writes a dataset_cap entry with the reason, hash-chained
// like every entry. A cap below what the unit has spent is allowed (it
// refuses every later run); a delta at which the unit's earlier runs no
// longer compose (their fixed deltas reach it) is refused.
func (s *Store) SetCap(dataset string, unit Unit, c Cap, reason string) (Entry, error) {
	if err := checkOfflineUnit(unit); err != nil {
		return Entry{}, err
	}
	if err := c.check(); err != nil {
		return Entry{}, err
	}
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return Entry{}, fmt.Errorf("%w: a cap change needs a reason", ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Entry{}, ErrClosed
	}
	st, ok, err := s.Dataset(dataset)
	if err != nil {
		return Entry{}, err
	}
	if !ok {
		return Entry{}, fmt.Errorf("%w: no dataset %s in this ledger (a dataset is registered by its first private run)", ErrNotFound, dataset)
	}
	u := st.Units[unit]
	old := u.Cap
	u.Cap = c
	if _, err := u.Spent(); err != nil {
		return Entry{}, fmt.Errorf("%w: the %d earlier runs at unit %s do not compose at delta %g", err, u.Runs, unit, c.Delta)
	}
	st.Units[unit] = u
	e := Entry{Kind: KindCap, Unit: unit, DatasetID: dataset, Cap: &c, Reason: reason,
		Mechanism: fmt.Sprintf("set-cap: (epsilon %g, delta %g) -> (epsilon %g, delta %g)", old.Epsilon, old.Delta, c.Epsilon, c.Delta)}
	h, err := s.Head()
	if err != nil {
		return Entry{}, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	if e, err = s.appendEntry(b, h, e); err != nil {
		return Entry{}, err
	}
	if err := setJSON(b, budgetKey(dataset), st); err != nil {
		return Entry{}, err
	}
	if err := s.commit(b, h, Head{Seq: e.Seq, Hash: e.Hash, Version: h.Version}); err != nil {
		return Entry{}, fmt.Errorf("ledger: cap: %w", err)
	}
	s.log.Info().Str("dataset", dataset).Str("unit", string(unit)).Float64("epsilon", c.Epsilon).Float64("delta", c.Delta).
		Float64("old_epsilon", old.Epsilon).Float64("old_delta", old.Delta).Str("reason", reason).Uint64("seq", e.Seq).Msg("dataset cap set")
	return e, nil
}

// indexRecords maps each record to the entry that registered it.
func indexRecords(b *pebble.Batch, records []RecordHash, seq uint64) error {
	v := be64(nil, seq)
	for _, r := range records {
		if err := b.Set(recordKey(r), v, nil); err != nil {
			return err
		}
	}
	return nil
}

// indexLinks links each record hash to its target entry, under the
// linking entry seq.
func indexLinks(b *pebble.Batch, links []link, seq uint64) error {
	for _, l := range links {
		if err := b.Set(linkKey(l.h, seq), be64(nil, l.target), nil); err != nil {
			return err
		}
	}
	return nil
}

// linksDigest is the hex SHA-256 of links sorted by hash: each hash and its
// target entry's seq (big-endian).
func linksDigest(sorted []link) string {
	h := sha256.New()
	h.Write([]byte("dprl ledger links\x00"))
	var n [8]byte
	for i := range sorted {
		h.Write(sorted[i].h[:])
		binary.BigEndian.PutUint64(n[:], sorted[i].target)
		h.Write(n[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// indexFile maps a file's content id to the dataset it is registered in,
// unless it already is in one.
func (s *Store) indexFile(b *pebble.Batch, file, dataset string) error {
	v, err := s.get(fileKey(file))
	if err != nil || v != nil {
		return err
	}
	return b.Set(fileKey(file), []byte(dataset), nil)
}

// recordsDigest is the hex SHA-256 of sorted, distinct record hashes.
func recordsDigest(sorted []RecordHash) string {
	h := sha256.New()
	h.Write([]byte("dprl ledger records\x00"))
	for i := range sorted {
		h.Write(sorted[i][:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// sortedUnique returns the distinct hashes in increasing order.
func sortedUnique(records []RecordHash) []RecordHash {
	out := slices.Clone(records)
	slices.SortFunc(out, func(a, b RecordHash) int { return bytes.Compare(a[:], b[:]) })
	return slices.Compact(out)
}
