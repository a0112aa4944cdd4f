package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"dprl/internal/testutil"
	"dprl/ledger"
	"dprl/ledger/accountant"

	"github.com/cockroachdb/pebble/v2"
)

// ledgerShowDataset decodes one dataset of "dprl ledger show --json" (the
// offline tests read it).
type ledgerShowDataset struct {
	Units map[ledger.Unit]struct {
		Runs       int     `json:"runs"`
		Epsilon    float64 `json:"epsilon"`
		Delta      float64 `json:"delta"`
		CapEpsilon float64 `json:"cap_epsilon"`
		Error      string  `json:"error"`
	} `json:"units"`
	DerivedFiles []ledger.DerivedSummary `json:"derived_files"`
}

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

// TestLedgerShowUnitNotComputable: when a dataset unit's total cannot be
// computed (its runs' fixed deltas reach the cap's delta), show still lists
// every entry and the other totals, reports the error in place of that
// unit's epsilon naming the delta to raise, and exits 0 (verify flags it).
// Before, show failed with the accounting error and listed nothing.
func TestLedgerShowUnitNotComputable(t *testing.T) {
	dir := makeLedger(t)
	db, err := pebble.Open(filepath.Join(dir, "ledger"), &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("b/records-sha256:feed")
	v, closer, err := db.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	var st ledger.DatasetState
	err = json.Unmarshal(v, &st)
	closer.Close()
	if err != nil {
		t.Fatal(err)
	}
	u := st.Units[ledger.UnitTrajectory]
	u.Fixed = []ledger.FixedCost{{Epsilon: 1, Delta: 1e-5, Source: "svt"}}
	st.Units[ledger.UnitTrajectory] = u
	forged, _ := json.Marshal(st)
	if err := db.Set(key, forged, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	db.Close()

	code, out, stderr := runCLI(t, "ledger", "show", "--data", dir)
	for _, want := range []string{"\n3    ", "offline_run", "unit trajectory: 1 runs, epsilon not computable for cap 10 at delta 1e-05: ledger: invalid argument: delta 1e-05 leaves nothing for the events after fixed deltas 1e-05",
		"--dataset-delta", "most used: 2 updates"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("show: exit %d, output lacks %q:\n%s%s", code, want, out, stderr)
		}
	}
	code, out, _ = runCLI(t, "ledger", "show", "--data", dir, "--json")
	var show struct {
		Entries  []ledger.Entry
		Datasets map[string]struct {
			Units map[ledger.Unit]map[string]any
		}
	}
	if err := json.Unmarshal([]byte(out), &show); code != 0 || err != nil || len(show.Entries) != 3 {
		t.Fatalf("show --json: exit %d, %v: %s", code, err, out)
	}
	tr := show.Datasets["records-sha256:feed"].Units[ledger.UnitTrajectory]
	if e, ok := tr["epsilon"]; !ok || e != nil || !strings.Contains(fmt.Sprint(tr["error"]), "--dataset-delta") {
		t.Errorf("show --json: trajectory unit %v, want epsilon null and the error", tr)
	}
	if code, _, _ := runCLI(t, "ledger", "verify", "--data", dir); code != 1 {
		t.Errorf("verify: exit %d, want 1", code)
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
	cases := []struct {
		name, key, value, want string
	}{
		// Open checks the head against the head file before Verify runs.
		{"forged head", "m/head", `{"seq":3,"hash":"forged","version":2}`, "problem: ledger: corrupt store: the store's head (entry 3, hash forged, version 2) differs from"},
		{"counter edited", "u/", `{"updates":0,"sum_inv_z2":0,"last_version":0}`, "problem: user "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := makeLedger(t)
			db, err := pebble.Open(filepath.Join(dir, "ledger"), &pebble.Options{})
			if err != nil {
				t.Fatal(err)
			}
			key := []byte(c.key)
			if c.key == "u/" { // the first user's counter
				it, _ := db.NewIter(&pebble.IterOptions{LowerBound: key})
				it.First()
				key = append([]byte(nil), it.Key()...)
				it.Close()
			}
			if err := db.Set(key, []byte(c.value), pebble.Sync); err != nil {
				t.Fatal(err)
			}
			db.Close()
			code, out, stderr := runCLI(t, "ledger", "verify", "--data", dir)
			if code != 1 || !strings.Contains(out, c.want) || !strings.Contains(out, "ledger FAILED (1 problems)") || !strings.Contains(stderr, "1 problems") {
				t.Errorf("tampered: exit %d, %q %q", code, out, stderr)
			}
		})
	}
}

// TestLedgerVerifyDamagedFiles damages the files of a ledger's data
// directory: verify exits 1 with the reason (never a panic, never OK with a
// shorter ledger), as text and as JSON.
func TestLedgerVerifyDamagedFiles(t *testing.T) {
	damage := map[string]func(t *testing.T, dir string){
		"sst byte flipped": func(t *testing.T, dir string) { flipByte(t, glob1(t, dir, "ledger/*.sst"), 0.5) },
		"wal byte flipped": func(t *testing.T, dir string) { flipByte(t, glob1(t, dir, "ledger/*.log"), 0.3) },
		"wal deleted":      func(t *testing.T, dir string) { os.Remove(glob1(t, dir, "ledger/*.log")) },
		"manifest flipped": func(t *testing.T, dir string) { flipByte(t, glob1(t, dir, "ledger/MANIFEST-*"), 0.6) },
		"head file gone":   func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "ledger.heads")) },
		"user key swapped": func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "user.key"), []byte(strings.Repeat("k", 32)), 0o600)
		},
	}
	for name, f := range damage {
		t.Run(name, func(t *testing.T) {
			dir := makeLedger(t)
			// A restart flushes the log into an SST; two more releases go to
			// a new log.
			s, err := ledger.Open(dir, ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			addReleases(t, s, 3, 2)
			s.Close()
			f(t, dir)
			code, out, stderr := runCLI(t, "ledger", "verify", "--data", dir)
			if code != 1 || !strings.Contains(out, "ledger FAILED") || !strings.Contains(stderr, "problems in") {
				t.Errorf("exit %d, %q %q", code, out, stderr)
			}
			code, out, _ = runCLI(t, "ledger", "verify", "--data", dir, "--json")
			var rep struct {
				OK       bool
				Problems []string
			}
			if code != 1 || json.Unmarshal([]byte(out), &rep) != nil || rep.OK || len(rep.Problems) == 0 {
				t.Errorf("--json: exit %d, %s", code, out)
			}
		})
	}
}

