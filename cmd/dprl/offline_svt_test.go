package main

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"dprl/ledger"
	"dprl/offline/svt"
	"dprl/policy"
	"dprl/sessionlog"
)

// svtFixture generates m quick experts (one PPO update each) and their log
// with dprl sims experts; it returns the log and the experts directory.
func svtFixture(t *testing.T, m int, pmin string) (data, experts string) {
	t.Helper()
	dir := t.TempDir()
	data, experts = filepath.Join(dir, "data.jsonl"), filepath.Join(dir, "experts")
	code, out, stderr := runCLI(t, "sims", "experts", "--env", "cartpole", "--m", strconv.Itoa(m), "--trajectories", "2",
		"--users", "32", "--pmin", pmin, "--out-dir", experts, "--log", data, "--seed", "3", "--json")
	if code != 0 {
		t.Fatalf("sims experts: exit %d: %s", code, stderr)
	}
	var r svt.DatasetSummary
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Sessions != 2*m || !r.Seeded || r.DatasetID == "" {
		t.Fatalf("sims experts: %v %+v", err, r)
	}
	return data, experts
}

// ledgerEntries returns the number of entries in the ledger at dir (0 if it
// was never created).
func ledgerEntries(t *testing.T, dir string) uint64 {
	t.Helper()
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return 0
	}
	s, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h, err := s.Head()
	if err != nil {
		t.Fatal(err)
	}
	return h.Seq
}

func mustReadSessions(t *testing.T, path string) []sessionlog.Session {
	t.Helper()
	return mustReadSessionsOpt(t, path, sessionlog.ReaderOptions{Name: path})
}

