package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/ledger"
	"dprl/offline/budget"
	"dprl/offline/qlearn"
	"dprl/policy/qnet"
)

// learnArgs are a small, fast learner's flags.
var learnArgs = []string{"--env", "cartpole", "--hidden", "8", "--steps", "60", "--batch", "12", "--eval-episodes", "2", "--eval-every", "30", "--log-level", "disabled"}

func runLearn(t *testing.T, args ...string) (qlearn.Result, int, string) {
	t.Helper()
	code, out, stderr := runCLI(t, append(append([]string{"offline", "learn"}, learnArgs...), append(args, "--json")...)...)
	var r qlearn.Result
	if code == 0 {
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("learn output: %v: %s", err, out)
		}
	}
	return r, code, stderr
}

// datasetSpent returns the composed epsilon at unit of the dataset
// the records of file belong to.
func datasetSpent(t *testing.T, led, file string, unit ledger.Unit) float64 {
	t.Helper()
	s, err := ledger.Open(led, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id, err := budget.DatasetOfFile(s, file)
	if err != nil {
		t.Fatal(err)
	}
	d, ok, err := s.Dataset(id)
	if err != nil || !ok {
		t.Fatalf("dataset %s: %v %v", id, ok, err)
	}
	spent, err := d.Units[unit].Spent()
	if err != nil {
		t.Fatal(err)
	}
	return spent
}

// TestOfflineLearn runs the three modes on a small expert log: the
// non-private reference (uncharged, labelled), expert-level DP-SGD
// (charged to the log's dataset) and selective DP-SGD after an SVT release
// (charged, through the ledger's lineage, to the source dataset, beside
// the release's own cost), then draws the results.
func TestOfflineLearn(t *testing.T) {
	data, experts := svtFixture(t, 120, "0.5")
	dir := t.TempDir()
	led := filepath.Join(dir, "ledger")

	np, code, stderr := runLearn(t, "--algo", "bcq", "--data", data, "--non-private", "--seed", "1", "--out", filepath.Join(dir, "np.snap"))
	if code != 0 || np.Private || np.Warning != qlearn.NotPrivate || np.Epsilon != 0 || len(np.Curve) != 2 || np.Steps != 60 {
		t.Fatalf("non-private: exit %d %s %+v", code, stderr, np)
	}
	if _, err := os.Stat(led); err == nil {
		t.Fatal("the non-private run opened a ledger")
	}
	b, err := os.ReadFile(filepath.Join(dir, "np.snap"))
	if err != nil {
		t.Fatal(err)
	}
	if s, _, err := qnet.ParseSnapshot(b); err != nil || s.Private || s.Algo != qlearn.BCQ {
		t.Fatalf("snapshot: %v %+v", err, s)
	} else if p, ok := s.Provenance(); !ok || p != (ledger.Provenance{}) {
		t.Fatalf("non-private snapshot's provenance %+v (recorded %v), want NOT private", p, ok)
	}

	budgetFlags := []string{"--ledger", led, "--dataset-epsilon", "1000", "--dataset-delta", "0.5"}
	dpSnap := filepath.Join(dir, "dp.snap")
	dp, code, stderr := runLearn(t, append([]string{"--algo", "cql", "--data", data, "--experts", "120", "--epsilon", "4", "--delta", "1e-3", "--seed", "2", "--out", dpSnap}, budgetFlags...)...)
	if code != 0 || !dp.Private || dp.Mode != "dp-sgd" || dp.Epsilon > 4 || dp.Epsilon < 3.9 || dp.Q != 0.1 || dp.DPSteps != 60 || dp.M != 120 || dp.LedgerSeq != 1 {
		t.Fatalf("dp-sgd: exit %d %s %+v", code, stderr, dp)
	}
	// The snapshot records the run's charge: its provenance.
	if b, err = os.ReadFile(dpSnap); err != nil {
		t.Fatal(err)
	}
	if s, _, err := qnet.ParseSnapshot(b); err != nil {
		t.Fatal(err)
	} else if p, ok := s.Provenance(); !ok || p != (ledger.Provenance{Private: true, Epsilon: dp.Epsilon, Delta: dp.Delta, Unit: ledger.UnitExpert, LedgerSeq: dp.LedgerSeq}) {
		t.Fatalf("dp-sgd snapshot's provenance %+v (recorded %v), run %+v", p, ok, dp)
	}

	// The release, on its own ledger.
	led2 := filepath.Join(dir, "ledger2")
	st, un := filepath.Join(dir, "stable.jsonl"), filepath.Join(dir, "unstable.jsonl")
	release := func(led, st, un, capEps, capDelta string) {
		t.Helper()
		code, _, stderr := runCLI(t, "offline", "svt", "--data", data, "--experts", experts, "--epsilon", "200", "--delta", "0.1",
			"--pmin", "0.5", "--queries", "10", "--max-len", "500", "--out-stable", st, "--out-unstable", un,
			"--ledger", led, "--dataset-epsilon", capEps, "--dataset-delta", capDelta, "--seed", "1", "--json")
		if code != 0 {
			t.Fatalf("svt: exit %d: %s", code, stderr)
		}
	}
	release(led2, st, un, "1000", "0.5")
	// A second release with a cap that leaves (1, 0.01).
	led3 := filepath.Join(dir, "ledger3")
	st3, un3 := filepath.Join(dir, "stable3.jsonl"), filepath.Join(dir, "unstable3.jsonl")
	release(led3, st3, un3, "201", "0.11")
	before := datasetSpent(t, led2, data, ledger.UnitExpert)
	entries := ledgerEntries(t, led2)
	sel, code, stderr := runLearn(t, "--algo", "bcq", "--stable", st, "--unstable", un, "--experts", "120", "--p", "0.5",
		"--epsilon", "5", "--delta", "0.01", "--seed", "3", "--ledger", led2)
	if code != 0 || sel.Mode != "selective" || !sel.Private || sel.DPSteps == 0 || sel.DPSteps == 60 || sel.P != 0.5 {
		t.Fatalf("selective: exit %d %s %+v", code, stderr, sel)
	}
	after := datasetSpent(t, led2, data, ledger.UnitExpert)
	// The ledger composes the learner's events at the cap's delta less
	// the release's (0.4 here), where they cost less than at 0.01.
	if !(after > before) || !(after <= before+5) || sel.DatasetSpent != after {
		t.Errorf("the source dataset's epsilon went from %v to %v (result: %v), want up by at most 5", before, after, sel.DatasetSpent)
	}
	if got := ledgerEntries(t, led2); got != entries+1 {
		t.Errorf("%d entries after the selective run, want %d", got, entries+1)
	}

	// A run on the stable release itself (public, but the ledger cannot
	// know what a run on it claims) is charged to the source dataset too.
	if _, code, stderr := runLearn(t, "--algo", "cql", "--data", st, "--unit", "trajectory", "--batch", "2", "--epsilon", "1", "--delta", "1e-3",
		"--seed", "4", "--ledger", led2); code != 0 {
		t.Fatalf("dp-sgd on the stable release: exit %d %s", code, stderr)
	}
	// (Composed at the cap's delta, 1e-5 by default, so above the run's
	// own epsilon at 1e-3.)
	if spent := datasetSpent(t, led2, data, ledger.UnitTrajectory); !(spent > 0) {
		t.Errorf("the source dataset's trajectory-level epsilon is %v after a run on its stable release, want > 0", spent)
	}

	// Refused runs write nothing.
	refused := []struct {
		name string
		args []string
		want string
	}{
		{"unknown source", []string{"--stable", st, "--unstable", un, "--ledger", filepath.Join(dir, "fresh")}, "source is unknown"},
		{"stable not released", []string{"--stable", data, "--unstable", un, "--ledger", led2}, "not a released file"},
		{"stable is the unstable set", []string{"--stable", un, "--unstable", st, "--ledger", led2}, "names no expert"},
		{"over the cap", []string{"--stable", st3, "--unstable", un3, "--ledger", led3}, "budget exceeded"},
		{"sigma too small", []string{"--stable", st, "--unstable", un, "--ledger", led2, "--sigma", "0.3"}, "--sigma 0.3"},
	}
	for _, c := range refused {
		args := append([]string{"--algo", "cql", "--experts", "120", "--p", "0.5", "--epsilon", "5", "--delta", "0.01"}, c.args...)
		entries := ledgerEntries(t, led2) + ledgerEntries(t, led3)
		_, code, stderr := runLearn(t, args...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q, want a refusal naming %q", c.name, code, stderr, c.want)
		}
		if got := ledgerEntries(t, led2) + ledgerEntries(t, led3); got != entries {
			t.Errorf("%s: the refused run wrote %d entries", c.name, got-entries)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "fresh")); err == nil {
		t.Error("a refused derived run created a ledger")
	}

	// Usage errors.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--data", data, "--non-private", "--epsilon", "1"}, "--epsilon does not apply"},
		{[]string{"--data", data, "--stable", st, "--unstable", un, "--epsilon", "1"}, "--data and --stable"},
		{[]string{"--algo", "dqn", "--data", data}, "--algo"},
		{[]string{"--data", data, "--unit", "user", "--epsilon", "1"}, "--unit"},
		{[]string{"--data", data, "--epsilon", "1"}, "--experts 0"},
		{[]string{"--stable", st, "--unstable", un, "--unit", "trajectory", "--epsilon", "1"}, "--unit"},
		{[]string{"--data", data, "--p", "0.5", "--epsilon", "1", "--experts", "120"}, "--p 0.5"},
	} {
		code, _, stderr := runCLI(t, append(append([]string{"offline", "learn"}, learnArgs...), c.args...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want a usage error naming %q", c.args, code, stderr, c.want)
		}
	}

	// The figure and table.
	var files []string
	for i, r := range []qlearn.Result{np, dp, sel} {
		b, _ := json.Marshal(r)
		f := filepath.Join(dir, "r"+string(rune('0'+i))+".json")
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	png := filepath.Join(dir, "fig.png")
	code, out, stderr := runCLI(t, append([]string{"plot", "learn", "--out", png}, files...)...)
	if code != 0 || !strings.Contains(out, "selective") || !strings.Contains(out, "normalised") {
		t.Fatalf("plot learn: exit %d %s %s", code, out, stderr)
	}
	if fi, err := os.Stat(png); err != nil || fi.Size() < 1000 {
		t.Errorf("plot learn wrote no figure: %v", err)
	}
}
