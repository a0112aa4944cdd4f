package ledger

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"dprl/noise"
)

// Report is the result of Verify.
type Report struct {
	Head         Head `json:"head"`
	Entries      int  `json:"entries"`
	Releases     int  `json:"releases"`
	OfflineRuns  int  `json:"offline_runs"`
	CapChanges   int  `json:"cap_changes"`
	DerivedFiles int  `json:"derived_files"`
	Users        int  `json:"users"`
	Datasets     int  `json:"datasets"`
	// Budgets are the datasets' totals per unit, recomputed from the
	// entries, by dataset and unit.
	Budgets  []DatasetBudget `json:"budgets"`
	Problems []string        `json:"problems"`
	// Notes are findings that are not damage: a store of an earlier
	// version without head records, or the one head record a crash
	// between a commit and its record leaves out (a writable open writes
	// it).
	Notes []string `json:"notes,omitempty"`
}

// DatasetBudget is a dataset's total at one protected unit.
type DatasetBudget struct {
	Dataset string `json:"dataset"`
	Unit    Unit   `json:"unit"`
	Runs    int    `json:"runs"`
	// Epsilon is the composed epsilon of the unit's runs at Cap.Delta.
	Epsilon float64 `json:"epsilon"`
	Cap     Cap     `json:"cap"`
}

// OK reports whether Verify found no problem.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// epsTolerance is the relative difference allowed between a recorded and a
// recomputed epsilon (the computation is deterministic; this absorbs only
// the last bits of floating-point formatting).
const epsTolerance = 1e-9

// Verify recomputes the hash chain, every entry's epsilon from its recorded
// parameters, the head pointer, the snapshots the releases pay for, the user
// counters, the correlated-noise streams (each release's factor and
// sensitivity, every user's participation pattern, the noise records'
// shape, checksums and chaining: verifyCorrelation), the datasets' caps and
// per-unit totals (and that no run was charged above the cap in force), and
// the record index; checks that only derived files are marked released, the
// user key against the fingerprint the store was created with, and every
// record of the head file against the entry it names (so a store that lost
// committed entries fails); and lists every mismatch in the report. The
// error is for failures to read the store (a damaged file), wrapping
// ErrCorrupt.
func (s *Store) Verify() (Report, error) {
	var r Report
	problem := func(format string, args ...any) { r.Problems = append(r.Problems, fmt.Sprintf(format, args...)) }
	r.Notes = append(r.Notes, s.notes...)
	head, err := s.Head()
	if err != nil {
		return r, err
	}
	r.Head = head
	recs, hi, err := s.verifyAnchor(problem)
	if err != nil {
		return r, err
	}
	snaps, err := s.snapshotVersions()
	if err != nil {
		return r, err
	}
	v := entryReplay{recs: recs, snaps: snaps, users: map[UserKey]*UserState{}, sessions: map[SessionKey]uint64{}}
	err = s.Entries(func(e Entry) error {
		v.entry(e, &r, problem)
		return nil
	})
	if err != nil {
		return r, err
	}
	if head.Seq != v.prev.Seq || head.Hash != v.prev.Hash {
		problem("head (seq %d, hash %.12s) does not point at the last entry (seq %d, hash %.12s)", head.Seq, head.Hash, v.prev.Seq, v.prev.Hash)
	}
	s.verifyHeadsEnd(v.recs, hi, head, &r, problem)
	note := func(format string, args ...any) { r.Notes = append(r.Notes, fmt.Sprintf(format, args...)) }
	if err := s.verifyNoise(v.lastRelease, v.tail, problem, note); err != nil {
		return r, err
	}
	if head.Version != v.version {
		problem("head version %d, last released version %d", head.Version, v.version)
	}
	if err := s.verifyUsers(v.users, &r, problem); err != nil {
		return r, err
	}
	if err := s.verifySessions(v.sessions, problem); err != nil {
		return r, err
	}
	err = s.verifyOffline(v.offline, &r, problem)
	return r, err
}

// snapshotVersions returns the versions that have a non-empty snapshot
// (one sequential scan rather than a lookup per release).
func (s *Store) snapshotVersions() (map[uint64]bool, error) {
	snaps := map[uint64]bool{}
	err := s.scan(prefSnap, prefixEnd(prefSnap), func(k, v []byte) error {
		if len(k) == len(prefSnap)+8 && len(v) > 0 {
			snaps[be64Value(k[len(prefSnap):])] = true
		}
		return nil
	})
	return snaps, err
}

