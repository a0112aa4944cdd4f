package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"dprl/ledger"
	"dprl/sessionlog"
)

// reformatLog writes a copy of a session log with the same records in
// another form: keys re-ordered, spaces around every separator, CRLF line
// ends, blank lines between records, the records in reverse order.
func reformatLog(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		r, err := json.Marshal(m) // keys sorted: another order than the writer's
		if err != nil {
			t.Fatal(err)
		}
		s := strings.NewReplacer(",", " , ", ":", " : ", "[", "[ ", "{", "{ ").Replace(string(r))
		out = append(out, s)
	}
	if slices.Equal(out, strings.Split(strings.TrimSpace(string(b)), "\n")) {
		t.Fatal("reformatting changed nothing")
	}
	slices.Reverse(out)
	if err := os.WriteFile(dst, []byte("\r\n"+strings.Join(out, "\r\n\r\n")+"\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// headLog writes the first n lines of src to dst.
func headLog(t *testing.T, src, dst string, n int) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	if err := os.WriteFile(dst, []byte(strings.Join(lines[:n], "")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// showDatasets returns the datasets of "dprl ledger show --json".
func showDatasets(t *testing.T, dir string) map[string]ledgerShowDataset {
	t.Helper()
	code, out, stderr := runCLI(t, "ledger", "show", "--data", dir, "--json")
	if code != 0 {
		t.Fatalf("ledger show: %s", stderr)
	}
	var v struct {
		Datasets map[string]ledgerShowDataset `json:"datasets"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	return v.Datasets
}

// chargedTo returns the dataset the ledger's last offline run was charged
// to (the commands print it only as a non-private value).
func chargedTo(t *testing.T, dir string) string {
	t.Helper()
	code, out, stderr := runCLI(t, "ledger", "show", "--data", dir, "--json")
	if code != 0 {
		t.Fatalf("ledger show: %s", stderr)
	}
	var v struct {
		Entries []ledger.Entry `json:"entries"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	for i := len(v.Entries) - 1; i >= 0; i-- {
		if v.Entries[i].Kind == ledger.KindOffline {
			return v.Entries[i].DatasetID
		}
	}
	t.Fatal("no offline run in the ledger")
	return ""
}

// TestOfflineDatasetBudget runs DP-LSW (basic composition: each run adds
// exactly its epsilon 1) on one dataset in several forms against a cap of
// 2.5: a reformatted copy and an appended newline are the same dataset, the
// cap is stored (a flag cannot raise it), set-cap can, and verify replays it
// all.
func TestOfflineDatasetBudget(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "chain.jsonl")
	if code, _, stderr := runCLI(t, "sims", "generate", "--env", "chain", "--behavior", "random", "--episodes", "60", "--out", data, "--seed", "5"); code != 0 {
		t.Fatal(stderr)
	}
	led := filepath.Join(dir, "ledger")
	gtd2 := func(file string, extra ...string) (int, string, string) {
		return runCLI(t, append([]string{"offline", "gtd2", "--data", file, "--env", "chain", "--target", "uniform", "--features", "tabular",
			"--method", "dp-lsw", "--epsilon", "1", "--delta", "1e-6", "--seed", "1", "--ledger", led, "--json"}, extra...)...)
	}
	entries := func() uint64 { return ledgerEntries(t, led) }

	// 1. The first run stores the cap 2.5 with the dataset.
	code, out, stderr := gtd2(data, "--dataset-epsilon", "2.5")
	if code != 0 {
		t.Fatalf("first run: %s", stderr)
	}
	id := chargedTo(t, led)
	if !strings.HasPrefix(id, "records-sha256:") {
		t.Fatalf("dataset id %q", id)
	}

	// 2. A reformatted copy is the same dataset: charged to it, at the
	// stored cap (no flag needed).
	copyPath := filepath.Join(dir, "copy.jsonl")
	reformatLog(t, data, copyPath)
	code, out, stderr = gtd2(copyPath)
	if code != 0 || chargedTo(t, led) != id {
		t.Fatalf("reformatted copy: exit %d, %s %s; want dataset %s", code, out, stderr, id)
	}
	ds := showDatasets(t, led)
	if len(ds) != 1 || ds[id].Units[ledger.UnitTrajectory].Runs != 2 || ds[id].Units[ledger.UnitTrajectory].Epsilon != 2 || ds[id].Units[ledger.UnitTrajectory].CapEpsilon != 2.5 {
		t.Fatalf("after the copy: %+v", ds)
	}

	// 3. Appending a newline does not give a fresh budget: the third run
	// (total 3 > 2.5) is refused and writes nothing.
	f, err := os.OpenFile(data, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n")
	f.Close()
	n0 := entries()
	if code, _, stderr := gtd2(data); code != 1 || !strings.Contains(stderr, "budget exceeded") || !strings.Contains(stderr, "dprl ledger set-cap --data "+led+" --file "+data+" --unit trajectory") ||
		strings.Contains(stderr, strings.TrimPrefix(id, "records-sha256:")) {
		t.Errorf("run over the cap after appending a newline: exit %d, %q (want set-cap by file, no dataset id)", code, stderr)
	}

	// 4. A larger cap on the command line does not unblock it.
	for _, flags := range [][]string{{"--dataset-epsilon", "1000"}, {"--dataset-delta", "1e-3"}, {"--dataset-epsilon", "1000", "--dataset-delta", "1e-5"}} {
		code, _, stderr := gtd2(data, flags...)
		if code != 1 || !strings.Contains(stderr, "differs from the dataset's stored cap") || !strings.Contains(stderr, "dprl ledger set-cap") {
			t.Errorf("%v: exit %d, %q", flags, code, stderr)
		}
	}
	// The stored value given explicitly is no mismatch: the run is refused
	// for its budget only.
	if code, _, stderr := gtd2(data, "--dataset-epsilon", "2.5", "--dataset-delta", "1e-5"); code != 1 || !strings.Contains(stderr, "budget exceeded") {
		t.Errorf("stored cap given: exit %d, %q", code, stderr)
	}
	if n := entries(); n != n0 {
		t.Errorf("refused runs wrote %d entries", n-n0)
	}

	// 5. set-cap raises it, with a recorded reason; it needs the reason and
	// a known dataset.
	setCap := []string{"ledger", "set-cap", "--data", led, "--file", copyPath, "--epsilon", "3.5", "--delta", "1e-5"}
	if code, _, stderr := runCLI(t, setCap...); code != 2 || !strings.Contains(stderr, "--reason") {
		t.Errorf("set-cap without a reason: %d %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "ledger", "set-cap", "--data", led, "--dataset", "records-sha256:00", "--epsilon", "3.5", "--delta", "1e-5", "--reason", "x"); code != 1 || !strings.Contains(stderr, "no dataset") {
		t.Errorf("set-cap of an unknown dataset: %d %q", code, stderr)
	}
	other := filepath.Join(dir, "other.jsonl")
	if code, _, stderr := runCLI(t, "sims", "generate", "--env", "chain", "--behavior", "random", "--episodes", "5", "--out", other, "--seed", "6"); code != 0 {
		t.Fatal(stderr)
	}
	if code, _, stderr := runCLI(t, "ledger", "set-cap", "--data", led, "--file", other, "--epsilon", "3.5", "--delta", "1e-5", "--reason", "x"); code != 1 || !strings.Contains(stderr, "no dataset for the records of "+other) {
		t.Errorf("set-cap of records never charged: %d %q", code, stderr)
	}
	code, out, stderr = runCLI(t, append(setCap, "--reason", "owner approved a third evaluation")...)
	if code != 0 || !strings.Contains(out, "cap (epsilon 2.5, delta 1e-05) -> (epsilon 3.5, delta 1e-05)") {
		t.Fatalf("set-cap: %d %q %q", code, out, stderr)
	}
	// The first 10 records (head -n 10) are the same dataset too: charged
	// to it, under the raised cap.
	head := filepath.Join(dir, "head.jsonl")
	headLog(t, data, head, 10)
	if code, out, stderr := gtd2(head); code != 0 || chargedTo(t, led) != id {
		t.Fatalf("head -n 10 after set-cap: exit %d %q %q", code, out, stderr)
	}
	if code, _, stderr := gtd2(data); code != 1 || !strings.Contains(stderr, "budget exceeded") {
		t.Errorf("fourth run: %d %q", code, stderr)
	}

	// 6. verify replays the runs and the cap change.
	code, out, stderr = runCLI(t, "ledger", "verify", "--data", led)
	if code != 0 || !strings.Contains(out, "dataset "+id+" unit trajectory: 3 runs, epsilon 3 of cap 3.5 at delta 1e-05") ||
		!strings.Contains(out, "3 offline runs, 1 cap changes, 0 derived files") {
		t.Fatalf("verify: %d %q %q", code, out, stderr)
	}
	code, out, _ = runCLI(t, "ledger", "show", "--data", led)
	if code != 0 || !strings.Contains(out, "dataset_cap") || !strings.Contains(out, "unit trajectory: 3 runs, epsilon 3 of cap 3.5 at delta 1e-05") {
		t.Errorf("show: %q", out)
	}

	// 7. A cap raised in the store behind the ledger's back is found.
	db, err := pebble.Open(filepath.Join(led, "ledger"), &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("b/" + id)
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
	u.Cap.Epsilon = 1000
	st.Units[ledger.UnitTrajectory] = u
	forged, _ := json.Marshal(st)
	if err := db.Set(key, forged, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	db.Close()
	code, out, stderr = runCLI(t, "ledger", "verify", "--data", led)
	if code != 1 || !strings.Contains(out, "stored cap (epsilon 1000, delta 1e-05), entries give (epsilon 3.5, delta 1e-05)") || !strings.Contains(stderr, "1 problems") {
		t.Errorf("verify of a tampered cap: %d %q %q", code, out, stderr)
	}
}

// TestOfflineDatasetUnits charges one dataset at two units (SVT at expert
// level, GPOPE at trajectory level), then runs on SVT's outputs: each unit
// keeps its own cap and total, never added, and the outputs (and parts of
// them) are charged to the source dataset.
func TestOfflineDatasetUnits(t *testing.T) {
	data, experts := svtFixture(t, 40, "0.5")
	dir := t.TempDir()
	led := filepath.Join(dir, "ledger")
	st, un := filepath.Join(dir, "stable.jsonl"), filepath.Join(dir, "unstable.jsonl")
	code, out, stderr := runCLI(t, "offline", "svt", "--data", data, "--experts", experts, "--epsilon", "200", "--delta", "0.1",
		"--pmin", "0.5", "--queries", "10", "--out-stable", st, "--out-unstable", un,
		"--ledger", led, "--dataset-epsilon", "300", "--dataset-delta", "0.5", "--seed", "1", "--json")
	if code != 0 {
		t.Fatalf("svt: %s", stderr)
	}
	id := chargedTo(t, led)
	gpope := func(file string) (int, string, string) {
		return runCLI(t, "offline", "gtd2", "--data", file, "--target", "uniform", "--features", "raw", "--actions", "2", "--epsilon", "1", "--delta", "1e-5",
			"--iters", "20", "--seed", "2", "--ledger", led, "--json")
	}
	// The trajectory unit registers its own default cap (10 at 1e-5): were
	// the units added, 200 + 1 would be refused.
	code, out, stderr = gpope(data)
	if code != 0 || chargedTo(t, led) != id {
		t.Fatalf("gpope on the source: %d %q %q", code, out, stderr)
	}
	// The unstable output, and part of it, are charged to the source.
	unHead := filepath.Join(dir, "unstable-head.jsonl")
	headLog(t, un, unHead, 3)
	for _, f := range []string{un, unHead} {
		code, out, stderr := gpope(f)
		if code != 0 || chargedTo(t, led) != id {
			t.Errorf("gpope on %s: exit %d, %q %q; want dataset %s", filepath.Base(f), code, out, stderr, id)
		}
	}
	// The stable release carries no behaviour probabilities, so gtd2
	// refuses it; any run on it, or on part of it, would be charged to the
	// source.
	stHead := filepath.Join(dir, "stable-head.jsonl")
	headLog(t, st, stHead, 1)
	for _, f := range []string{st, stHead} {
		var got string
		ix, err := sessionlog.ScanLog(f, sessionlog.ReaderOptions{OptionalProb: true}, nil)
		if err == nil {
			var s *ledger.Store
			if s, err = ledger.Open(led, ledger.Options{MustExist: true, ReadOnly: true}); err == nil {
				got, err = s.ResolveDataset(ix.ID(), ix.Records())
				s.Close()
			}
		}
		if err != nil || got != id {
			t.Errorf("%s: dataset %q (%v), want %s", filepath.Base(f), got, err, id)
		}
	}
	// A second SVT run composes with the first at the expert unit only:
	// 400 > 300 is refused although the trajectory unit is far below its
	// cap.
	code, _, stderr = runCLI(t, "offline", "svt", "--data", data, "--experts", experts, "--epsilon", "200", "--delta", "0.1",
		"--pmin", "0.5", "--queries", "10", "--out-stable", filepath.Join(dir, "s2.jsonl"), "--out-unstable", filepath.Join(dir, "u2.jsonl"),
		"--ledger", led, "--seed", "1")
	if code != 1 || !strings.Contains(stderr, "budget exceeded") || !strings.Contains(stderr, "unit expert") {
		t.Errorf("second svt: %d %q", code, stderr)
	}
	ds := showDatasets(t, led)
	d := ds[id]
	tr, ex := d.Units[ledger.UnitTrajectory], d.Units[ledger.UnitExpert]
	if len(ds) != 1 || len(d.Units) != 2 || len(d.DerivedFiles) != 2 {
		t.Fatalf("datasets %+v", ds)
	}
	if ex.Runs != 1 || ex.Epsilon != 200 || ex.CapEpsilon != 300 || ex.Delta != 0.5 {
		t.Errorf("expert unit %+v: want 1 run, epsilon 200 of cap 300 at 0.5", ex)
	}
	// Three GPOPE runs at epsilon 1 compose (RDP) to between 1 and 3; the
	// SVT release's 200 is not in it.
	if tr.Runs != 3 || !(tr.Epsilon > 1 && tr.Epsilon <= 3) || tr.CapEpsilon != 10 || tr.Delta != 1e-5 {
		t.Errorf("trajectory unit %+v: want 3 runs, 1 < epsilon <= 3, cap 10 at 1e-5", tr)
	}
	code, out, stderr = runCLI(t, "ledger", "verify", "--data", led)
	if code != 0 || !strings.Contains(out, "unit expert: 1 runs, epsilon 200 of cap 300 at delta 0.5") || !strings.Contains(out, "2 derived files") {
		t.Errorf("verify: %d %q %q", code, out, stderr)
	}
	// set-cap needs --unit on a dataset with two.
	code, _, stderr = runCLI(t, "ledger", "set-cap", "--data", led, "--dataset", id, "--epsilon", "20", "--delta", "1e-5", "--reason", "x")
	if code != 2 || !strings.Contains(stderr, "expert, trajectory: give --unit") {
		t.Errorf("set-cap without --unit: %d %q", code, stderr)
	}
}
