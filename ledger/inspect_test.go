package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVerifyDir(t *testing.T) {
	s, dir := summaryLedger(t)
	h, _ := s.Head()
	s.Close()

	v, err := VerifyDir(dir, Options{}, &HeadRef{Seq: h.Seq, Hash: h.Hash})
	if err != nil || !v.OK || len(v.Problems) != 0 || len(v.Budgets) != 2 || v.Entries != 6 || v.OfflineRuns != 2 {
		t.Fatalf("VerifyDir: %v, %+v", err, v)
	}
	var buf bytes.Buffer
	if err := v.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dataset A unit expert: 1 runs, epsilon 1 of cap 5 at delta 0.001\n",
		"ledger OK: 6 entries (2 releases, 2 offline runs, 1 cap changes, 1 derived files), 3 users, 1 datasets, head version 2\n"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}

	// A head the ledger does not hold is a problem, not an error.
	v, err = VerifyDir(dir, Options{}, &HeadRef{Seq: 99, Hash: h.Hash})
	if err != nil || v.OK || len(v.Problems) != 1 || !strings.Contains(v.Problems[0], "rolled back") {
		t.Errorf("unknown head: %v, %+v", err, v)
	}
	buf.Reset()
	v.WriteText(&buf)
	if !strings.Contains(buf.String(), "problem: ledger: corrupt store: the recorded head is entry 99") || !strings.Contains(buf.String(), "ledger FAILED (1 problems)") {
		t.Errorf("text:\n%s", buf.String())
	}

	// No ledger: an error.
	if _, err := VerifyDir(filepath.Join(t.TempDir(), "none"), Options{}, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("no ledger: %v", err)
	}

	// A store too damaged to open: one problem; the JSON has empty lists,
	// not nulls.
	m, _ := filepath.Glob(filepath.Join(dir, pebbleDir, "MANIFEST-*"))
	for _, f := range m {
		os.WriteFile(f, []byte("not a manifest"), 0o600)
	}
	v, err = VerifyDir(dir, Options{}, nil)
	if err != nil || v.OK || len(v.Problems) != 1 || !strings.Contains(v.Problems[0], "corrupt") {
		t.Fatalf("damaged store: %v, %+v", err, v)
	}
	b, _ := json.Marshal(v)
	if !strings.HasPrefix(string(b), `{"ok":false,"head":{"seq":0,"hash":"","version":0},`) || !strings.Contains(string(b), `"budgets":[],"problems":["ledger: corrupt store`) {
		t.Errorf("JSON %s", b)
	}
}

func TestVerifiedHead(t *testing.T) {
	s, dir := openClocked(t)
	if _, err := s.VerifiedHead(); err == nil || err.Error() != "ledger "+dir+" has no entry yet: no head to record" {
		t.Errorf("empty ledger: %v", err)
	}
	e := doRelease(t, s, 1, 1, "a")
	h, err := s.VerifiedHead()
	if err != nil || h.Seq != 1 || h.Hash != e.Hash || h.Version != 1 || h.Ref != "1:"+e.Hash {
		t.Fatalf("head %+v, %v", h, err)
	}
	if ref, err := ParseHeadRef(h.Ref); err != nil || ref != (HeadRef{Seq: 1, Hash: e.Hash}) {
		t.Errorf("Ref %q does not parse back: %v", h.Ref, err)
	}
	var buf bytes.Buffer
	if err := h.WriteText(&buf); err != nil || buf.String() != h.Ref+"\n" {
		t.Errorf("text %q, %v", buf.String(), err)
	}
	// A ledger with a problem has no head to record.
	u, _ := s.UserState(s.User("a"))
	u.Updates = 5
	mustSet(t, s, userKey(s.User("a")), u)
	if _, err := s.VerifiedHead(); err == nil || !strings.Contains(err.Error(), "fails verification (1 problems; dprl ledger verify lists them)") {
		t.Errorf("tampered ledger: %v", err)
	}
}

