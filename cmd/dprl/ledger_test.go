package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/ledger"
	"dprl/ledger/accountant"

	"github.com/cockroachdb/pebble/v2"
)

// makeLedger writes a small ledger: two releases and one offline run.
func makeLedger(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g, _ := accountant.Analytic{}.Epsilon(1e-5, accountant.Gaussian(1))
	for v := uint64(1); v <= 2; v++ {
		_, err := s.Release(ledger.Release{Version: v, Snapshot: []byte("p"), Users: []ledger.UserKey{s.User("u1"), s.User("u2")},
			Entry: ledger.Entry{Unit: ledger.UnitSession, Mechanism: "dppg", Events: []accountant.Event{accountant.Gaussian(1)},
				Method: accountant.MethodAnalytic, Epsilon: g.Epsilon, Delta: 1e-5, Z: 1, S: 0.05, K: 2, Participants: 2}})
		if err != nil {
			t.Fatal(err)
		}
	}
	ev := []accountant.Event{{Q: 0.01, Z: 1, Steps: 100}}
	r, _ := accountant.RDP{}.Epsilon(1e-5, ev...)
	if _, err := s.ChargeOffline(ledger.OfflineRun{File: "records-sha256:feed", Records: []ledger.RecordHash{{1}, {2}},
		Entry: ledger.Entry{Unit: ledger.UnitTrajectory, Mechanism: "gpope", Events: ev, Method: accountant.MethodRDP, Epsilon: r.Epsilon, Delta: 1e-5, Participants: 100},
		Cap:   ledger.Cap{Epsilon: 10, Delta: 1e-5}}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLedgerCommands(t *testing.T) {
	dir := makeLedger(t)
	code, out, stderr := runCLI(t, "ledger", "verify", "--data", dir)
	if code != 0 || !strings.Contains(out, "ledger OK: 3 entries (2 releases, 1 offline runs, 0 cap changes, 0 derived files), 2 users, 1 datasets") {
		t.Fatalf("verify: exit %d, %q %q", code, out, stderr)
	}
	code, out, _ = runCLI(t, "ledger", "verify", "--data", dir, "--json")
	var rep struct {
		OK      bool
		Entries int
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || !rep.OK || rep.Entries != 3 {
		t.Errorf("verify --json: %d %s", code, out)
	}
	code, out, _ = runCLI(t, "ledger", "show", "--data", dir)
	if code != 0 || !strings.Contains(out, "dataset records-sha256:feed:\n  unit trajectory: 1 runs, epsilon") || !strings.Contains(out, "most used: 2 updates") {
		t.Errorf("show: %d %s", code, out)
	}
	code, out, _ = runCLI(t, "ledger", "show", "--data", dir, "--json")
	var show struct {
		Head    ledger.Head
		Entries []ledger.Entry
	}
	if code != 0 || json.Unmarshal([]byte(out), &show) != nil || show.Head.Version != 2 || len(show.Entries) != 3 {
		t.Errorf("show --json: %d %s", code, out)
	}
	code, out, _ = runCLI(t, "ledger", "export", "--data", dir)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 3 {
		t.Errorf("export: %d %q", code, out)
	}
}

func TestLedgerBadDataDir(t *testing.T) {
	code, _, stderr := runCLI(t, "ledger", "verify", "--data", filepath.Join(t.TempDir(), "none"))
	if code != 1 || !strings.Contains(stderr, "no ledger") {
		t.Errorf("missing dir: %d %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "ledger", "verify")
	if code != 2 || !strings.Contains(stderr, "--data") {
		t.Errorf("no --data: %d %q", code, stderr)
	}
	dir := makeLedger(t)
	m, _ := filepath.Glob(filepath.Join(dir, "ledger", "MANIFEST-*"))
	for _, f := range m {
		os.WriteFile(f, []byte("not a manifest"), 0o600)
	}
	code, _, stderr = runCLI(t, "ledger", "show", "--data", dir)
	if code != 1 || !strings.Contains(stderr, "corrupt") {
		t.Errorf("corrupt dir: %d %q", code, stderr)
	}
}

func TestLedgerVerifyFailsOnTampering(t *testing.T) {
	dir := makeLedger(t)
	db, err := pebble.Open(filepath.Join(dir, "ledger"), &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("m/head"), []byte(`{"seq":3,"hash":"forged","version":2}`), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	db.Close()
	code, out, stderr := runCLI(t, "ledger", "verify", "--data", dir)
	if code != 1 || !strings.Contains(out, "problem: head") || !strings.Contains(stderr, "1 problems") {
		t.Errorf("tampered: exit %d, %q %q", code, out, stderr)
	}
}
