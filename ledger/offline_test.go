package ledger

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"dprl/ledger/accountant"
)

// recs returns n distinct record hashes named by tag.
func recs(tag string, n int) []RecordHash {
	out := make([]RecordHash, n)
	for i := range out {
		out[i] = sha256.Sum256([]byte(fmt.Sprintf("%s/%d", tag, i)))
	}
	return out
}

// gpopeRun is a trajectory-level run with its exact epsilon.
func gpopeRun(t *testing.T) Entry {
	t.Helper()
	e := Entry{Unit: UnitTrajectory, Mechanism: "gpope", Events: []accountant.Event{{Q: 0.01, Z: 1.1, Steps: 1000}}, Method: accountant.MethodRDP, Delta: 1e-5, Participants: 100}
	g, err := accountant.RDP{}.Epsilon(1e-5, e.Events...)
	if err != nil {
		t.Fatal(err)
	}
	e.Epsilon = g.Epsilon
	return e
}

// svtRun is an expert-level fixed-cost run.
func svtRun(eps, delta float64) Entry {
	return Entry{Unit: UnitExpert, Mechanism: "svt", Method: accountant.MethodRDP, Epsilon: eps, Delta: delta, Participants: 3,
		Fixed: []FixedCost{{Epsilon: eps, Delta: delta, Source: "Theorem 5.5"}}}
}

func mustVerify(t *testing.T, s *Store) Report {
	t.Helper()
	r, err := s.Verify()
	if err != nil || !r.OK() {
		t.Fatalf("verify: %v %+v", err, r)
	}
	return r
}