func TestChangeCap(t *testing.T) {
	s, _ := summaryLedger(t)
	cases := []struct {
		name string
		c    CapChange
		is   error
	}{
		{"unknown dataset", CapChange{Dataset: "Z", Unit: UnitTrajectory, Cap: Cap{Epsilon: 1, Delta: 1e-5}, Reason: "x"}, ErrNotFound},
		{"no reason", CapChange{Dataset: "A", Unit: UnitTrajectory, Cap: Cap{Epsilon: 1, Delta: 1e-5}, Reason: " "}, ErrInvalid},
		{"bad cap", CapChange{Dataset: "A", Unit: UnitTrajectory, Cap: Cap{Epsilon: 1, Delta: 1}, Reason: "x"}, ErrInvalid},
		{"session unit", CapChange{Dataset: "A", Unit: UnitSession, Cap: Cap{Epsilon: 1, Delta: 1e-5}, Reason: "x"}, ErrInvalid},
		// The SVT run's fixed delta 1e-4 would exceed the cap's delta.
		{"delta below fixed", CapChange{Dataset: "A", Unit: UnitExpert, Cap: Cap{Epsilon: 1, Delta: 1e-5}, Reason: "x"}, ErrInvalid},
	}
	for _, c := range cases {
		if _, err := s.ChangeCap(c.c); !errors.Is(err, c.is) {
			t.Errorf("%s: %v, want %v", c.name, err, c.is)
		}
	}
	_, err := s.ChangeCap(CapChange{Dataset: "A", Cap: Cap{Epsilon: 1, Delta: 1e-5}, Reason: "x"})
	var ue *UnitError
	if !errors.As(err, &ue) || ue.Dataset != "A" || ue.UnitList() != "expert, trajectory" {
		t.Fatalf("no unit on a dataset with two: %v", err)
	}
	h, _ := s.Head()
	if h.Seq != 6 {
		t.Fatalf("a refused change wrote an entry: head %+v", h)
	}

	r, err := s.ChangeCap(CapChange{Dataset: "A", Unit: UnitExpert, Cap: Cap{Epsilon: 0.5, Delta: 1e-3}, Reason: " lowered "})
	if err != nil {
		t.Fatal(err)
	}
	want := CapChangeResult{Dataset: "A", Unit: UnitExpert, Old: Cap{Epsilon: 5, Delta: 1e-3}, Cap: Cap{Epsilon: 0.5, Delta: 1e-3}, Reason: "lowered", Seq: 7, Runs: 1, Spent: 1}
	if r != want {
		t.Errorf("result %+v, want %+v", r, want)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil || buf.String() != "dataset A unit expert: cap (epsilon 5, delta 0.001) -> (epsilon 0.5, delta 0.001), ledger entry 7; spent epsilon 1 in 1 runs\n" {
		t.Errorf("text %q, %v", buf.String(), err)
	}
	mustVerify(t, s)

	// A dataset with one unit needs none named.
	if _, err := s.ChargeOffline(OfflineRun{File: "B", Records: recs("b", 3), Entry: gpopeRun(t), Cap: Cap{Epsilon: 10, Delta: 1e-5}}); err != nil {
		t.Fatal(err)
	}
	r, err = s.ChangeCap(CapChange{Dataset: "B", Cap: Cap{Epsilon: 20, Delta: 1e-5}, Reason: "x"})
	if err != nil || r.Unit != UnitTrajectory || r.Old != (Cap{Epsilon: 10, Delta: 1e-5}) {
		t.Errorf("one unit: %+v, %v", r, err)
	}
}

func TestExportSnapshot(t *testing.T) {
	s, _ := openClocked(t)
	doRelease(t, s, 1, 1, "a")
	doRelease(t, s, 2, 1, "b")
	out := filepath.Join(t.TempDir(), "p.snap")
	params := func(b []byte) (int, error) { return len(b) * 10, nil }

	e, err := s.ExportSnapshot(-1, out, params)
	if err != nil || e != (SnapshotExport{Version: 2, Out: out, Bytes: len("policy-2"), Params: 80}) {
		t.Fatalf("serving version: %+v, %v", e, err)
	}
	if b, _ := os.ReadFile(out); string(b) != "policy-2" {
		t.Errorf("file holds %q", b)
	}
	var buf bytes.Buffer
	if err := e.WriteText(&buf); err != nil || buf.String() != "wrote policy version 2 (80 parameters, 8 bytes) to "+out+"\n" {
		t.Errorf("text %q, %v", buf.String(), err)
	}
	if e, err := s.ExportSnapshot(1, out, params); err != nil || e.Version != 1 {
		t.Errorf("version 1: %+v, %v", e, err)
	}
	if b, _ := os.ReadFile(out); string(b) != "policy-1" {
		t.Errorf("file holds %q", b)
	}

	if _, err := s.ExportSnapshot(9, out, params); !errors.Is(err, ErrNotFound) || !strings.HasPrefix(err.Error(), "version 9: ") {
		t.Errorf("missing version: %v", err)
	}
	// A snapshot that does not decode is not written.
	bad := filepath.Join(t.TempDir(), "bad.snap")
	errBad := errors.New("bad snapshot")
	_, err = s.ExportSnapshot(2, bad, func([]byte) (int, error) { return 0, errBad })
	if !errors.Is(err, errBad) || err.Error() != "version 2: stored snapshot: bad snapshot" {
		t.Errorf("undecodable: %v", err)
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("undecodable snapshot written: %v", err)
	}
}