// TestLedgerHeadAndExpectHead records the head, restores an older copy of
// the whole data directory, and checks that only --expect-head catches it.
func TestLedgerHeadAndExpectHead(t *testing.T) {
	dir := makeLedger(t)
	old := filepath.Join(t.TempDir(), "old")
	copyDir(t, dir, old)
	s, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	addReleases(t, s, 3, 1)
	s.Close()
	code, out, _ := runCLI(t, "ledger", "head", "--data", dir)
	ref := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(ref, "4:") || len(ref) != 2+64 {
		t.Fatalf("head: %d %q", code, out)
	}
	code, out, _ = runCLI(t, "ledger", "head", "--data", dir, "--json")
	var h struct {
		Seq     uint64
		Version uint64
		Ref     string
	}
	if code != 0 || json.Unmarshal([]byte(out), &h) != nil || h.Seq != 4 || h.Version != 3 || h.Ref != ref {
		t.Errorf("head --json: %d %s", code, out)
	}
	if code, out, stderr := runCLI(t, "ledger", "verify", "--data", dir, "--expect-head", ref); code != 0 {
		t.Errorf("verify --expect-head on the ledger: %d %q %q", code, out, stderr)
	}
	os.RemoveAll(dir)
	copyDir(t, old, dir)
	if code, out, stderr := runCLI(t, "ledger", "verify", "--data", dir); code != 0 {
		t.Errorf("the older copy verifies on its own (nothing inside it can tell): %d %q %q", code, out, stderr)
	}
	code, out, stderr := runCLI(t, "ledger", "verify", "--data", dir, "--expect-head", ref)
	if code != 1 || !strings.Contains(out, "rolled back") {
		t.Errorf("verify --expect-head on the older copy: %d %q %q", code, out, stderr)
	}
	if code, _, stderr := runCLI(t, "ledger", "verify", "--data", dir, "--expect-head", "4:abc"); code != 2 || !strings.Contains(stderr, "--expect-head") {
		t.Errorf("bad --expect-head: %d %q", code, stderr)
	}
}

// addReleases appends n releases after version from-1.
func addReleases(t *testing.T, s *ledger.Store, from uint64, n int) {
	t.Helper()
	g, _ := accountant.Analytic{}.Epsilon(1e-5, accountant.Gaussian(1))
	for v := from; v < from+uint64(n); v++ {
		_, err := s.Release(ledger.Release{Version: v, Snapshot: []byte(strings.Repeat("p", 3000)), Users: []ledger.UserKey{s.User("u1"), s.User("u3")},
			Entry: ledger.Entry{Unit: ledger.UnitSession, Mechanism: "dppg", Events: []accountant.Event{accountant.Gaussian(1)},
				Method: accountant.MethodAnalytic, Epsilon: g.Epsilon, Delta: 1e-5, Z: 1, S: 0.05, K: 2, Participants: 2}})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// glob1 returns the newest (last numbered) file matching pattern.
func glob1(t *testing.T, dir, pattern string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, pattern))
	if len(m) == 0 {
		t.Fatalf("no %s", pattern)
	}
	return m[len(m)-1]
}