// mustReadSessionsOpt reads every session of path with the reader options.
func mustReadSessionsOpt(t *testing.T, path string, opt sessionlog.ReaderOptions) []sessionlog.Session {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := sessionlog.NewReader(f, opt)
	var out []sessionlog.Session
	for {
		s, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
}

func TestOfflineSVT(t *testing.T) {
	// p_min = 1/|A| = 0.5 makes the experts uniform, so count(prefix) =
	// M 0.5^k = 60, 30, 15, ... with M = 120; at eps1 = 200, delta1 = 0.1,
	// T = 10, eps' is solved for (the paper's closed form would compose
	// above 200): 1.11, and the noisy threshold is about 44.4 (scales 1.8
	// and 3.6), so the stable set holds prefixes of mostly 1 step.
	const m = 120
	data, experts := svtFixture(t, m, "0.5")
	dir := t.TempDir()
	led := filepath.Join(dir, "ledger")
	st, un := filepath.Join(dir, "stable.jsonl"), filepath.Join(dir, "unstable.jsonl")
	args := func(led string) []string {
		return []string{"offline", "svt", "--data", data, "--experts", experts, "--epsilon", "200", "--delta", "0.1",
			"--pmin", "0.5", "--queries", "10", "--max-len", "500", "--out-stable", st, "--out-unstable", un,
			"--ledger", led, "--dataset-epsilon", "1000", "--dataset-delta", "0.5", "--seed", "1", "--json"}
	}
	code, out, stderr := runCLI(t, args(led)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r svt.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var raw map[string]any
	_ = json.Unmarshal([]byte(out), &raw)
	for _, k := range []string{"stable_trajectories", "stable_transitions", "prefix_histogram", "epsilon", "delta", "non_private"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	// The dataset id differs between neighbouring logs: only under
	// non_private.
	if _, ok := raw["dataset_id"]; ok {
		t.Error("dataset_id printed beside the epsilon")
	}
	np := r.NonPrivate
	if r.Epsilon != 200 || r.Delta != 0.1 || r.Queried != 10 || r.Unit != "expert" || !r.EpsPrimeSolved || np == nil || np.Experts != m || np.Trajectories != 2*m {
		t.Fatalf("%+v %+v", r, np)
	}
	if r.StableTransitions == 0 || r.StableTransitions+np.UnstableTransitions != np.Transitions {
		t.Errorf("stable %d + unstable %d != %d (or nothing stable)", r.StableTransitions, np.UnstableTransitions, np.Transitions)
	}
	hist := 0
	for _, b := range r.PrefixHistogram {
		hist += b.Count
	}
	if hist != r.StableTrajectories {
		t.Errorf("histogram counts %d prefixes, %d stable", hist, r.StableTrajectories)
	}
	checkSVTRelease(t, data, st, r.StableTrajectories)
	unstable := mustReadSessions(t, un)
	if len(unstable) != np.UnstableTrajectories {
		t.Errorf("the unstable file holds %d sessions, result says %d", len(unstable), np.UnstableTrajectories)
	}
	for _, u := range unstable {
		if u.Expert == "" {
			t.Errorf("unstable %q lost its expert id", u.Session)
		}
	}
	if n := ledgerEntries(t, led); n != 3 {
		t.Errorf("%d ledger entries, want 3 (the run and its two derived files)", n)
	}
	s, err := ledger.Open(led, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Entries(func(e ledger.Entry) error {
		if e.Kind == ledger.KindDerived {
			if e.DerivedFrom != r.LedgerSeq || e.DatasetID != r.NonPrivate.DatasetID {
				t.Errorf("derived entry %+v", e)
			}
			return nil
		}
		if e.Unit != ledger.UnitExpert || len(e.Fixed) != 1 || e.Fixed[0].Epsilon != 200 || e.Fixed[0].Delta != 0.1 ||
			!strings.Contains(e.Fixed[0].Source, "Theorem 5.5") || !e.Seeded || e.Participants != m || e.DatasetID != r.NonPrivate.DatasetID {
			t.Errorf("entry %+v", e)
		}
		return nil
	})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Seeded runs repeat (--force: over the first run's outputs).
	code, out2, _ := runCLI(t, append(args(filepath.Join(dir, "ledger2")), "--force")...)
	var r2 svt.Report
	_ = json.Unmarshal([]byte(out2), &r2)
	if code != 0 || r2.StableTransitions != r.StableTransitions || len(r2.PrefixHistogram) != len(r.PrefixHistogram) {
		t.Errorf("seeded rerun: %d stable, want %d", r2.StableTransitions, r.StableTransitions)
	}

	// A production run (no --seed, no --out-unstable) prints no statistic
	// of the private log and writes no unstable file.
	st3, un3 := filepath.Join(dir, "stable3.jsonl"), filepath.Join(dir, "unstable3.jsonl")
	prod := []string{"offline", "svt", "--data", data, "--experts", experts, "--epsilon", "200", "--delta", "0.1",
		"--pmin", "0.5", "--queries", "10", "--max-len", "500", "--out-stable", st3,
		"--ledger", filepath.Join(dir, "ledger3"), "--dataset-epsilon", "1000", "--dataset-delta", "0.5", "--force"}
	for _, asJSON := range []bool{true, false} {
		code, out3, stderr := runCLI(t, append(prod, "--json="+strconv.FormatBool(asJSON))...)
		if code != 0 {
			t.Fatalf("production run: exit %d: %s", code, stderr)
		}
		if asJSON {
			var raw3 map[string]any
			if err := json.Unmarshal([]byte(out3), &raw3); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"non_private", "experts", "trajectories", "transitions", "unstable_transitions", "out_unstable"} {
				if _, ok := raw3[k]; ok {
					t.Errorf("production JSON has %q:\n%s", k, out3)
				}
			}
			checkSVTRelease(t, data, st3, int(raw3["stable_trajectories"].(float64)))
		} else if strings.Contains(out3, "non-private") || strings.Contains(out3, strconv.Itoa(m)+" experts") || strings.Contains(out3, "unstable") {
			t.Errorf("production text output shows private statistics:\n%s", out3)
		}
	}
	if _, err := os.Stat(un3); err == nil {
		t.Error("an unstable file was written without --out-unstable")
	}
}

// checkSVTRelease checks the stable file of a release from the log data:
// n records with fresh ids stable-1..stable-n, no user, expert, policy
// version, behaviour probability or source session id, and each record a
// prefix of a logged trajectory (observations, actions, rewards; the next
// observation as final_obs, non-terminal, when cut). A reader that needs
// behaviour probabilities refuses the file, naming its first line.
func checkSVTRelease(t *testing.T, data, stablePath string, n int) {
	t.Helper()
	logged := mustReadSessions(t, data)
	b, err := os.ReadFile(stablePath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, bad := range []string{`"user"`, `"expert"`, `"policy_version"`, `"prob"`, `"logp"`} {
		if strings.Contains(text, bad) {
			t.Errorf("the release contains %s", bad)
		}
	}
	for _, o := range logged {
		if strings.Contains(text, `"`+o.Session+`"`) || strings.Contains(text, `"`+o.Expert+`"`) {
			t.Fatalf("the release names the logged session %q or expert %q", o.Session, o.Expert)
		}
	}
	f, err := os.Open(stablePath)
	if err != nil {
		t.Fatal(err)
	}
	_, err = sessionlog.NewReader(f, sessionlog.ReaderOptions{Name: stablePath}).Next()
	f.Close()
	if n > 0 && (err == nil || !strings.Contains(err.Error(), stablePath+":1:") || !strings.Contains(err.Error(), "prob: missing")) {
		t.Errorf("a reader needing probabilities read the release: err %v", err)
	}
	stable := mustReadSessionsOpt(t, stablePath, sessionlog.ReaderOptions{Name: stablePath, OptionalProb: true})
	if len(stable) != n || n == 0 {
		t.Fatalf("the release holds %d records, result says %d (want > 0)", len(stable), n)
	}
	for j, s := range stable {
		if want := "stable-" + strconv.Itoa(j+1); s.Session != want || s.User != "" || s.Expert != "" || s.PolicyVersion != nil {
			t.Errorf("record %d: %q user %q expert %q version %v, want %q and no identifiers", j, s.Session, s.User, s.Expert, s.PolicyVersion, want)
		}
		var src *sessionlog.Session
		for i := range logged { // the logged trajectory this is a prefix of
			o := &logged[i]
			if len(o.Steps) >= len(s.Steps) && sameSteps(s.Steps, o.Steps[:len(s.Steps)]) {
				src = o
				break
			}
		}
		if src == nil {
			t.Fatalf("record %d is not a prefix of any logged trajectory", j)
		}
		for k, st := range s.Steps {
			if st.HasProb() {
				t.Errorf("record %d step %d carries a behaviour probability", j, k)
			}
		}
		if len(s.Steps) < len(src.Steps) && (s.Terminal || s.FinalObs[0] != src.Steps[len(s.Steps)].Obs[0]) {
			t.Errorf("cut record %d: terminal %v final_obs %v, want false and the next observation", j, s.Terminal, s.FinalObs)
		}
	}
}

// sameSteps reports whether two step sequences have the same observations,
// actions and rewards.
func sameSteps(a, b []sessionlog.Step) bool {
	for k := range a {
		if a[k].Action.Index != b[k].Action.Index || a[k].Reward != b[k].Reward || len(a[k].Obs) != len(b[k].Obs) {
			return false
		}
		for j := range a[k].Obs {
			if a[k].Obs[j] != b[k].Obs[j] {
				return false
			}
		}
	}
	return true
}

func TestOfflineSVTBadInput(t *testing.T) {
	data, experts := svtFixture(t, 3, "0.02")
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(good), "\n")
	malformed := write("malformed.jsonl", lines[0]+"{\"session\":\"x\",\"steps\":[{\"obs\":[1,2,3,4],\"action\":0,\"reward\":1}],\"terminal\":true}\n")
	unknown := write("unknown.jsonl", lines[0]+strings.Replace(lines[1], `"expert":"e0"`, `"expert":"e99"`, 1))
	noExpert := write("noexpert.jsonl", strings.Replace(lines[0], `"expert":"e0",`, "", 1))
	continuous := write("continuous.jsonl", `{"session":"c1","expert":"e0","steps":[{"obs":[0,0,0,0],"action":[0.5],"reward":1,"prob":0.3}],"terminal":true}`+"\n")
	// Experts whose snapshots do not fit the log.
	wrongObs := filepath.Join(dir, "wrong-obs")
	wrongAct := filepath.Join(dir, "wrong-act")
	for _, d := range []string{wrongObs, wrongAct} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cfg := svt.ExpertTrainConfig()
	for i, id := range []string{"e0", "e1", "e2"} {
		for _, c := range []struct {
			dir  string
			spec policy.Spec
		}{{wrongObs, policy.Spec{ObsDim: 6, Kind: policy.ActionDiscrete, NumActions: 2}}, {wrongAct, policy.Spec{ObsDim: 4, Kind: policy.ActionDiscrete, NumActions: 3}}} {
			n, _ := policy.NumSnapshotParams(c.spec, cfg.PPO.Hidden)
			theta := make([]float64, n)
			theta[i] = 1
			snap, err := policy.NewSnapshot(c.spec, cfg, 1, theta)
			if err != nil {
				t.Fatal(err)
			}
			if err := svt.WriteExpert(c.dir, id, snap); err != nil {
				t.Fatal(err)
			}
		}
	}
	base := func(d, ex string, extra ...string) []string {
		return append([]string{"offline", "svt", "--data", d, "--experts", ex, "--epsilon", "5", "--delta", "1e-3",
			"--dataset-delta", "1e-2", "--queries", "1", "--out-stable", filepath.Join(dir, "s.jsonl"),
			"--out-unstable", filepath.Join(dir, "u.jsonl")}, extra...)
	}
	cases := []struct {
		name string
		args []string
		code int
		text string
	}{
		{"malformed log", base(malformed, experts), 1, "malformed.jsonl:2"},
		{"unknown expert", base(unknown, experts), 1, "unknown expert: 1 expert id(s) of the log have no .snap file"},
		{"no expert id", base(noExpert, experts), 1, "names no expert"},
		{"continuous actions", base(continuous, experts), 1, "continuous actions"},
		{"snapshot obs dim", base(data, wrongObs), 1, "obs_dim 6 in the snapshot != 4 in the log"},
		{"snapshot actions", base(data, wrongAct), 1, "logged prob"},
		{"other p_min", base(data, experts, "--pmin", "0.05"), 1, "another p_min"},
		{"too many queries", base(data, experts, "--queries", "100"), 1, "the log has 6 trajectories"},
		{"too long", base(data, experts, "--max-len", "3"), 1, "above --max-len 3"},
		{"budget exceeded", base(data, experts, "--dataset-epsilon", "4"), 1, "budget exceeded"},
		{"delta above dataset delta", base(data, experts, "--dataset-delta", "1e-5"), 2, "exceeds the dataset's --dataset-delta"},
		{"epsilon zero", base(data, experts, "--epsilon", "0"), 2, "eps1"},
		{"same outputs", base(data, experts, "--out-unstable", filepath.Join(dir, "s.jsonl")), 2, "the same file"},
		{"missing data", base(filepath.Join(dir, "nope.jsonl"), experts), 1, "nope.jsonl"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			led := filepath.Join(dir, "ledger-"+strconv.Itoa(i))
			code, _, stderr := runCLI(t, append(c.args, "--ledger", led)...)
			if code != c.code || !strings.Contains(stderr, c.text) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, c.code, c.text)
			}
			if n := ledgerEntries(t, led); n != 0 {
				t.Errorf("%d ledger entries after a refused run", n)
			}
			for _, o := range []string{"s.jsonl", "u.jsonl"} {
				if _, err := os.Stat(filepath.Join(dir, o)); err == nil {
					t.Errorf("%s written by a refused run", o)
				}
			}
		})
	}
}

func TestSimsExpertsUsage(t *testing.T) {
	dir := t.TempDir()
	base := []string{"sims", "experts", "--out-dir", filepath.Join(dir, "ex"), "--log", filepath.Join(dir, "d.jsonl")}
	cases := []struct {
		name string
		args []string
		code int
		text string
	}{
		{"no m", nil, 2, "--m 0"},
		{"bad env", []string{"--m", "2", "--env", "pendulum"}, 2, "--env \"pendulum\""},
		{"all reported", []string{"--m", "2", "--trajectories", "0", "--users", "0"}, 2, "--trajectories 0: want >= 1; --users 0"},
		{"bases above m", []string{"--m", "2", "--bases", "3"}, 2, "--bases 3"},
		{"p_min above 1/|A|", []string{"--m", "1", "--pmin", "0.6"}, 2, "1/|A| = 1/2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append(base, c.args...)...)
			if code != c.code || !strings.Contains(stderr, c.text) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, c.code, c.text)
			}
		})
	}
}