func TestOfflineCharges(t *testing.T) {
	s, _ := openTemp(t)
	run := gpopeRun(t)
	a := recs("a", 10)
	c := Cap{Epsilon: 2.5 * run.Epsilon, Delta: 1e-5}
	ch, err := s.ChargeOffline(OfflineRun{File: "A", Records: a, Entry: run, Cap: c, CapGiven: true})
	if err != nil || ch.Dataset != "A" || !ch.NewCap || ch.Entry.Cap == nil || *ch.Entry.Cap != c || ch.Entry.NewRecords != 10 || ch.Entry.File != "A" {
		t.Fatalf("first charge: %+v %v", ch, err)
	}
	// A later run without a cap uses the stored one; a different cap given
	// explicitly is refused, whatever its size.
	ch, err = s.ChargeOffline(OfflineRun{File: "A", Records: a, Entry: run, Cap: Cap{Epsilon: 10, Delta: 1e-5}})
	if err != nil || ch.NewCap || ch.Cap != c || ch.Entry.Cap != nil || ch.Entry.NewRecords != 0 {
		t.Fatalf("second charge: %+v %v", ch, err)
	}
	h0, _ := s.Head()
	if _, err := s.CheckOffline(OfflineRun{File: "A", Records: a, Entry: run, Cap: Cap{Epsilon: 1000, Delta: 1e-5}, CapGiven: true}); !errors.Is(err, ErrCapMismatch) {
		t.Errorf("larger cap given: %v, want ErrCapMismatch", err)
	}
	// Refused at the stored cap, by check and by charge, writing nothing.
	var refused bool
	for i := 0; i < 20 && !refused; i++ {
		_, cerr := s.CheckOffline(OfflineRun{File: "A", Records: a, Entry: run})
		_, err := s.ChargeOffline(OfflineRun{File: "A", Records: a, Entry: run})
		if errors.Is(cerr, ErrBudgetExceeded) != errors.Is(err, ErrBudgetExceeded) {
			t.Fatalf("check %v, charge %v", cerr, err)
		}
		if errors.Is(err, ErrBudgetExceeded) {
			refused = true
			d, _, _ := s.Dataset("A")
			spent, _ := d.Units[UnitTrajectory].Spent()
			if spent > c.Epsilon || spent < run.Epsilon {
				t.Errorf("spent %v, cap %v", spent, c.Epsilon)
			}
			if h, _ := s.Head(); h.Seq != h0.Seq+uint64(i) {
				t.Errorf("refused run wrote an entry")
			}
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if !refused {
		t.Fatal("cap never enforced")
	}
	r := mustVerify(t, s)
	if r.Datasets != 1 || len(r.Budgets) != 1 || r.Budgets[0].Cap != c || r.Budgets[0].Epsilon > c.Epsilon || r.Budgets[0].Runs < 2 {
		t.Errorf("report: %+v", r)
	}
}

func TestOfflineRecordsIdentity(t *testing.T) {
	s, _ := openTemp(t)
	run := gpopeRun(t)
	c := Cap{Epsilon: 100, Delta: 1e-5}
	a, b := recs("a", 10), recs("b", 5)
	if _, err := s.ChargeOffline(OfflineRun{File: "A", Records: a, Entry: run, Cap: c}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		file    string
		records []RecordHash
		want    string
		fresh   int
	}{
		{"subset (head -n)", "A3", a[:3], "A", 0},
		{"reordered with a duplicate", "A'", append(append([]RecordHash{a[9]}, a...), a[0]), "A", 0},
		{"superset: new records join", "A+", append(append([]RecordHash(nil), a...), recs("x", 2)...), "A", 2},
		{"after joining, the new records alone", "X", recs("x", 2)[1:], "A", 0},
		{"disjoint", "B", b, "B", 5},
	}
	for _, tc := range cases {
		ch, err := s.ChargeOffline(OfflineRun{File: tc.file, Records: tc.records, Entry: run, Cap: c})
		if err != nil || ch.Dataset != tc.want || ch.Entry.NewRecords != tc.fresh || ch.Entry.File != tc.file {
			t.Errorf("%s: dataset %q, %d new records, %v; want %q and %d", tc.name, ch.Dataset, ch.Entry.NewRecords, err, tc.want, tc.fresh)
		}
	}
	// Records of two datasets: refused, nothing written.
	h0, _ := s.Head()
	mixed := []RecordHash{a[0], b[0]}
	if _, err := s.ResolveDataset("AB", mixed); !errors.Is(err, ErrOverlap) || !strings.Contains(err.Error(), "2 registered datasets") {
		t.Errorf("resolve of mixed records: %v", err)
	}
	if _, err := s.ChargeOffline(OfflineRun{File: "AB", Records: mixed, Entry: run, Cap: c}); !errors.Is(err, ErrOverlap) {
		t.Errorf("charge of mixed records: %v", err)
	}
	if h, _ := s.Head(); h.Seq != h0.Seq {
		t.Error("refused overlap wrote an entry")
	}
	// A file registered in A (here derived from a run on A) stays A's even
	// when one of its records equals one of B's by coincidence; the same
	// records in an unregistered file are refused.
	first := mustEntry(t, s, 1)
	coincide := []RecordHash{b[1], recs("d", 1)[0]}
	if _, err := s.RegisterDerived(first.Seq, []DerivedFile{{ID: "D", Records: coincide, Note: "derived"}}); err != nil {
		t.Fatal(err)
	}
	if id, err := s.ResolveDataset("D", coincide); err != nil || id != "A" {
		t.Errorf("registered derived file: %q %v, want A", id, err)
	}
	if _, err := s.ResolveDataset("D'", coincide); !errors.Is(err, ErrOverlap) {
		t.Errorf("unregistered copy: %v, want ErrOverlap", err)
	}
	mustVerify(t, s)
}

func TestOfflineUnitsAndDerived(t *testing.T) {
	s, _ := openTemp(t)
	a := recs("a", 6)
	run := gpopeRun(t)
	tc := Cap{Epsilon: 100, Delta: 1e-5}
	ec := Cap{Epsilon: 12, Delta: 0.5}
	sv, err := s.ChargeOffline(OfflineRun{File: "A", Records: a, Entry: svtRun(5, 0.1), Cap: ec})
	if err != nil || !sv.NewCap || sv.Spent != 5 {
		t.Fatalf("svt: %+v %v", sv, err)
	}
	// The trajectory unit gets its own cap at its first run and its own
	// total: the expert-level cost is not in it, nor the other way round.
	tr, err := s.ChargeOffline(OfflineRun{File: "A", Records: a, Entry: run, Cap: tc})
	if err != nil || !tr.NewCap || tr.Cap != tc || tr.Spent != run.Epsilon {
		t.Fatalf("gpope: %+v %v (want spent %v)", tr, err, run.Epsilon)
	}
	d, _, _ := s.Dataset("A")
	if e, _ := d.Units[UnitExpert].Spent(); e != 5 {
		t.Errorf("expert total %v, want 5", e)
	}
	// The second SVT run composes at the expert unit only: 10 <= 12; a
	// third would reach 15 > 12 however the trajectory unit stands.
	if _, err := s.ChargeOffline(OfflineRun{File: "A", Records: a, Entry: svtRun(5, 0.1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CheckOffline(OfflineRun{File: "A", Records: a, Entry: svtRun(5, 0.1)}); !errors.Is(err, ErrBudgetExceeded) || !strings.Contains(err.Error(), "unit expert") {
		t.Errorf("third svt: %v", err)
	}
	// Derived files join the dataset: a run on them, or on part of one, is
	// charged to it.
	stable := recs("stable", 3)
	es, err := s.RegisterDerived(sv.Entry.Seq, []DerivedFile{{ID: "S", Records: stable, Note: "svt stable", Released: true}, {ID: "U", Records: append(recs("tail", 2), a[1]), Note: "svt unstable"}})
	if err != nil || len(es) != 2 || es[0].NewRecords != 3 || es[1].NewRecords != 2 || es[0].DatasetID != "A" || es[1].DerivedFrom != sv.Entry.Seq ||
		!es[0].Released || es[1].Released {
		t.Fatalf("derived: %+v %v", es, err)
	}
	ch, err := s.ChargeOffline(OfflineRun{File: "S1", Records: stable[1:2], Entry: run, Cap: tc})
	if err != nil || ch.Dataset != "A" || ch.NewCap {
		t.Errorf("run on a derived file: %+v %v", ch, err)
	}
	if _, err := s.RegisterDerived(es[0].Seq, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("derived from a derived entry: %v", err)
	}
	// SetCap: refused for unknown datasets, without a reason, and at a delta
	// the expert unit's fixed deltas (0.2) already pass.
	for _, bad := range []struct {
		id     string
		c      Cap
		reason string
		want   error
	}{
		{"nope", Cap{20, 0.5}, "r", ErrNotFound},
		{"A", Cap{20, 0.5}, " ", ErrInvalid},
		{"A", Cap{20, 0.1}, "r", ErrInvalid},
		{"A", Cap{0, 0.5}, "r", ErrInvalid},
	} {
		if _, err := s.SetCap(bad.id, UnitExpert, bad.c, bad.reason); !errors.Is(err, bad.want) {
			t.Errorf("SetCap(%s, %v, %q): %v, want %v", bad.id, bad.c, bad.reason, err, bad.want)
		}
	}
	e, err := s.SetCap("A", UnitExpert, Cap{20, 0.5}, "owner agreed")
	if err != nil || e.Kind != KindCap || e.Reason != "owner agreed" || *e.Cap != (Cap{20, 0.5}) {
		t.Fatalf("set-cap: %+v %v", e, err)
	}
	if _, err := s.ChargeOffline(OfflineRun{File: "A", Records: a, Entry: svtRun(5, 0.1)}); err != nil {
		t.Errorf("svt after raising the cap: %v", err)
	}
	r := mustVerify(t, s)
	if r.CapChanges != 1 || r.DerivedFiles != 2 || len(r.Budgets) != 2 || r.Budgets[0].Unit != UnitExpert || r.Budgets[0].Epsilon != 15 || r.Budgets[0].Cap.Epsilon != 20 || r.Budgets[1].Runs != 2 {
		t.Errorf("report %+v", r)
	}
}

func TestOfflineVerifyDetectsTampering(t *testing.T) {
	cases := []struct {
		name   string
		tamper func(t *testing.T, s *Store)
		want   string
	}{
		{"raised cap", func(t *testing.T, s *Store) {
			d, _, _ := s.Dataset("A")
			u := d.Units[UnitTrajectory]
			u.Cap.Epsilon = 1000
			d.Units[UnitTrajectory] = u
			mustSet(t, s, budgetKey("A"), d)
		}, "stored cap (epsilon 1000"},
		{"dropped run", func(t *testing.T, s *Store) {
			d, _, _ := s.Dataset("A")
			u := d.Units[UnitTrajectory]
			u.Runs, u.Events = 1, u.Events[:1]
			d.Units[UnitTrajectory] = u
			mustSet(t, s, budgetKey("A"), d)
		}, "stored total (1 runs) does not match its entries (2 runs)"},
		{"deleted budget", func(t *testing.T, s *Store) {
			if err := s.db.Delete(budgetKey("A"), nil); err != nil {
				t.Fatal(err)
			}
		}, "dataset A has entries but no stored budget"},
		{"unindexed record", func(t *testing.T, s *Store) {
			r := recs("a", 1)[0]
			if err := s.db.Delete(recordKey(r), nil); err != nil {
				t.Fatal(err)
			}
		}, "entry 1: registered 4 records"},
		{"file moved to another dataset", func(t *testing.T, s *Store) {
			if err := s.db.Set(fileKey("A"), []byte("B"), nil); err != nil {
				t.Fatal(err)
			}
		}, `file index: A in dataset "B", entries give "A"`},
		{"file index entry deleted", func(t *testing.T, s *Store) {
			if err := s.db.Delete(fileKey("A"), nil); err != nil {
				t.Fatal(err)
			}
		}, "file A of dataset A is missing from the file index"},
		{"released cap change", func(t *testing.T, s *Store) {
			h, _ := s.Head()
			e := Entry{Kind: KindCap, Unit: UnitTrajectory, Mechanism: "set-cap", DatasetID: "A", Cap: &Cap{Epsilon: 10, Delta: 1e-5}, Reason: "r", Released: true}
			b := s.db.NewBatch()
			e, _ = s.appendEntry(b, h, e)
			setJSON(b, keyHead, Head{Seq: e.Seq, Hash: e.Hash})
			if err := b.Commit(nil); err != nil {
				t.Fatal(err)
			}
		}, "entry 3: a dataset_cap marked released"},
		{"forged charge above the cap", func(t *testing.T, s *Store) {
			h, _ := s.Head()
			e := gpopeRun(t)
			e.Events[0].Steps = 1e6
			e.Epsilon, _ = e.recompute()
			e.Kind, e.DatasetID = KindOffline, "A"
			b := s.db.NewBatch()
			e, _ = s.appendEntry(b, h, e)
			setJSON(b, keyHead, Head{Seq: e.Seq, Hash: e.Hash})
			if err := b.Commit(nil); err != nil {
				t.Fatal(err)
			}
		}, "above its cap 10"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openTemp(t)
			run := gpopeRun(t)
			for range 2 {
				if _, err := s.ChargeOffline(OfflineRun{File: "A", Records: recs("a", 4), Entry: run, Cap: Cap{Epsilon: 10, Delta: 1e-5}}); err != nil {
					t.Fatal(err)
				}
			}
			mustVerify(t, s)
			tc.tamper(t, s)
			r, err := s.Verify()
			if err != nil || r.OK() || !strings.Contains(strings.Join(r.Problems, "\n"), tc.want) {
				t.Errorf("verify after tampering: %v, problems %q, want %q", err, r.Problems, tc.want)
			}
		})
	}
}

// TestLineage: a file's lineage counts its records unknown to the ledger and
// those that a released derived file of its dataset introduced; a record
// the dataset held before (a source trajectory copied into an unstable
// set), or one another dataset's release introduced first, is not
// released.
func TestLineage(t *testing.T) {
	s, _ := openTemp(t)
	a, b := recs("a", 6), recs("b", 4)
	svA, err := s.ChargeOffline(OfflineRun{File: "A", Records: a, Entry: svtRun(1, 0.01), Cap: Cap{Epsilon: 10, Delta: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	svB, err := s.ChargeOffline(OfflineRun{File: "B", Records: b, Entry: svtRun(1, 0.01), Cap: Cap{Epsilon: 10, Delta: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	// B's release first introduces a stable record that A's release then
	// holds too, by coincidence.
	shared := recs("shared", 1)
	stableA, tails, stableB := append(recs("stableA", 3), shared...), recs("tails", 2), append(recs("stableB", 2), shared...)
	if _, err := s.RegisterDerived(svB.Entry.Seq, []DerivedFile{{ID: "SB", Records: stableB, Note: "svt stable", Released: true}}); err != nil {
		t.Fatal(err)
	}
	_, err = s.RegisterDerived(svA.Entry.Seq, []DerivedFile{
		{ID: "SA", Records: stableA[:3], Note: "svt stable", Released: true},
		{ID: "UA", Records: append(append([]RecordHash(nil), tails...), a[0], a[1]), Note: "svt unstable"},
		{ID: "SA2", Records: stableA, Note: "svt stable, second release", Released: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		file       string
		records    []RecordHash
		want       Lineage
		known, pub bool
		err        error
	}{
		{"stable", "SA", stableA[:3], Lineage{Dataset: "A", Records: 3, Released: 3}, true, true, nil},
		{"part of the stable file, with a duplicate", "SA'", []RecordHash{stableA[1], stableA[1]}, Lineage{Dataset: "A", Records: 1, Released: 1}, true, true, nil},
		{"unstable: tails and source trajectories", "UA", append(append([]RecordHash(nil), tails...), a[0], a[1]), Lineage{Dataset: "A", Records: 4}, true, false, nil},
		{"the source log", "A", a, Lineage{Dataset: "A", Records: 6}, true, false, nil},
		{"stable and unstable", "SU", append(stableA[:3:3], tails...), Lineage{Dataset: "A", Records: 5, Released: 3}, true, false, nil},
		{"stable with a fresh record", "SX", append(stableA[:3:3], recs("x", 1)...), Lineage{Dataset: "A", Records: 4, Fresh: 1, Released: 3}, false, false, nil},
		{"all fresh", "X", recs("x", 2), Lineage{Dataset: "X", Records: 2, Fresh: 2}, false, false, nil},
		{"another dataset's release", "SB", stableB, Lineage{Dataset: "B", Records: 3, Released: 3}, true, true, nil},
		// A released record is linked to every release it is in exactly:
		// public by A's release as by B's.
		{"a record another release introduced first", "SA2", stableA, Lineage{Dataset: "A", Records: 4, Released: 4}, true, true, nil},
		{"that record alone: in two datasets' releases", "SH", shared, Lineage{}, false, false, ErrOverlap},
		{"records of two datasets", "AB", []RecordHash{stableA[0], stableB[0]}, Lineage{}, false, false, ErrOverlap},
		{"no records", "E", nil, Lineage{}, false, false, ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := s.Lineage(tc.file, tc.records)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Lineage: %v, want %v", err, tc.err)
				}
				return
			}
			same := l.Dataset == tc.want.Dataset && l.Records == tc.want.Records && l.Fresh == tc.want.Fresh && l.Released == tc.want.Released
			if err != nil || !same || l.Known() != tc.known || l.AllReleased() != tc.pub || len(l.NotReleased) != l.Records-l.Released {
				t.Fatalf("Lineage: %+v (known %v, released %v), %v; want %+v (%v, %v)", l, l.Known(), l.AllReleased(), err, tc.want, tc.known, tc.pub)
			}
			if id, err := s.ResolveDataset(tc.file, tc.records); err != nil || id != l.Dataset {
				t.Errorf("ResolveDataset: %q %v, Lineage gives %q", id, err, l.Dataset)
			}
		})
	}
	r := mustVerify(t, s)
	if r.DerivedFiles != 4 {
		t.Errorf("report %+v", r)
	}
	m, err := s.Summary(1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if d := m.Datasets["A"].DerivedFiles; len(d) != 3 || !d[0].Released || d[1].Released || !d[2].Released {
		t.Errorf("derived files of A: %+v", d)
	}
	// An unreleased derived entry is stored without the field.
	if raw, _ := s.get(entryKey(4)); !strings.Contains(string(raw), `"released":true`) {
		t.Errorf("released entry: %s", raw)
	}
	if raw, _ := s.get(entryKey(5)); strings.Contains(string(raw), "released") {
		t.Errorf("unreleased entry: %s", raw)
	}
}

// oldDerivedEntry is a derived_file entry as dprl wrote it before entries
// had a released field (RegisterDerived, captured from a store).
const oldDerivedEntry = `{"seq":2,"time":"2026-11-28T18:46:27.796177013Z","kind":"derived_file","unit":"","mechanism":"svt stable prefixes (stable.jsonl)","events":null,"method":"","epsilon":0,"delta":0,"participants":0,"seeded":false,"dataset_id":"A","file":"S","derived_from":1,"new_records":2,"new_records_digest":"80732da779dfa7a1e6bd48c62c8d62914f91ce2998c675853f84037ca0bd9926","prev_hash":"3b3c86081774bd788a42d0e5c37d750f74682d0ee9aafe4b5f79b006f9c255ba","hash":"5f90d4cc60357ea076a0541a4674a3512c27d1d82e334454e62b3535ccbe6e6c"}`

// TestOldDerivedEntry: an entry written without the released field decodes
// (strictly) as not released, keeps its hash, and encodes to the same bytes,
// so ledgers written before the field existed verify unchanged.
func TestOldDerivedEntry(t *testing.T) {
	var e Entry
	if err := decodeStrict([]byte(oldDerivedEntry), &e); err != nil {
		t.Fatal(err)
	}
	if e.Released || e.Kind != KindDerived {
		t.Errorf("decoded %+v", e)
	}
	if h, err := e.computeHash(); err != nil || h != e.Hash {
		t.Errorf("hash %s, %v; recorded %s", h, err, e.Hash)
	}
	if b, err := json.Marshal(e); err != nil || string(b) != oldDerivedEntry {
		t.Errorf("re-encoded:\n%s\nwas\n%s", b, oldDerivedEntry)
	}
	e.Released = true
	if h, _ := e.computeHash(); h == e.Hash {
		t.Error("the released field is not covered by the hash")
	}
}

// TestLinks: records an older ledger holds under their exact hashes are
// found by those; a run on them links their identities, so that a file
// with the same identities and other exact hashes (a stripped copy) is
// charged to the same dataset; Verify recomputes the links and finds them
// tampered with.
func TestLinks(t *testing.T) {
	setup := func(t *testing.T) (*Store, []RecordHash) {
		s, _ := openTemp(t)
		run := gpopeRun(t)
		exact, content := recs("exact", 4), recs("content", 4)
		// As an older dprl charged it: the exact hashes are the identities,
		// and the store has no identity mark.
		if _, err := s.ChargeOffline(OfflineRun{File: "OLD", Records: exact, Entry: run, Cap: Cap{Epsilon: 10, Delta: 1e-5}}); err != nil {
			t.Fatal(err)
		}
		if legacy, _, err := s.legacyRecords(); err != nil || legacy {
			t.Fatalf("a store whose first records this dprl wrote: legacy %v, %v", legacy, err)
		}
		if err := s.db.Delete(keyIdentity, nil); err != nil {
			t.Fatal(err)
		}
		ch, err := s.ChargeOffline(OfflineRun{File: "NEW", Records: content, LegacyFile: "OLD", Exact: exact, Entry: run})
		if err != nil || ch.Dataset != "OLD" || ch.Entry.NewRecords != 0 || ch.Entry.LinkedRecords != 4 {
			t.Fatalf("a run after the upgrade: %+v, %v", ch, err)
		}
		mustVerify(t, s)
		return s, content
	}
	t.Run("stripped copy", func(t *testing.T) {
		s, content := setup(t)
		l, err := s.LineageOf(FileRecords{ID: "STRIPPED", Records: content[1:], Exact: recs("other", 3)})
		if err != nil || l.Dataset != "OLD" || !l.Known() || l.Released != 0 {
			t.Fatalf("lineage of a stripped copy: %+v, %v", l, err)
		}
		if ds, e, err := s.LinkFile(FileRecords{ID: "NEW", Records: content, Exact: recs("exact", 4)}, "r"); err != nil || ds != "OLD" || e.Seq != 0 {
			t.Errorf("nothing left to link: %s %+v %v", ds, e, err)
		}
	})
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, s *Store, content []RecordHash)
		want   string
	}{
		{"deleted link", func(t *testing.T, s *Store, content []RecordHash) {
			if err := s.db.Delete(linkKey(content[0], 2), nil); err != nil {
				t.Fatal(err)
			}
		}, "entry 2: linked 4 records"},
		{"forged link", func(t *testing.T, s *Store, _ []RecordHash) {
			if err := s.db.Set(linkKey(recs("x", 1)[0], 1), be64(nil, 1), nil); err != nil {
				t.Fatal(err)
			}
		}, "records linked by entry 1, which links none"},
		{"link to a later entry", func(t *testing.T, s *Store, content []RecordHash) {
			if err := s.db.Set(linkKey(content[0], 2), be64(nil, 3), nil); err != nil {
				t.Fatal(err)
			}
		}, "not an earlier offline run or derived file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, content := setup(t)
			tc.tamper(t, s, content)
			r, err := s.Verify()
			if err != nil || r.OK() || !strings.Contains(strings.Join(r.Problems, "\n"), tc.want) {
				t.Errorf("verify after tampering: %v, problems %q, want %q", err, r.Problems, tc.want)
			}
		})
	}
}