// entryReplay is what Verify carries from entry to entry: the head file's
// records not yet matched, the versions with a snapshot, the user counters
// replayed from the releases, the offline entries (checked afterwards by
// verifyOffline), the previous entry, the last released version, the
// latest release (for its stream's continuity) and the current stream's
// last releases (for its noise records).
type entryReplay struct {
	recs        map[uint64]headRec
	snaps       map[uint64]bool
	users       map[UserKey]*UserState
	sessions    map[SessionKey]uint64 // session -> the version that used it
	offline     []Entry
	prev        Entry
	version     uint64
	lastRelease *Entry
	tail        streamTail
}

// entry checks the next entry against the chain, its kind's rules and its
// record in the head file, and replays it.
func (v *entryReplay) entry(e Entry, r *Report, problem func(string, ...any)) {
	r.Entries++
	checkChained(e, v.prev, problem)
	switch e.Kind {
	case KindRelease:
		r.Releases++
		v.release(e, problem)
	case KindOffline, KindCap, KindDerived, KindLink:
		v.offline = append(v.offline, e)
	case KindWriter:
		if e.Writer == "" || e.Lease == 0 || len(e.UserKeyID) != 64 || e.Epsilon != 0 || len(e.Events) != 0 || len(e.Fixed) != 0 || len(e.Users) != 0 {
			problem("entry %d: a writer entry must name its writer and lease and charge nothing", e.Seq)
		}
	default:
		problem("entry %d: unknown kind %q", e.Seq, e.Kind)
	}
	if h, ok := v.recs[e.Seq]; ok {
		delete(v.recs, e.Seq)
		if h.hash() != e.Hash || h.Version != v.version {
			problem("entry %d (hash %.12s, version %d) differs from its record in %s (hash %.12s, version %d)", e.Seq, e.Hash, v.version, headsFile, h.hash(), h.Version)
		}
	}
	v.prev = e
}

// checkChained checks an entry against the one before it (its sequence number
// and previous hash), its own hash and epsilon, and that only a derived
// file is marked released.
func checkChained(e, prev Entry, problem func(string, ...any)) {
	if e.Seq != prev.Seq+1 {
		problem("entry %d follows entry %d", e.Seq, prev.Seq)
	}
	if e.PrevHash != prev.Hash {
		problem("entry %d: prev_hash %.12s does not match entry %d's hash %.12s", e.Seq, e.PrevHash, prev.Seq, prev.Hash)
	}
	if h, err := e.computeHash(); err != nil || h != e.Hash {
		problem("entry %d: hash %.12s does not match its contents (%.12s)", e.Seq, e.Hash, h)
	}
	if eps, err := e.recompute(); err != nil {
		problem("entry %d: epsilon cannot be recomputed: %v", e.Seq, err)
	} else if math.Abs(eps-e.Epsilon) > epsTolerance*math.Max(eps, 1e-300) {
		problem("entry %d: recorded epsilon %.10g, recomputed %.10g from its parameters", e.Seq, e.Epsilon, eps)
	}
	if e.Released && e.Kind != KindDerived {
		problem("entry %d: a %s marked released (only a derived file is a release's output)", e.Seq, e.Kind)
	}
	if e.Sampler != "" && !noise.ExactSampler(e.Sampler) {
		problem("entry %d: sampler %q is not an exact sampler: the recomputed epsilon assumes the exact law", e.Seq, e.Sampler)
	}
}

// release replays a release: its version follows the last one and has a
// snapshot, its correlated noise continues its stream, and each of its
// users' counters advances.
func (v *entryReplay) release(e Entry, problem func(string, ...any)) {
	if e.PolicyVersion != v.version+1 {
		problem("entry %d: releases version %d after version %d", e.Seq, e.PolicyVersion, v.version)
	}
	v.version = e.PolicyVersion
	for _, k := range e.Sessions {
		if at, ok := v.sessions[k]; ok {
			problem("entry %d: session %.12s was used by version %d already", e.Seq, k, at)
			continue
		}
		v.sessions[k] = e.PolicyVersion
	}
	if !v.snaps[e.PolicyVersion] {
		problem("entry %d: %v: snapshot of version %d", e.Seq, ErrNotFound, e.PolicyVersion)
	}
	verifyCorrelation(e, v.lastRelease, v.users, problem)
	v.lastRelease = &e
	v.tail.note(e)
	z, err := e.userZ()
	if err != nil {
		problem("entry %d: %v", e.Seq, err)
		return
	}
	for _, u := range e.Users {
		st := v.users[u]
		if st == nil {
			st = &UserState{}
			v.users[u] = st
		}
		st.Updates++
		st.SumInvZ2 += 1 / (z * z)
		st.LastVersion = e.PolicyVersion
	}
}