// flipByte XORs the byte at the fraction at of the file.
func flipByte(t *testing.T, path string, at float64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		t.Fatalf("%s: %v", path, err)
	}
	b[int(at*float64(len(b)-1))] ^= 0x5a
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAgentExpectHead: dprl agent --expect-head refuses to start on a data
// directory whose ledger ends before the recorded head (a restored older
// copy), and refuses a malformed head as a usage error.
func TestAgentExpectHead(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, "demo", "--users", "48", "--K", "8", "--seed", "1", "--data", dir, "--json"); code != 0 {
		t.Fatalf("demo: %d %s", code, stderr)
	}
	code, out, _ := runCLI(t, "ledger", "head", "--data", dir)
	ref := strings.TrimSpace(out)
	seq, hash, ok := strings.Cut(ref, ":")
	if code != 0 || !ok {
		t.Fatalf("head: %d %q", code, out)
	}
	n, _ := strconv.Atoi(seq)
	later := fmt.Sprintf("%d:%s", n+5, hash) // as if the directory had since been rolled back
	code, _, stderr := runCLI(t, "agent", "--data", dir, "--env", "cartpole", "--K", "8", "--nats-listen", "127.0.0.1:0", "--expect-head", later)
	if code != 1 || !strings.Contains(stderr, "rolled back") {
		t.Errorf("agent --expect-head %s: exit %d, %q; want 1 and 'rolled back'", later, code, stderr)
	}
	if code, _, stderr := runCLI(t, "agent", "--data", dir, "--env", "cartpole", "--expect-head", "4:abc", "--check-config"); code != 2 || !strings.Contains(stderr, "--expect-head") {
		t.Errorf("bad --expect-head: %d %q", code, stderr)
	}
}

// TestLedgerBackupCommand: dprl ledger backup copies a ledger not in use
// into a new directory that verifies on its own; an existing destination
// is a usage error (exit 2) and nothing is overwritten.
func TestLedgerBackupCommand(t *testing.T) {
	src := filepath.Join(t.TempDir(), "data")
	testutil.MustCopyTree(t, "../../ledger/testdata/compat/2026-11-25/agent", src)
	for _, f := range []string{"user.key", "ledger.heads"} {
		if err := os.Chmod(filepath.Join(src, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dest := filepath.Join(t.TempDir(), "backup")
	code, out, errOut := runCLI(t, "ledger", "backup", "--data", src, "--out", dest)
	if code != 0 || !strings.Contains(out, "backup written and verified") || !strings.Contains(out, "head 3:c33702b1") {
		t.Fatalf("backup: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, _ := runCLI(t, "ledger", "verify", "--data", dest); code != 0 || !strings.Contains(out, "ledger OK") {
		t.Fatalf("verify the backup: code %d, %s", code, out)
	}
	if code, _, errOut := runCLI(t, "ledger", "backup", "--data", src, "--out", dest); code != 2 || !strings.Contains(errOut, "exists") {
		t.Fatalf("existing destination: code %d, stderr %q; want 2 and 'exists'", code, errOut)
	}
}

// TestLedgerEndStreamCommand: dprl ledger end-stream ends the banded noise
// stream of a data directory (as restored from a plain copy): the next
// release must start a new stream; a second run has nothing to end.
func TestLedgerEndStreamCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eps, err := accountant.GaussianEpsilon(1, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ledger.BandedCorrelation(3, 3, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	for v := uint64(1); v <= 2; v++ {
		e := ledger.Entry{Unit: ledger.UnitSession, Mechanism: "m", Events: []accountant.Event{accountant.Gaussian(1)}, Method: accountant.MethodAnalytic,
			Epsilon: eps, Delta: 1e-5, Z: 1, S: 1, K: 1, Participants: 1, Correlation: c}
		step := &ledger.NoiseStep{X: []float64{float64(v)}, G: []float64{float64(-v)}}
		if _, err := s.Release(ledger.Release{Version: v, Snapshot: []byte{byte(v)}, Entry: e, Users: []ledger.UserKey{s.User(fmt.Sprint(v))}, Noise: step}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if code, out, errOut := runCLI(t, "ledger", "end-stream", "--data", dir); code != 0 || !strings.Contains(out, "ended at version 2; the next release starts a new stream") {
		t.Fatalf("end-stream: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, _ := runCLI(t, "ledger", "end-stream", "--data", dir, "--json"); code != 0 || !strings.Contains(out, `"ended_at": 0`) {
		t.Fatalf("second end-stream: code %d, %s", code, out)
	}
	if code, out, _ := runCLI(t, "ledger", "verify", "--data", dir); code != 0 || !strings.Contains(out, "ledger OK") {
		t.Fatalf("verify: code %d, %s", code, out)
	}
}
