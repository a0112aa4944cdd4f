package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/offline/ope"
)

// TestOfflineOPE runs dprl offline ope on a logged bandit: the private
// audit prints its guarantee and is charged once; a seeded run repeats;
// the non-private report is labelled; bad inputs are refused before any
// charge with an error naming the flag or the record.
func TestOfflineOPE(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "bandit.jsonl")
	if code, _, stderr := runCLI(t, "sims", "generate", "--env", "bandit", "--behavior", "random", "--episodes", "4000", "--out", data, "--seed", "3"); code != 0 {
		t.Fatal(stderr)
	}
	led := filepath.Join(dir, "ledger")
	audit := func(extra ...string) (int, string, string) {
		return runCLI(t, append([]string{"offline", "ope", "--data", data, "--target", "uniform", "--actions", "10", "--ledger", led}, extra...)...)
	}
	private := []string{"--epsilon", "5", "--delta", "1e-5", "--weight-bound", "10", "--seed", "1"}

	code, out, stderr := audit(append(private, "--json", "--dataset-epsilon", "20")...)
	if code != 0 {
		t.Fatalf("private audit: exit %d, %s", code, stderr)
	}
	var r ope.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	p := r.Private
	if p == nil || r.NonPrivate != nil || p.Epsilon > 5 || p.Epsilon < 4.99 || p.LedgerSeq != 1 || p.Estimate.Estimator != ope.EstPrivateEL {
		t.Fatalf("private result %s", out)
	}
	// The uniform target on a uniform logger: the value is the mean click,
	// about 0.23 on this bandit; the interval must hold it and say something.
	iv := p.Estimate.Intervals[0]
	if !(iv.Lo < 0.23 && 0.23 < iv.Hi) || iv.Width() > 0.2 || p.LowerEnd != iv.Lo {
		t.Errorf("interval [%v, %v], lower end %v", iv.Lo, iv.Hi, p.LowerEnd)
	}
	if ledgerEntries(t, led) != 1 {
		t.Fatalf("%d ledger entries after one run", ledgerEntries(t, led))
	}
	// Seeded: the same noise again (a second charge).
	if code, out2, _ := audit(append(private, "--json")...); code != 0 || !strings.Contains(out2, `"lower_end": `+jsonNumber(t, out, "lower_end")) {
		t.Errorf("seeded rerun: exit %d, %s", code, out2)
	}

	// Text, private with the labelled non-private section, and the figure.
	png := filepath.Join(dir, "audit.png")
	code, out, stderr = audit(append(private, "--non-private", "--plot", png)...)
	if fi, err := os.Stat(png); err != nil || fi.Size() < 10000 {
		t.Errorf("figure: %v", err)
	}
	if code != 0 || !strings.HasPrefix(out, "target uniform\nlower end ") || !strings.Contains(out, "private: (epsilon 5, delta 1e-05)") ||
		!strings.Contains(out, "--- "+ope.NotCovered+" ---") || !strings.Contains(out, "EL ") || !strings.Contains(out, "decisions 4000") {
		t.Errorf("text: exit %d\n%s\n%s", code, out, stderr)
	}
	// The non-private report alone charges nothing.
	n0 := ledgerEntries(t, led)
	if code, out, stderr := audit("--non-private", "--seed", "1"); code != 0 || strings.Contains(out, "private: (") || ledgerEntries(t, led) != n0 {
		t.Errorf("non-private only: exit %d %s %s", code, out, stderr)
	}

	// Refusals: usage errors name the flag; a bad record names its line;
	// nothing is charged.
	multi := filepath.Join(dir, "chain.jsonl")
	if code, _, stderr := runCLI(t, "sims", "generate", "--env", "chain", "--behavior", "random", "--episodes", "5", "--out", multi, "--seed", "1"); code != 0 {
		t.Fatal(stderr)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "give --epsilon"},
		{[]string{"--epsilon", "1", "--delta", "1e-5"}, 2, "--weight-bound"},
		{[]string{"--epsilon", "1", "--delta", "1e-5", "--weight-bound", "0.5"}, 2, "--weight-bound 0.5"},
		{[]string{"--epsilon", "1", "--weight-bound", "10"}, 2, "--delta"},
		{[]string{"--non-private", "--reward-low", "1", "--reward-high", "0"}, 2, "--reward-low"},
		{[]string{"--non-private", "--reward-high", "0.5"}, 1, "outside the public range"},
		{[]string{"--non-private", "--actions", "3"}, 1, "bandit.jsonl:1: action 7 outside the 3 public actions"},
	} {
		args := []string{"offline", "ope", "--data", data, "--target", "uniform", "--ledger", led}
		if !strings.Contains(strings.Join(c.args, " "), "--actions") {
			args = append(args, "--actions", "10")
		}
		code, _, stderr := runCLI(t, append(args, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
	if code, _, stderr := runCLI(t, "offline", "ope", "--data", multi, "--target", "uniform", "--actions", "2", "--non-private"); code != 1 || !strings.Contains(stderr, "chain.jsonl:2: 3 steps") || !strings.Contains(stderr, "one-step decisions") {
		t.Errorf("multi-step log: exit %d, %q", code, stderr)
	}
	if ledgerEntries(t, led) != n0 {
		t.Errorf("a refused run was charged")
	}
	if _, err := os.Stat(led); err != nil {
		t.Fatal(err)
	}
}

// jsonNumber returns the raw text of a top-level or nested number field
// of a JSON document, as printed.
func jsonNumber(t *testing.T, doc, field string) string {
	t.Helper()
	i := strings.Index(doc, `"`+field+`": `)
	if i < 0 {
		t.Fatalf("no %s in %s", field, doc)
	}
	rest := doc[i+len(field)+4:]
	return rest[:strings.IndexAny(rest, ",\n}")]
}

// TestOfflineOPEEpisodes audits whole episodes (--horizon): the
// non-private section holds EL-episode, PDIS, PDWIS, DR-episode and
// WDR-episode (the target's distribution and the observations come from
// the log and the target policy), the private run is
// per episode over the return range, and an episode longer than the
// horizon is refused with its line.
func TestOfflineOPEEpisodes(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "rs.jsonl")
	if code, _, stderr := runCLI(t, "sims", "generate", "--env", "riverswim", "--behavior", "random", "--episodes", "400", "--out", data, "--seed", "2"); code != 0 {
		t.Fatal(stderr)
	}
	base := []string{"offline", "ope", "--data", data, "--target", "uniform", "--actions", "2", "--ledger", filepath.Join(dir, "ledger"), "--seed", "1"}
	code, out, stderr := runCLI(t, append(base, "--horizon", "20", "--weight-bound", "1.01", "--epsilon", "5", "--delta", "1e-5", "--non-private", "--bootstrap", "50", "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r ope.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	np := r.NonPrivate
	if r.Per != "episode" || np == nil || np.Report != nil || len(np.Episodes) != 5 || np.Episodes[0].Estimator != ope.EstTrajEL ||
		np.Episodes[3].Estimator != ope.EstTrajDR || np.Episodes[4].Estimator != ope.EstTrajWDR || len(np.EpisodeNotes) != 0 {
		t.Fatalf("result %s", out)
	}
	t.Logf("on-policy: PDIS %.4f, DR %.4f, WDR %.4f", np.Episodes[1].Value, np.Episodes[3].Value, np.Episodes[4].Value)
	for _, e := range np.Episodes[3:] {
		if len(e.Intervals) != 2 || math.Abs(e.Value-np.Episodes[1].Value) > 0.1 {
			t.Errorf("%s %v with %d intervals, want near PDIS's %v (on-policy) with Wald and bootstrap", e.Estimator, e.Value, len(e.Intervals), np.Episodes[1].Value)
		}
	}
	// On-policy (uniform logger and target): every weight is 1 and the
	// three estimates are the mean return.
	if e := np.Episodes; math.Abs(e[0].Value-e[1].Value) > 1e-9 || math.Abs(e[1].Value-e[2].Value) > 1e-9 {
		t.Errorf("estimates %v, %v, %v", e[0].Value, e[1].Value, e[2].Value)
	}
	if p := r.Private; p == nil || !(p.Estimate.Intervals[0].Lo >= 0 && p.Estimate.Intervals[0].Lo <= p.Estimate.Intervals[0].Hi && p.Estimate.Intervals[0].Hi <= 20) || !strings.HasSuffix(p.Unit, "(one episode)") || p.RewardHigh != 20 || !strings.Contains(p.Mechanism, "horizon 20") {
		t.Errorf("private %+v", r.Private)
	}
	if code, _, stderr := runCLI(t, append(base, "--horizon", "5", "--non-private")...); code != 1 || !strings.Contains(stderr, "rs.jsonl:1: 20 steps, more than the public horizon 5") {
		t.Errorf("short horizon: exit %d, %q", code, stderr)
	}
}