// verifyUsers compares the stored user counters with those the releases
// give (users), counting the stored ones into r.
func (s *Store) verifyUsers(users map[UserKey]*UserState, r *Report, problem func(string, ...any)) error {
	stored := map[UserKey]bool{}
	err := s.Users(func(k UserKey, st UserState) error {
		r.Users++
		stored[k] = true
		want := users[k]
		if want == nil {
			problem("user %s has a counter but no entry", k)
			return nil
		}
		if st.Updates != want.Updates || st.LastVersion != want.LastVersion ||
			math.Abs(st.SumInvZ2-want.SumInvZ2) > 1e-12*want.SumInvZ2 {
			problem("user %s: counter %+v, entries give %+v", k, st, *want)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for k := range users {
		if !stored[k] {
			problem("user %s took part in releases but has no counter", k)
		}
	}
	return nil
}

// verifyAnchor checks the user key against the store's anchor record and
// reads the head file's records (nil when the store has no anchor: a store
// of an earlier version, which Open notes).
func (s *Store) verifyAnchor(problem func(string, ...any)) (map[uint64]headRec, headsInfo, error) {
	var anchor storeAnchor
	anchored, err := s.getJSON(keyAnchor, &anchor)
	if err != nil || !anchored {
		return nil, headsInfo{}, err
	}
	fp, err := anchor.fingerprint()
	if err != nil {
		problem("%v", err)
		return nil, headsInfo{}, nil
	}
	if keyFingerprint(s.userKey) != fp {
		problem("%s is not the key the ledger was created with (fingerprint %.16s): user counters would not be found", userKeyFile, hex.EncodeToString(fp[:]))
	}
	recs := map[uint64]headRec{}
	hi, err := scanHeads(s.fs, filepath.Join(s.dir, headsFile), func(h headRec) error {
		recs[h.Seq] = h
		return nil
	})
	switch {
	case err != nil:
		problem("%s: %v", headsFile, err)
		return nil, hi, nil
	case hi.fingerprint != fp:
		problem("%s was written for another user key than the store's", headsFile)
	}
	return recs, hi, nil
}

// verifyHeadsEnd reports the head file's records that no entry matched
// (committed entries the store lost) and checks its end against the head.
func (s *Store) verifyHeadsEnd(unmatched map[uint64]headRec, hi headsInfo, head Head, r *Report, problem func(string, ...any)) {
	if unmatched == nil {
		return
	}
	if len(unmatched) > 0 {
		seqs := make([]uint64, 0, len(unmatched))
		for seq := range unmatched {
			seqs = append(seqs, seq)
		}
		slices.Sort(seqs)
		problem("%s records %d committed heads the store lacks (entries %d to %d): the store lost them (a damaged or deleted write-ahead log or MANIFEST, or an older copy of ledger/ restored)", headsFile, len(seqs), seqs[0], seqs[len(seqs)-1])
	}
	switch last := hi.last; {
	case last.Seq == head.Seq && hi.torn > 0:
		problem("%s ends with %d bytes of a damaged record after the head's record", headsFile, hi.torn)
	case last.Seq < head.Seq:
		v, err := s.get(keyPrev)
		if err != nil || len(v) != 8 || be64Value(v) != last.Seq {
			problem("the store (entry %d) is more than one commit ahead of %s (entry %d): the head file lost records", head.Seq, headsFile, last.Seq)
			return
		}
		r.Notes = append(r.Notes, fmt.Sprintf("the store is one commit (entry %d) ahead of %s: a crash between the commit and its head record; a writable open writes it", head.Seq, headsFile))
	}
}

// verifyOffline replays the offline entries (runs, cap changes, derived
// files) in order into each dataset's per-unit budgets, checks every run
// against the cap in force when it was charged, compares the replay with
// the stored budgets, checks the file index, and recomputes each entry's
// new-record digest from the record index.
func (s *Store) verifyOffline(entries []Entry, r *Report, problem func(string, ...any)) error {
	p := replayOffline(entries, r, problem)
	if err := s.verifyBudgets(p.budgets, problem); err != nil {
		return err
	}
	r.Datasets, r.Budgets = reportBudgets(p.budgets)
	if err := s.verifyFileIndex(p.files, problem); err != nil {
		return err
	}
	if err := s.verifyRecordIndex(p.registers, problem); err != nil {
		return err
	}
	return s.verifyLinks(entries, problem)
}

// offlineReplay is the offline entries replayed in order: each dataset's
// per-unit budgets, the runs by sequence number, the entries that register
// new records, and each file's dataset (that of its first entry).
type offlineReplay struct {
	budgets   map[string]*DatasetState
	runs      map[uint64]Entry
	registers map[uint64]Entry
	files     map[string]string
}

// replayOffline replays the offline entries in order, counting runs, cap
// changes and derived files into r and reporting every entry that does not
// follow from the ones before it.
func replayOffline(entries []Entry, r *Report, problem func(string, ...any)) offlineReplay {
	p := offlineReplay{
		budgets:   map[string]*DatasetState{},
		runs:      map[uint64]Entry{},
		registers: map[uint64]Entry{},
		files:     map[string]string{},
	}
	for _, e := range entries {
		p.index(e)
		if e.DatasetID == "" {
			problem("entry %d: %s without a dataset", e.Seq, e.Kind)
			continue
		}
		switch e.Kind {
		case KindOffline:
			r.OfflineRuns++
			p.run(e, problem)
		case KindCap:
			r.CapChanges++
			p.capChange(e, problem)
		case KindLink:
			if p.budgets[e.DatasetID] == nil || e.LinkedRecords == 0 {
				problem("entry %d: links %d records to dataset %s, which has no earlier run", e.Seq, e.LinkedRecords, e.DatasetID)
			}
		case KindDerived:
			r.DerivedFiles++
			if src, ok := p.runs[e.DerivedFrom]; !ok || src.DatasetID != e.DatasetID {
				problem("entry %d: derived file %s of dataset %s names entry %d, not an earlier run on that dataset", e.Seq, e.File, e.DatasetID, e.DerivedFrom)
			}
		}
	}
	return p
}

// index notes the entry's file (in the dataset of its first entry) and
// whether it registers new records.
func (p *offlineReplay) index(e Entry) {
	if (e.Kind == KindOffline || e.Kind == KindDerived) && e.File != "" && e.DatasetID != "" {
		if _, ok := p.files[e.File]; !ok {
			p.files[e.File] = e.DatasetID
		}
	}
	if e.NewRecords > 0 || e.NewRecordsDigest != "" {
		p.registers[e.Seq] = e
	}
}

// dataset returns the replayed state of a dataset, adding it if new.
func (p *offlineReplay) dataset(id string) *DatasetState {
	d := p.budgets[id]
	if d == nil {
		d = &DatasetState{Units: map[Unit]UnitBudget{}}
		p.budgets[id] = d
	}
	return d
}

// run replays an offline run: the cap it registers (if any, and only for a
// unit without one), its charge, and the check against the cap in force.
func (p *offlineReplay) run(e Entry, problem func(string, ...any)) {
	p.runs[e.Seq] = e
	d := p.dataset(e.DatasetID)
	u, has := d.Units[e.Unit]
	switch {
	case e.Cap != nil && has:
		problem("entry %d registers a cap for dataset %s at unit %s, which already has one", e.Seq, e.DatasetID, e.Unit)
		u.Cap = *e.Cap
	case e.Cap != nil:
		if err := e.Cap.check(); err != nil {
			problem("entry %d: %v", e.Seq, err)
		}
		u.Cap = *e.Cap
	case !has:
		problem("entry %d: offline run on dataset %s at unit %s, which has no cap", e.Seq, e.DatasetID, e.Unit)
	}
	u.addRun(e)
	d.Units[e.Unit] = u
	checkRunCap(e, u, problem)
}

// checkRunCap reports a run that left its unit's total above the unit's
// cap, or that does not compose at the cap's delta (a unit without a cap
// has nothing to check).
func checkRunCap(e Entry, u UnitBudget, problem func(string, ...any)) {
	if u.Cap.Epsilon <= 0 {
		return
	}
	spent, err := u.Spent()
	switch {
	case err != nil:
		problem("entry %d: dataset %s at unit %s does not compose at its cap's delta %g: %v", e.Seq, e.DatasetID, e.Unit, u.Cap.Delta, err)
	case spent > u.Cap.Epsilon*(1+epsTolerance):
		problem("entry %d: dataset %s at unit %s reached epsilon %.10g, above its cap %g at delta %g", e.Seq, e.DatasetID, e.Unit, spent, u.Cap.Epsilon, u.Cap.Delta)
	}
}

// capChange replays a cap change: it needs a cap and a reason, and sets the
// unit's cap.
func (p *offlineReplay) capChange(e Entry, problem func(string, ...any)) {
	if p.budgets[e.DatasetID] == nil {
		problem("entry %d sets a cap on dataset %s before any run registered it", e.Seq, e.DatasetID)
	}
	d := p.dataset(e.DatasetID)
	if e.Cap == nil || strings.TrimSpace(e.Reason) == "" {
		problem("entry %d: a cap change without a cap or a reason", e.Seq)
		return
	}
	if err := e.Cap.check(); err != nil {
		problem("entry %d: %v", e.Seq, err)
	}
	u := d.Units[e.Unit]
	u.Cap = *e.Cap
	d.Units[e.Unit] = u
}

// verifyBudgets compares the stored budgets with the replayed ones (want),
// dataset by dataset and unit by unit.
func (s *Store) verifyBudgets(want map[string]*DatasetState, problem func(string, ...any)) error {
	stored := map[string]bool{}
	err := s.Datasets(func(id string, got DatasetState) error {
		stored[id] = true
		w := want[id]
		if w == nil {
			problem("dataset %s has a stored budget but no entry", id)
			return nil
		}
		for _, unit := range unitsOf(got, *w) {
			g, gok := got.Units[unit]
			x, xok := w.Units[unit]
			switch {
			case !gok || !xok:
				problem("dataset %s at unit %s: stored %v, entries give %v", id, unit, gok, xok)
			case g.Cap != x.Cap:
				problem("dataset %s at unit %s: stored cap (epsilon %g, delta %g), entries give (epsilon %g, delta %g)", id, unit, g.Cap.Epsilon, g.Cap.Delta, x.Cap.Epsilon, x.Cap.Delta)
			case !g.equal(x):
				problem("dataset %s at unit %s: stored total (%d runs) does not match its entries (%d runs)", id, unit, g.Runs, x.Runs)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for id := range want {
		if !stored[id] {
			problem("dataset %s has entries but no stored budget", id)
		}
	}
	return nil
}

// reportBudgets returns the number of datasets and their replayed totals,
// by dataset and unit, for the report.
func reportBudgets(want map[string]*DatasetState) (int, []DatasetBudget) {
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	budgets := []DatasetBudget{}
	for _, id := range ids {
		d := want[id]
		for _, unit := range unitsOf(*d) {
			u := d.Units[unit]
			b := DatasetBudget{Dataset: id, Unit: unit, Runs: u.Runs, Cap: u.Cap}
			if u.Cap.Delta > 0 {
				b.Epsilon, _ = u.Spent()
			}
			budgets = append(budgets, b)
		}
	}
	return len(ids), budgets
}

// verifyFileIndex checks the file index against the entries: each file in
// the dataset of its first entry (files).
func (s *Store) verifyFileIndex(files map[string]string, problem func(string, ...any)) error {
	indexed := map[string]bool{}
	err := s.scan(prefFile, prefixEnd(prefFile), func(k, v []byte) error {
		f, d := string(k[len(prefFile):]), string(v)
		indexed[f] = true
		if w, ok := files[f]; !ok || w != d {
			problem("file index: %s in dataset %q, entries give %q", f, d, w)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for f, d := range files {
		if !indexed[f] {
			problem("file %s of dataset %s is missing from the file index", f, d)
		}
	}
	return nil
}

// verifyRecordIndex recomputes each registering entry's new-record count
// and digest from the record index and compares them with the entry's.
func (s *Store) verifyRecordIndex(registers map[uint64]Entry, problem func(string, ...any)) error {
	type digest struct {
		n int
		h hash.Hash
	}
	found := map[uint64]*digest{}
	err := s.scan(prefRecord, prefixEnd(prefRecord), func(key, v []byte) error {
		k := key[len(prefRecord):]
		if len(k) != len(RecordHash{}) || len(v) != 8 {
			problem("record index: key of %d bytes, value of %d bytes", len(k), len(v))
			return nil
		}
		seq := binary.BigEndian.Uint64(v)
		g := found[seq]
		if g == nil {
			g = &digest{h: sha256.New()}
			g.h.Write([]byte("dprl ledger records\x00"))
			found[seq] = g
		}
		g.n++
		g.h.Write(k) // keys iterate in increasing order, as recordsDigest sorts
		return nil
	})
	if err != nil {
		return err
	}
	for seq, g := range found {
		e, ok := registers[seq]
		if !ok {
			problem("record index: %d records registered by entry %d, which registers none", g.n, seq)
			continue
		}
		if sum := hex.EncodeToString(g.h.Sum(nil)); g.n != e.NewRecords || sum != e.NewRecordsDigest {
			problem("entry %d: registered %d records (digest %.12s), the index holds %d (digest %.12s)", seq, e.NewRecords, e.NewRecordsDigest, g.n, sum)
		}
	}
	for seq, e := range registers {
		if found[seq] == nil {
			problem("entry %d: registered %d records, the index holds none of them", seq, e.NewRecords)
		}
	}
	return nil
}

// verifyLinks recomputes each entry's linked records (Entry.LinkedRecords)
// from the link index, and checks every link's target: an earlier offline
// run or derived file, or the linking entry itself when that is a released
// derived file.
func (s *Store) verifyLinks(entries []Entry, problem func(string, ...any)) error {
	type digest struct {
		n int
		h hash.Hash
	}
	offline := map[uint64]Entry{}
	linkers := map[uint64]Entry{}
	for _, e := range entries {
		if e.Kind == KindOffline || e.Kind == KindDerived {
			offline[e.Seq] = e
		}
		if e.LinkedRecords > 0 || e.LinkedRecordsDigest != "" {
			linkers[e.Seq] = e
		}
	}
	found := map[uint64]*digest{}
	var num [8]byte
	err := s.scan(prefLink, prefixEnd(prefLink), func(key, v []byte) error {
		k := key[len(prefLink):]
		if len(k) != len(RecordHash{})+8 || len(v) != 8 {
			problem("link index: key of %d bytes, value of %d bytes", len(k), len(v))
			return nil
		}
		seq, target := binary.BigEndian.Uint64(k[len(RecordHash{}):]), binary.BigEndian.Uint64(v)
		t, ok := offline[target]
		switch {
		case !ok || target > seq:
			problem("link index: entry %d links a record to entry %d, not an earlier offline run or derived file", seq, target)
		case target == seq && !(t.Kind == KindDerived && t.Released):
			problem("link index: entry %d links a record to itself, and is not a released derived file", seq)
		}
		g := found[seq]
		if g == nil {
			g = &digest{h: sha256.New()}
			g.h.Write([]byte("dprl ledger links\x00"))
			found[seq] = g
		}
		g.n++
		g.h.Write(k[:len(RecordHash{})]) // keys iterate in increasing hash order, as linksDigest sorts
		binary.BigEndian.PutUint64(num[:], target)
		g.h.Write(num[:])
		return nil
	})
	if err != nil {
		return err
	}
	for seq, g := range found {
		e, ok := linkers[seq]
		if !ok {
			problem("link index: %d records linked by entry %d, which links none", g.n, seq)
			continue
		}
		if sum := hex.EncodeToString(g.h.Sum(nil)); g.n != e.LinkedRecords || sum != e.LinkedRecordsDigest {
			problem("entry %d: linked %d records (digest %.12s), the index holds %d (digest %.12s)", seq, e.LinkedRecords, e.LinkedRecordsDigest, g.n, sum)
		}
	}
	for seq, e := range linkers {
		if found[seq] == nil {
			problem("entry %d: linked %d records, the index holds none of them", seq, e.LinkedRecords)
		}
	}
	return nil
}

// unitsOf returns the units of the states, sorted.
func unitsOf(ds ...DatasetState) []Unit {
	var us []Unit
	for _, d := range ds {
		for u := range d.Units {
			if !slices.Contains(us, u) {
				us = append(us, u)
			}
		}
	}
	slices.Sort(us)
	return us
}
