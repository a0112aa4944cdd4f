package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"dprl/ledger/accountant"
)

// openClocked opens a new store in a temp dir whose entries are stamped a
// minute apart from 2024-03-01 12:00 UTC.
func openClocked(t *testing.T) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	t0, n := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC), 0
	s, err := Open(dir, Options{Now: func() time.Time { n++; return t0.Add(time.Duration(n) * time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

// summaryLedger writes two releases and, on dataset "A", a trajectory-level
// run, an expert-level run with a released derived file, and a cap change.
func summaryLedger(t *testing.T) (*Store, string) {
	t.Helper()
	s, dir := openClocked(t)
	doRelease(t, s, 1, 1, "alice", "bob")
	doRelease(t, s, 2, 1, "alice", "carol")
	if _, err := s.ChargeOffline(OfflineRun{File: "A", Records: recs("a", 4), Entry: gpopeRun(t), Cap: Cap{Epsilon: 10, Delta: 1e-5}}); err != nil {
		t.Fatal(err)
	}
	c, err := s.ChargeOffline(OfflineRun{File: "A", Records: recs("a", 4), Entry: svtRun(1, 1e-4), Cap: Cap{Epsilon: 5, Delta: 1e-3}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RegisterDerived(c.Entry.Seq, []DerivedFile{{ID: "S", Records: recs("s", 2), Note: "svt stable prefixes", Released: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetCap("A", UnitTrajectory, Cap{Epsilon: 12, Delta: 1e-5}, "owner agreed"); err != nil {
		t.Fatal(err)
	}
	return s, dir
}

func TestSummary(t *testing.T) {
	s, _ := summaryLedger(t)
	m, err := s.Summary(1e-6)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := s.Head()
	if m.Head != h || h.Seq != 6 || len(m.Entries) != 6 || m.Entries[5].Kind != KindCap {
		t.Fatalf("head %+v, %d entries", m.Head, len(m.Entries))
	}
	wantKinds := map[Kind]int{KindRelease: 2, KindOffline: 2, KindDerived: 1, KindCap: 1}
	for k, n := range wantKinds {
		if m.ByKind[k].Entries != n {
			t.Errorf("by kind %s: %d entries, want %d", k, m.ByKind[k].Entries, n)
		}
	}
	d := m.Datasets["A"]
	tr, ex := d.Units[UnitTrajectory], d.Units[UnitExpert]
	if len(m.Datasets) != 1 || len(d.Units) != 2 {
		t.Fatalf("datasets %+v", m.Datasets)
	}
	if tr.Epsilon == nil || *tr.Epsilon != gpopeRun(t).Epsilon || tr.Runs != 1 || tr.CapEpsilon != 12 || tr.Delta != 1e-5 || tr.Error != "" {
		t.Errorf("trajectory unit %+v", tr)
	}
	if ex.Epsilon == nil || *ex.Epsilon != 1 || ex.Runs != 1 || ex.CapEpsilon != 5 || ex.Delta != 1e-3 {
		t.Errorf("expert unit %+v", ex)
	}
	if len(d.DerivedFiles) != 1 || d.DerivedFiles[0] != (DerivedSummary{File: "S", Note: "svt stable prefixes", From: 4, Released: true}) {
		t.Errorf("derived files %+v", d.DerivedFiles)
	}
	// alice took part in both updates at z = 1: one Gaussian with z = 1/sqrt(2).
	want, _ := accountant.GaussianEpsilon(1/math.Sqrt(2), 1e-6)
	if m.Users != 3 || m.MaxUser == nil || m.MaxUser.Updates != 2 || m.MaxUser.Epsilon != want || m.MaxUser.Delta != 1e-6 {
		t.Errorf("users %d, max %+v (want epsilon %v)", m.Users, m.MaxUser, want)
	}
	if _, err := s.Summary(2); err == nil {
		t.Error("a user delta of 2 was accepted")
	}
}

func TestSummaryEmpty(t *testing.T) {
	s, _ := openClocked(t)
	m, err := s.Summary(1e-5)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := m.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	want := "head: 0 entries, policy version 0, hash \n" +
		"SEQ  TIME  KIND  UNIT  EPSILON  DELTA  METHOD  Z  PARTICIPANTS  VERSION/DATASET  NOISE\n" +
		"users: 0\n"
	if buf.String() != want {
		t.Errorf("text:\n%q\nwant\n%q", buf.String(), want)
	}
	b, _ := json.Marshal(m)
	if string(b) != `{"head":{"seq":0,"hash":"","version":0},"entries":null,"datasets":{},"users":0,"by_kind":{}}` {
		t.Errorf("JSON %s", b)
	}
}

// TestSummaryWriteText renders a summary with every kind of entry.
func TestSummaryWriteText(t *testing.T) {
	at := time.Date(2024, 3, 1, 12, 1, 0, 0, time.UTC)
	eps := 1.21384
	m := Summary{
		Head: Head{Seq: 4, Hash: "0123456789abcdef0123", Version: 1},
		Entries: []Entry{
			{Seq: 1, Time: at, Kind: KindRelease, Unit: UnitSession, Epsilon: 4.37718, Delta: 1e-5, Method: accountant.MethodAnalytic, Z: 1, Participants: 2, PolicyVersion: 1, Seeded: true},
			{Seq: 2, Time: at, Kind: KindOffline, Unit: UnitTrajectory, Epsilon: eps, Delta: 1e-5, Method: accountant.MethodRDP, Participants: 100, DatasetID: "A"},
			{Seq: 3, Time: at, Kind: KindDerived, DatasetID: "A"},
			{Seq: 4, Time: at, Kind: KindCap, Unit: UnitTrajectory, Cap: &Cap{Epsilon: 12, Delta: 1e-5}, DatasetID: "A"},
		},
		Datasets: map[string]DatasetSummary{"A": {
			Units: map[Unit]UnitSummary{
				UnitTrajectory: {Runs: 1, Epsilon: &eps, Delta: 1e-5, CapEpsilon: 12},
				UnitExpert:     {Runs: 2, Delta: 1e-3, CapEpsilon: 5, Error: "no epsilon"},
			},
			DerivedFiles: []DerivedSummary{{File: "S", Note: "svt", From: 2, Released: true}, {File: "U", Note: "svt unstable", From: 2}},
		}},
		Users:   2,
		MaxUser: &UserSummary{Updates: 1, Epsilon: 4.37718, Delta: 1e-5},
	}
	var buf bytes.Buffer
	if err := m.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	want := `head: 4 entries, policy version 1, hash 0123456789abcdef
SEQ  TIME                 KIND            UNIT        EPSILON  DELTA  METHOD    Z  PARTICIPANTS  VERSION/DATASET  NOISE
1    2024-03-01 12:01:00  policy_release  session     4.378    1e-05  analytic  1  2             1                seeded
2    2024-03-01 12:01:00  offline_run     trajectory  1.214    1e-05  rdp       -  100           A                secure
3    2024-03-01 12:01:00  derived_file                -        -      -         -  0             A                secure
4    2024-03-01 12:01:00  dataset_cap     trajectory  cap 12   1e-05  -         -  0             A                secure
dataset A:
  unit expert: 2 runs, epsilon not computable for cap 5 at delta 0.001: no epsilon
  unit trajectory: 1 runs, epsilon 1.214 of cap 12 at delta 1e-05
  derived file S (svt, entry 2, released)
  derived file U (svt unstable, entry 2)
(` + UnitsNote + `)
users: 2; most used: 1 updates, epsilon 4.378 at delta 1e-05
`
	if buf.String() != want {
		t.Errorf("text:\n%s\nwant\n%s", buf.String(), want)
	}
}

// TestSummaryUnitNotComputable: a dataset unit whose runs' fixed deltas
// reach its cap's delta has no epsilon. The summary still lists every
// entry and the other units, and reports the error in place of that unit's
// epsilon (null in JSON, never 0), naming the delta to raise.
func TestSummaryUnitNotComputable(t *testing.T) {
	s, _ := summaryLedger(t)
	d, _, _ := s.Dataset("A")
	u := d.Units[UnitExpert]
	u.Cap.Delta = 1e-4 // the SVT run's fixed delta: nothing left for events
	u.Events = []accountant.Event{{Q: 1, Z: 2, Steps: 1}}
	d.Units[UnitExpert] = u
	mustSet(t, s, budgetKey("A"), d)
	if _, err := u.Spent(); !errors.As(err, new(*DeltaError)) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("Spent: %v, want a DeltaError wrapping ErrInvalid", err)
	}

	m, err := s.Summary(1e-5)
	if err != nil {
		t.Fatalf("Summary: %v", err)
	}
	ex, tr := m.Datasets["A"].Units[UnitExpert], m.Datasets["A"].Units[UnitTrajectory]
	if len(m.Entries) != 6 || ex.Epsilon != nil || tr.Epsilon == nil {
		t.Fatalf("%d entries, expert %+v, trajectory %+v", len(m.Entries), ex, tr)
	}
	for _, want := range []string{"delta 0.0001 leaves nothing for the events after fixed deltas 0.0001", "--dataset-delta", "dprl ledger set-cap --delta"} {
		if !strings.Contains(ex.Error, want) {
			t.Errorf("error %q lacks %q", ex.Error, want)
		}
	}
	var buf bytes.Buffer
	if err := m.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"6    2024-03-01 12:06:00  dataset_cap", "unit expert: 1 runs, epsilon not computable for cap 5 at delta 0.0001: ledger: invalid argument: delta 0.0001 leaves nothing",
		"unit trajectory: 1 runs, epsilon "} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}
	b, _ := json.Marshal(m.Datasets["A"].Units[UnitExpert])
	if !strings.HasPrefix(string(b), `{"runs":1,"epsilon":null,"delta":0.0001,"cap_epsilon":5,"error":"ledger: invalid argument: delta 0.0001 leaves nothing`) {
		t.Errorf("JSON %s", b)
	}
	// Verify reports the tampered unit as a problem.
	if r, err := s.Verify(); err != nil || r.OK() {
		t.Errorf("verify: %v, problems %q", err, r.Problems)
	}
}

func TestDeltaErrorMessages(t *testing.T) {
	for _, c := range []struct {
		events []accountant.Event
		fixed  []FixedCost
		want   string
	}{
		{nil, []FixedCost{{Epsilon: 1, Delta: 2e-5}}, "ledger: invalid argument: fixed deltas 2e-05 exceed delta 1e-05"},
		{[]accountant.Event{accountant.Gaussian(1)}, []FixedCost{{Epsilon: 1, Delta: 1e-5}}, "ledger: invalid argument: delta 1e-05 leaves nothing for the events after fixed deltas 1e-05"},
	} {
		_, err := totalEpsilon(accountant.MethodRDP, 1e-5, c.events, c.fixed)
		var de *DeltaError
		if !errors.As(err, &de) || !errors.Is(err, ErrInvalid) || err.Error() != c.want {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}
