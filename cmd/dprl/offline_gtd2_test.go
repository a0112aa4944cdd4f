package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"dprl/offline/evaluate"
	"dprl/policy"
)

// notCovered labels every value the privacy guarantee does not cover.
const notCovered = evaluate.NotCovered

// gtd2Fixture generates small logs once per test: chain on-policy for the
// uniform target, chain off-policy (epsilon-greedy advance), mountaincar.
type gtd2Fixture struct {
	dir, chain, chainOff, mc, bad, snap2x3, snap2x2, snap20x2 string
}

func newGTD2Fixture(t *testing.T) gtd2Fixture {
	t.Helper()
	dir := t.TempDir()
	f := gtd2Fixture{dir: dir, chain: filepath.Join(dir, "chain.jsonl"), chainOff: filepath.Join(dir, "chain-off.jsonl"),
		mc: filepath.Join(dir, "mc.jsonl"), bad: filepath.Join(dir, "bad.jsonl")}
	for _, g := range [][]string{
		{"--env", "chain", "--behavior", "random", "--episodes", "300", "--out", f.chain},
		{"--env", "chain", "--behavior", "epsilon-greedy:0.5", "--episodes", "100", "--out", f.chainOff},
		{"--env", "mountaincar", "--behavior", "epsilon-greedy:0.3", "--episodes", "10", "--out", f.mc},
	} {
		if code, _, stderr := runCLI(t, append([]string{"sims", "generate", "--seed", "3"}, g...)...); code != 0 {
			t.Fatalf("generate %v: %s", g, stderr)
		}
	}
	// A log whose third record has a NaN-free but wrong-length observation.
	b, _ := os.ReadFile(f.chain)
	lines := strings.SplitAfter(string(b), "\n")
	bad := strings.Join(lines[:2], "") + `{"session":"x","steps":[{"obs":[1,0],"action":0,"reward":0,"prob":0.5}],"terminal":true}` + "\n" + strings.Join(lines[2:], "")
	if err := os.WriteFile(f.bad, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	f.snap2x3 = writeTestSnapshot(t, dir, "mc.snap", 2, 3)
	f.snap2x2 = writeTestSnapshot(t, dir, "two.snap", 2, 2)
	f.snap20x2 = writeTestSnapshot(t, dir, "chain3.snap", 20, 3)
	return f
}

func writeTestSnapshot(t *testing.T, dir, name string, obsDim, actions int) string {
	t.Helper()
	cfg := policy.DefaultControlConfig()
	cfg.PPO.Hidden = []int{4}
	spec := policy.Spec{ObsDim: obsDim, Kind: policy.ActionDiscrete, NumActions: actions}
	n, err := policy.NumSnapshotParams(spec, cfg.PPO.Hidden)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	theta := make([]float64, n)
	for i := range theta {
		theta[i] = rng.NormFloat64()
	}
	s, err := policy.NewSnapshot(spec, cfg, 1, theta)
	if err != nil {
		t.Fatal(err)
	}
	b, err := policy.MarshalSnapshot(s)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// ledgerRuns returns the number of entries in a ledger directory (0 when the
// ledger was never created).
func ledgerRuns(t *testing.T, dir string) int {
	t.Helper()
	if _, err := os.Stat(dir); err != nil {
		return 0
	}
	code, out, stderr := runCLI(t, "ledger", "show", "--data", dir, "--json")
	if code != 0 {
		t.Fatalf("ledger show: %s", stderr)
	}
	var v struct {
		Entries []json.RawMessage `json:"entries"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	return len(v.Entries)
}

func TestOfflineGTD2Runs(t *testing.T) {
	fx := newGTD2Fixture(t)
	led := filepath.Join(fx.dir, "ledger")
	png := filepath.Join(fx.dir, "mspbe.png")
	args := []string{"offline", "gtd2", "--data", fx.chain, "--env", "chain", "--target", "uniform", "--features", "tabular",
		"--epsilon", "1", "--delta", "1e-5", "--iters", "300", "--step-size", "0.5", "--clip", "0.05", "--batch", "10",
		"--seed", "4", "--ledger", led, "--json", "--plot", png}
	code, out, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var o map[string]any
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"value", "mspbe", "mspbe_kind", "epsilon", "delta", "method", "n_trajectories", "n_source", "batch", "weights", "noise_multiplier", "true_value"} {
		if _, ok := o[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	// Statistics of the private log are not beside the epsilon.
	for _, k := range []string{"dataset_id", "n_transitions", "clipped", "sampling_rate", "sigma", "non_private"} {
		if _, ok := o[k]; ok {
			t.Errorf("JSON of a private run has %q", k)
		}
	}
	if o["mspbe_kind"] != "exact (chain model, behaviour = target)" || o["n_trajectories"].(float64) != 300 || o["epsilon"].(float64) > 1 || o["seeded"] != true ||
		!strings.Contains(o["n_source"].(string), "assumed public") {
		t.Errorf("output %s", out)
	}
	// Charged with the PLD accountant, RDP printed beside it as the
	// cross-check (looser: above the charged epsilon).
	if acc, _ := o["accountant"].(string); !strings.HasPrefix(acc, "pld") || !strings.Contains(acc, "rdp cross-check") {
		t.Errorf("accountant %q, want pld with the rdp cross-check", acc)
	}
	if r, _ := o["rdp_epsilon"].(float64); !(r > o["epsilon"].(float64)) {
		t.Errorf("rdp_epsilon %v not above the pld epsilon %v", o["rdp_epsilon"], o["epsilon"])
	}
	// MSPBE(theta = 0) is 0.025 on this chain: GPOPE must do better.
	if m := o["mspbe"].(float64); !(m < 0.02) {
		t.Errorf("gpope MSPBE %v", m)
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Errorf("plot: %v", err)
	}
	if n := ledgerRuns(t, led); n != 1 {
		t.Errorf("%d ledger entries, want 1", n)
	}
	// Same seed, same weights (a second charge: the cap allows it).
	_, out2, _ := runCLI(t, args...)
	var o2 map[string]any
	json.Unmarshal([]byte(out2), &o2)
	if o2["mspbe"] != o["mspbe"] {
		t.Errorf("seeded runs differ: %v vs %v", o["mspbe"], o2["mspbe"])
	}

	// dp-lsw on the same (on-policy) data, and the non-private references.
	code, out, stderr = runCLI(t, "offline", "gtd2", "--data", fx.chain, "--env", "chain", "--target", "uniform", "--features", "tabular",
		"--method", "dp-lsw", "--epsilon", "1", "--delta", "1e-6", "--ledger", led, "--json")
	if code != 0 || strings.Contains(out, `"sigma"`) || strings.Contains(out, "n_trajectories") || !strings.Contains(out, "smooth sensitivity") || !strings.Contains(out, `"return_range"`) {
		t.Fatalf("dp-lsw: %d %s %s", code, out, stderr)
	}
	if n := ledgerRuns(t, led); n != 3 {
		t.Errorf("%d ledger entries after dp-lsw, want 3", n)
	}
	for _, m := range []string{"lstd", "wis-lstd"} {
		code, out, stderr = runCLI(t, "offline", "gtd2", "--data", fx.chain, "--env", "chain", "--target", "uniform", "--features", "tabular",
			"--method", m, "--non-private", "--ledger", led, "--json")
		var r struct {
			MSPBE      float64 `json:"mspbe"`
			Value      float64 `json:"value"`
			TrueValue  float64 `json:"true_value"`
			NonPrivate struct {
				Warning string `json:"warning"`
				N       int    `json:"n_trajectories"`
			} `json:"non_private"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.MSPBE > 1e-3 || math.Abs(r.Value-r.TrueValue) > 0.05 ||
			r.NonPrivate.Warning != notCovered || r.NonPrivate.N != 300 {
			t.Errorf("%s: %d %+v %s", m, code, r, stderr)
		}
	}
	if n := ledgerRuns(t, led); n != 3 {
		t.Errorf("non-private runs were charged: %d entries", n)
	}
	// Off-policy: wis-lstd and gpope run, with the exact MSPBE given the
	// behaviour; text output names the guarantee.
	code, out, stderr = runCLI(t, "offline", "gtd2", "--data", fx.chainOff, "--env", "chain", "--behavior", "epsilon-greedy:0.5",
		"--target", "uniform", "--features", "tabular", "--epsilon", "1", "--delta", "1e-5", "--iters", "50", "--ledger", led)
	if code != 0 || !strings.Contains(out, "MSPBE:       ") || !strings.Contains(out, "exact (chain model)\n") || !strings.Contains(out, "-DP per trajectory") ||
		strings.Contains(out, "NOT covered") || strings.Contains(out, "transitions") || strings.Contains(out, "clipped") {
		t.Errorf("off-policy gpope: %d %s %s", code, out, stderr)
	}
	// Mountain car: Fourier features. Without public moments the release
	// has no MSPBE; the private log's is only in the --non-private section.
	code, out, stderr = runCLI(t, "offline", "gtd2", "--data", fx.mc, "--env", "mountaincar", "--target", "uniform", "--features", "fourier:2",
		"--method", "wis-lstd", "--non-private", "--json")
	var mc struct {
		MSPBE      *float64 `json:"mspbe"`
		NonPrivate struct {
			MSPBE *float64 `json:"mspbe_private_data"`
		} `json:"non_private"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &mc) != nil || mc.MSPBE != nil || mc.NonPrivate.MSPBE == nil || !strings.Contains(out, notCovered) {
		t.Errorf("mountaincar wis-lstd: %d %s %s", code, out, stderr)
	}
	// --eval-data is a log declared public: other episodes than the
	// private log's. The private log, or a copy of it stripped of its
	// behaviour probabilities or ids, is refused before anything is charged.
	mcPub := filepath.Join(fx.dir, "mc-public.jsonl")
	if code, _, stderr := runCLI(t, "sims", "generate", "--seed", "4", "--env", "mountaincar", "--behavior", "epsilon-greedy:0.3", "--episodes", "5", "--out", mcPub); code != 0 {
		t.Fatalf("generate: %s", stderr)
	}
	before := ledgerEntries(t, led)
	cdir := filepath.Join(fx.dir, "mc-copies")
	if err := os.Mkdir(cdir, 0o755); err != nil {
		t.Fatal(err)
	}
	copies := publicCopies(t, cdir, fx.mc)
	for _, pub := range []string{fx.mc, copies["renamed"], copies["subset"]} {
		code, _, stderr = runCLI(t, "offline", "gtd2", "--data", fx.mc, "--env", "mountaincar", "--target", "epsilon-greedy:0.3", "--features", "fourier:2",
			"--method", "dp-lsw", "--epsilon", "1", "--delta", "1e-6", "--eval-data", pub, "--ledger", led, "--json")
		if code == 0 || !strings.Contains(stderr, "declared public holds private records") || ledgerEntries(t, led) != before {
			t.Errorf("--eval-data %s: exit %d (%s), want a refusal before the charge", pub, code, stderr)
		}
	}
	code, out, stderr = runCLI(t, "offline", "gtd2", "--data", fx.mc, "--env", "mountaincar", "--target", "epsilon-greedy:0.3", "--features", "fourier:2",
		"--method", "dp-lsw", "--epsilon", "1", "--delta", "1e-6", "--eval-data", mcPub, "--ledger", led, "--json")
	if code != 0 || !strings.Contains(out, "empirical (eval data)") {
		t.Errorf("mountaincar dp-lsw: %d %s %s", code, out, stderr)
	}

	// gpope's interval: B = 5 parts of the 300 trajectories, each run at
	// the rate batch / (300/5); one ledger entry, recording that one part's
	// event, which ledger verify recomputes.
	ledCI := filepath.Join(fx.dir, "ledger-ci")
	ci := []string{"offline", "gtd2", "--data", fx.chain, "--env", "chain", "--target", "uniform", "--features", "tabular",
		"--epsilon", "1", "--delta", "1e-5", "--iters", "100", "--step-size", "4", "--clip", "0.05", "--batch", "10",
		"--interval-splits", "5", "--seed", "4", "--ledger", ledCI}
	code, out, stderr = runCLI(t, append(ci, "--json")...)
	var cr struct {
		Value    float64           `json:"value"`
		Weights  []float64         `json:"weights"`
		N        int               `json:"n_trajectories"`
		Interval evaluate.Interval `json:"interval"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &cr) != nil {
		t.Fatalf("interval run: %d %s %s", code, out, stderr)
	}
	iv := cr.Interval
	var sum float64
	for _, v := range iv.PartValues {
		sum += v
	}
	if iv.Method != "subsample-and-aggregate t" || iv.Level != 0.95 || iv.Splits != 5 || iv.PartN != 60 || cr.N != 300 || len(iv.PartValues) != 5 ||
		math.Abs(sum/5-iv.Mean) > 1e-12 || cr.Value != iv.Mean || !(iv.Low < iv.Mean && iv.Mean < iv.High) || !strings.Contains(iv.Covers, "bias") {
		t.Errorf("interval run: %s", out)
	}
	var shown struct {
		Entries []struct {
			Participants int `json:"participants"`
			Events       []struct {
				Q     float64 `json:"q"`
				Steps int     `json:"steps"`
			} `json:"events"`
		} `json:"entries"`
	}
	code, out, stderr = runCLI(t, "ledger", "show", "--data", ledCI, "--json")
	if code != 0 || json.Unmarshal([]byte(out), &shown) != nil {
		t.Fatalf("ledger show: %d %s %s", code, out, stderr)
	}
	if len(shown.Entries) != 1 || len(shown.Entries[0].Events) != 1 || shown.Entries[0].Events[0].Q != 10.0/60 || shown.Entries[0].Events[0].Steps != 100 ||
		shown.Entries[0].Participants != 300 {
		t.Errorf("ledger of the interval run: %s", out)
	}
	if code, out, stderr := runCLI(t, "ledger", "verify", "--data", ledCI); code != 0 || !strings.Contains(out, "ledger OK: 1 entries") {
		t.Errorf("ledger verify: %d %q %q", code, out, stderr)
	}
	// The text output names the interval's method and what it covers.
	code, out, stderr = runCLI(t, ci...)
	if code != 0 || !strings.Contains(out, "interval:    [") || !strings.Contains(out, "95%, subsample-and-aggregate t over 5 disjoint random parts of n/B = 60 trajectories") ||
		!strings.Contains(out, "parts:       [") || !strings.Contains(out, "in each of 5 parts: z = ") {
		t.Errorf("interval text: %d %s %s", code, out, stderr)
	}
	if code, out, stderr := runCLI(t, "ledger", "verify", "--data", ledCI); code != 0 || !strings.Contains(out, "ledger OK: 2 entries") {
		t.Errorf("ledger verify after two interval runs: %d %q %q", code, out, stderr)
	}
}

func TestOfflineGTD2Refusals(t *testing.T) {
	fx := newGTD2Fixture(t)
	base := func(data string, extra ...string) []string {
		args := append([]string{"offline", "gtd2", "--data", data, "--epsilon", "1", "--delta", "1e-6", "--iters", "10"}, extra...)
		if !slices.Contains(extra, "--env") {
			args = append(args, "--actions", "2") // public: the logs' 2 actions
		}
		return args
	}
	cases := []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"malformed log", base(fx.bad, "--target", "uniform", "--features", "tabular"), 1, "bad.jsonl:3"},
		{"tabular on non-one-hot", base(fx.mc, "--target", "uniform", "--features", "tabular"), 1, "not one-hot"},
		{"snapshot obs dim", base(fx.chain, "--target", "snapshot:"+fx.snap2x2, "--features", "tabular"), 2, "observations of length 2, the data has 20"},
		{"snapshot actions", base(fx.chain, "--target", "greedy:"+fx.snap20x2, "--features", "tabular"), 2, "has 3 actions, the data has 2"},
		{"reference without env", base(fx.chain, "--target", "epsilon-greedy:0.1", "--features", "tabular"), 2, "needs a reference"},
		// Only with --non-private: a private run does not check (the
		// refusal would depend on one record, uncharged).
		{"dp-lsw off-policy", base(fx.chainOff, "--env", "chain", "--target", "uniform", "--features", "tabular", "--method", "dp-lsw", "--non-private"), 1, "on-policy only"},
		{"lstd off-policy", base(fx.chainOff, "--target", "uniform", "--features", "tabular", "--method", "lstd", "--non-private"), 2, "--epsilon/--delta"},
		{"fourier unbounded", base(fx.chain, "--target", "uniform", "--features", "fourier:3"), 2, "--low and --high"},
		{"env mismatch", base(fx.mc, "--env", "chain", "--target", "uniform", "--features", "raw"), 1, "obs"},
		{"budget exceeded", base(fx.chain, "--target", "uniform", "--features", "tabular", "--dataset-epsilon", "0.5"), 1, "budget exceeded"},
		{"dp-lsw epsilon", base(fx.chain, "--env", "chain", "--target", "uniform", "--features", "tabular", "--method", "dp-lsw", "--epsilon", "2"), 2, "epsilon <= 1"},
		// gpope's interval (the chain log has 300 records).
		{"interval one part", base(fx.chain, "--env", "chain", "--target", "uniform", "--features", "tabular", "--interval-splits", "1"), 2, "--interval-splits 1: an interval needs at least 2 parts"},
		{"interval level alone", base(fx.chain, "--env", "chain", "--target", "uniform", "--features", "tabular", "--interval-level", "0.9"), 2, "--interval-level is the level of the --interval-splits interval"},
		{"interval negative", base(fx.chain, "--env", "chain", "--target", "uniform", "--features", "tabular", "--interval-splits", "-3"), 2, "--interval-splits -3: want 0 (no interval) or a number of parts >= 2"},
		{"interval over n/2", base(fx.chain, "--env", "chain", "--target", "uniform", "--features", "tabular", "--interval-splits", "151"), 2, "--interval-splits 151: more than n/2 parts of the n = 300 trajectories"},
		{"interval over public n/2", base(fx.chain, "--env", "chain", "--target", "uniform", "--features", "tabular", "--interval-splits", "6", "--n", "10"), 2, "--interval-splits 6: more than n/2 parts of the n = 10 trajectories"},
		{"interval parts below the batch", base(fx.chain, "--env", "chain", "--target", "uniform", "--features", "tabular", "--interval-splits", "40", "--batch", "10"), 2, "--batch 10 exceeds a part's n/B = 7 trajectories (--interval-splits 40 of n = 300)"},
		{"interval without env", base(fx.chain, "--target", "uniform", "--features", "tabular", "--interval-splits", "5"), 2, "--interval-splits needs --env"},
		{"interval with dp-lsw", base(fx.chain, "--env", "chain", "--target", "uniform", "--features", "tabular", "--method", "dp-lsw", "--interval-splits", "5"), 2, "--interval-splits is gpope's interval; --method dp-lsw has none"},
		{"interval with plot", base(fx.chain, "--env", "chain", "--target", "uniform", "--features", "tabular", "--interval-splits", "5", "--plot", filepath.Join(fx.dir, "x.png")), 2, "--plot draws one run's iterations"},
		{"interval level", base(fx.chain, "--env", "chain", "--target", "uniform", "--features", "tabular", "--interval-splits", "5", "--interval-level", "1"), 2, "--interval-level 1: want 0 < level < 1"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			led := filepath.Join(fx.dir, "ledger", string(rune('a'+i)))
			code, out, stderr := runCLI(t, append(c.args, "--ledger", led)...)
			if code != c.code || !strings.Contains(stderr, c.err) {
				t.Errorf("exit %d, stderr %q; want %d and %q (stdout %q)", code, stderr, c.code, c.err, out)
			}
			if n := ledgerRuns(t, led); n != 0 {
				t.Errorf("refused run charged: %d ledger entries", n)
			}
		})
	}
	// The off-policy lstd refusal proper (without --epsilon).
	code, _, stderr := runCLI(t, "offline", "gtd2", "--data", fx.chainOff, "--target", "uniform", "--features", "tabular", "--method", "lstd", "--non-private")
	if code != 1 || !strings.Contains(stderr, "on-policy only") {
		t.Errorf("lstd off-policy: %d %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "offline", "gtd2", "--data", fx.chain, "--target", "uniform", "--features", "tabular", "--method", "lstd")
	if code != 2 || !strings.Contains(stderr, "--non-private") {
		t.Errorf("lstd without --non-private: %d %q", code, stderr)
	}
	// A second run over the cap is refused and the first stays the only
	// entry.
	led := filepath.Join(fx.dir, "ledger", "cap")
	args := base(fx.chain, "--target", "uniform", "--features", "tabular", "--dataset-epsilon", "1.0001", "--delta", "1e-5", "--ledger", led)
	if code, _, stderr := runCLI(t, args...); code != 0 {
		t.Fatal(stderr)
	}
	if code, _, stderr := runCLI(t, append(args, "--iters", "1000")...); code != 1 || !strings.Contains(stderr, "budget exceeded") {
		t.Errorf("second run: %d %q", code, stderr)
	}
	if n := ledgerRuns(t, led); n != 1 {
		t.Errorf("%d entries, want 1", n)
	}
}

// extremeRecord returns a copy of the session record line with session id
// id and every step's logp and reward replaced (a value is kept when NaN):
// valid for the reader, extreme for the estimators.
func extremeRecord(t *testing.T, line, id string, logp, reward float64) string {
	t.Helper()
	var rec map[string]any
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		t.Fatal(err)
	}
	rec["session"] = id
	for _, st := range rec["steps"].([]any) {
		m := st.(map[string]any)
		if !math.IsNaN(logp) {
			delete(m, "prob")
			m["logp"] = logp
		}
		if !math.IsNaN(reward) {
			m["reward"] = reward
		}
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// neighbourLogs writes a small chain log X, X plus one extreme record
// (add/remove neighbour), and X with its last record replaced by another
// extreme record (same size), and X plus an on-policy record with huge
// rewards (for dp-lsw).
type neighbourLogs struct {
	dir                      string
	x, added, replaced, huge string
	n                        int
}

func newNeighbourLogs(t *testing.T) neighbourLogs {
	t.Helper()
	dir := t.TempDir()
	nl := neighbourLogs{dir: dir, x: filepath.Join(dir, "x.jsonl"), added: filepath.Join(dir, "added.jsonl"),
		replaced: filepath.Join(dir, "replaced.jsonl"), huge: filepath.Join(dir, "huge.jsonl"), n: 40}
	if code, _, stderr := runCLI(t, "sims", "generate", "--env", "chain", "--behavior", "random", "--episodes", strconv.Itoa(nl.n), "--seed", "5", "--out", nl.x); code != 0 {
		t.Fatal(stderr)
	}
	b, err := os.ReadFile(nl.x)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(b)), "\n")
	lines[len(lines)-1] += "\n"
	write := func(path string, ls ...string) {
		if err := os.WriteFile(path, []byte(strings.Join(ls, "")), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// logp = -800: rho = +Inf, and Inf * 0 = NaN in the gradient.
	write(nl.added, append(append([]string(nil), lines...), extremeRecord(t, lines[0], "extreme", -800, 0))...)
	// logp = -700, reward 1e300: finite rho ~ 1e304, the gradient overflows.
	write(nl.replaced, append(append([]string(nil), lines[:len(lines)-1]...), extremeRecord(t, lines[1], "extreme", -700, 1e300))...)
	// On-policy (the random behaviour's logp is kept) with huge rewards.
	write(nl.huge, append(append([]string(nil), lines...), extremeRecord(t, lines[2], "extreme", math.NaN(), 1e300))...)
	return nl
}

// flattenJSON returns every leaf of a JSON document by its path
// ("weights[3]", "non_private.gpope.clipped"), numbers formatted exactly.
func flattenJSON(t *testing.T, doc string) map[string]string {
	t.Helper()
	var v any
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%v: %s", err, doc)
	}
	out := map[string]string{}
	var walk func(string, any)
	walk = func(p string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(strings.TrimPrefix(p+"."+k, "."), e)
			}
		case []any:
			out[p+".len"] = strconv.Itoa(len(x))
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", p, i), e)
			}
		default:
			out[p] = fmt.Sprint(x)
		}
	}
	walk("", v)
	return out
}

// flattenText returns every whitespace-separated token of a text output,
// keyed by its line's number and label and its position.
func flattenText(doc string) map[string]string {
	out := map[string]string{}
	for i, line := range strings.Split(doc, "\n") {
		f := strings.Fields(line)
		for j, tok := range f {
			out[fmt.Sprintf("line %d %q #%d", i, f[0], j)] = tok
		}
	}
	return out
}

// dataLeaks is the distinguisher: a1, a2 are the outputs of log A under two
// seeds, b1, b2 of its neighbour B under the same two seeds. A field whose
// value is equal across the seeds but differs between A and B is a
// deterministic function of the data that tells the neighbours apart; a
// field noised does not accept must not differ between A and B at all. It
// returns one message per leaking field (a missing field counts as a
// value).
func dataLeaks(a1, a2, b1, b2 map[string]string, noised func(key string) bool) []string {
	keys := map[string]bool{}
	for _, m := range []map[string]string{a1, a2, b1, b2} {
		for k := range m {
			keys[k] = true
		}
	}
	get := func(m map[string]string, k string) string {
		if v, ok := m[k]; ok {
			return v
		}
		return "<absent>"
	}
	var leaks []string
	for k := range keys {
		va1, va2, vb1, vb2 := get(a1, k), get(a2, k), get(b1, k), get(b2, k)
		switch {
		case va1 == va2 && vb1 == vb2 && va1 != vb1:
			leaks = append(leaks, fmt.Sprintf("%s: %s on one log, %s on its neighbour, whatever the seed: a deterministic function of the data", k, va1, vb1))
		case !noised(k) && (va1 != vb1 || va2 != vb2):
			leaks = append(leaks, fmt.Sprintf("%s: not a noised output, yet %s/%s on one log and %s/%s on its neighbour", k, va1, va2, vb1, vb2))
		}
	}
	slices.Sort(leaks)
	return leaks
}

// noisedJSON accepts the noised outputs of the JSON result: the weights and
// what is post-processing of them (value, MSPBE).
func noisedJSON(k string) bool {
	switch k {
	case "value", "mspbe", "interval.mean", "interval.low", "interval.high":
		return true
	}
	return strings.HasPrefix(k, "weights[") || strings.HasPrefix(k, "interval.part_values[")
}

// noisedText accepts the tokens of the text lines of the noised outputs.
func noisedText(k string) bool {
	for _, l := range []string{`"value:"`, `"MSPBE:"`, `"weights:"`, `"interval:"`, `"parts:"`} {
		if strings.Contains(k, " "+l+" ") {
			return true
		}
	}
	return false
}

func TestOfflineGTD2NeighboursIndistinguishable(t *testing.T) {
	// The private CLI path, run twice (seeds 1 and 2) on each of two
	// neighbouring logs that differ in one extreme trajectory, prints
	// nothing but noised outputs that differs between them (text and
	// JSON), and the noised outputs differ across seeds.
	nl := newNeighbourLogs(t)
	n := strconv.Itoa(nl.n)
	gp := []string{"--env", "chain", "--target", "uniform", "--features", "tabular", "--epsilon", "1", "--delta", "1e-5",
		"--iters", "50", "--batch", "4", "--clip", "0.05", "--step-size", "0.5"}
	cases := []struct {
		name string
		x, y string
		args []string
	}{
		{"gpope, one trajectory added (logp -800), public --n", nl.x, nl.added, append(append([]string(nil), gp...), "--n", n)},
		{"gpope, one trajectory replaced (logp -700, reward 1e300), n = the log's size", nl.x, nl.replaced, gp},
		{"gpope's interval, one trajectory added (logp -800), public --n", nl.x, nl.added, append(append([]string(nil), gp...), "--n", n, "--interval-splits", "3")},
		{"dp-lsw, one trajectory added (reward 1e300)", nl.x, nl.huge, []string{"--env", "chain", "--target", "uniform", "--features", "tabular", "--method", "dp-lsw", "--epsilon", "1", "--delta", "1e-6"}},
	}
	run := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, asJSON := range []bool{true, false} {
				outs := map[string]map[string]string{}
				for _, data := range []string{c.x, c.y} {
					for _, seed := range []string{"1", "2"} {
						run++
						args := append([]string{"offline", "gtd2", "--data", data, "--seed", seed, "--ledger", filepath.Join(nl.dir, "ledger", strconv.Itoa(run))}, c.args...)
						if asJSON {
							args = append(args, "--json")
						}
						code, out, stderr := runCLI(t, args...)
						if code != 0 || stderr != "" {
							t.Fatalf("%v: exit %d: %s", args, code, stderr)
						}
						if asJSON {
							outs[data+seed] = flattenJSON(t, out)
						} else {
							outs[data+seed] = flattenText(out)
						}
					}
				}
				noised := noisedText
				if asJSON {
					noised = noisedJSON
				}
				a1, a2, b1, b2 := outs[c.x+"1"], outs[c.x+"2"], outs[c.y+"1"], outs[c.y+"2"]
				format := map[bool]string{true: "JSON", false: "text"}[asJSON]
				for _, l := range dataLeaks(a1, a2, b1, b2, noised) {
					t.Errorf("%s output: %s", format, l)
				}
				// The noised outputs are noised: they differ across seeds.
				if asJSON {
					for k := range a1 {
						if noised(k) && (a1[k] == a2[k] || b1[k] == b2[k]) {
							t.Errorf("%s is equal across seeds: %s, %s", k, a1[k], a2[k])
						}
					}
				}
			}
		})
	}
}

func TestDataLeaksFindsLeaks(t *testing.T) {
	// The distinguisher itself: a deterministic field that differs between
	// neighbours is found, a noised one is not, and an un-noised field that
	// varies with the seed is found when it differs between neighbours.
	a1 := map[string]string{"weights[0]": "0.1", "n": "40", "sigma": "434.888", "eps": "1", "seq": "1"}
	a2 := map[string]string{"weights[0]": "0.2", "n": "40", "sigma": "434.888", "eps": "1", "seq": "2"}
	b1 := map[string]string{"weights[0]": "0.3", "n": "41", "sigma": "436.579", "eps": "1", "seq": "1", "extra": "x"}
	b2 := map[string]string{"weights[0]": "0.4", "n": "41", "sigma": "436.579", "eps": "1", "seq": "3", "extra": "x"}
	got := dataLeaks(a1, a2, b1, b2, noisedJSON)
	var keys []string
	for _, l := range got {
		keys = append(keys, strings.SplitN(l, ":", 2)[0])
	}
	if !slices.Equal(keys, []string{"extra", "n", "seq", "sigma"}) {
		t.Errorf("leaks %q", got)
	}
}

func TestOfflineGTD2NonPrivateSection(t *testing.T) {
	// --non-private adds the statistics of the private log in a labelled
	// section and changes nothing in the release; the extreme trajectory's
	// gradients were zeroed; the guarantee printed is the ledger entry's.
	nl := newNeighbourLogs(t)
	led := filepath.Join(nl.dir, "led")
	args := []string{"offline", "gtd2", "--data", nl.added, "--env", "chain", "--target", "uniform", "--features", "tabular", "--epsilon", "1", "--delta", "1e-5",
		"--iters", "50", "--batch", "4", "--clip", "0.05", "--n", strconv.Itoa(nl.n), "--seed", "3", "--ledger", led, "--json"}
	code, priv, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatal(stderr)
	}
	code, full, stderr := runCLI(t, append(args, "--non-private")...)
	if code != 0 {
		t.Fatal(stderr)
	}
	var p, f struct {
		Weights    []float64 `json:"weights"`
		Epsilon    float64   `json:"epsilon"`
		N          int       `json:"n_trajectories"`
		Batch      float64   `json:"batch"`
		Z          float64   `json:"noise_multiplier"`
		NonPrivate *struct {
			Warning      string           `json:"warning"`
			DatasetID    string           `json:"dataset_id"`
			N            int              `json:"n_trajectories"`
			NTransitions int              `json:"n_transitions"`
			GPOPE        gtd2Diagnostics_ `json:"gpope"`
		} `json:"non_private"`
	}
	if err := json.Unmarshal([]byte(priv), &p); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(full), &f); err != nil {
		t.Fatal(err)
	}
	if p.NonPrivate != nil || f.NonPrivate == nil || f.NonPrivate.Warning != notCovered || !strings.HasPrefix(f.NonPrivate.DatasetID, "records-sha256:") ||
		f.NonPrivate.N != nl.n+1 || f.NonPrivate.NTransitions == 0 || f.NonPrivate.GPOPE.Sampled == 0 || f.NonPrivate.GPOPE.Zeroed == 0 {
		t.Errorf("non-private section: %s", full)
	}
	if !slices.Equal(p.Weights, f.Weights) {
		t.Errorf("--non-private changed the release: %v vs %v", p.Weights, f.Weights)
	}
	for _, w := range f.Weights {
		if math.IsNaN(w) || math.IsInf(w, 0) {
			t.Errorf("weights %v", f.Weights)
		}
	}
	// The ledger entries carry what was printed.
	code, out, stderr := runCLI(t, "ledger", "show", "--data", led, "--json")
	if code != 0 {
		t.Fatal(stderr)
	}
	var show struct {
		Entries []struct {
			Epsilon      float64 `json:"epsilon"`
			Participants int     `json:"participants"`
			Events       []struct {
				Q, Z  float64
				Steps int
			} `json:"events"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(out), &show); err != nil || len(show.Entries) != 2 {
		t.Fatalf("%v: %s", err, out)
	}
	for _, e := range show.Entries {
		if e.Epsilon != p.Epsilon || e.Participants != p.N || p.N != nl.n || len(e.Events) != 1 || e.Events[0].Q != p.Batch/float64(p.N) || e.Events[0].Z != p.Z || e.Events[0].Steps != 50 {
			t.Errorf("ledger entry %+v, printed %+v", e, p)
		}
	}
	// Text: the section is labelled; dp-lsw's noise scale is only in it.
	code, text, stderr := runCLI(t, "offline", "gtd2", "--data", nl.x, "--env", "chain", "--target", "uniform", "--features", "tabular",
		"--method", "dp-lsw", "--epsilon", "1", "--delta", "1e-6", "--ledger", led, "--non-private")
	head, section, ok := strings.Cut(text, notCovered)
	if code != 0 || !ok || strings.Contains(head, "sigma") || !strings.Contains(section, "sigma = ") || !strings.Contains(section, "transitions") {
		t.Errorf("dp-lsw --non-private: %d %s %s", code, text, stderr)
	}
}

// gtd2Diagnostics_ mirrors gtd2.Diagnostics' JSON.
type gtd2Diagnostics_ struct {
	Sampled int `json:"sampled"`
	Clipped int `json:"clipped"`
	Zeroed  int `json:"zeroed"`
}

func TestOfflineGTD2PrivateRefusals(t *testing.T) {
	// Refused before the charge: a plot that would need the private log's
	// MSPBE, --n outside gpope or below 1, a batch above the public n.
	fx := newGTD2Fixture(t)
	base := []string{"offline", "gtd2", "--epsilon", "1", "--delta", "1e-6", "--iters", "10", "--target", "uniform"}
	cases := []struct {
		name string
		args []string
		err  string
	}{
		{"plot of the private MSPBE", []string{"--data", fx.mc, "--env", "mountaincar", "--features", "fourier:1", "--plot", filepath.Join(fx.dir, "p.png")}, "--plot needs public moments"},
		{"--n with dp-lsw", []string{"--data", fx.chain, "--env", "chain", "--features", "tabular", "--method", "dp-lsw", "--n", "300"}, "--n is gpope's"},
		{"--n zero", []string{"--data", fx.chain, "--features", "tabular", "--actions", "2", "--n", "0"}, "--n 0"},
		{"batch above n", []string{"--data", fx.chain, "--features", "tabular", "--actions", "2", "--n", "5", "--batch", "6"}, "exceeds the n = 5"},
		{"no public number of actions", []string{"--data", fx.chain, "--features", "tabular"}, "needs --actions"},
		{"--actions against --env", []string{"--data", fx.mc, "--env", "mountaincar", "--features", "fourier:1", "--actions", "2"}, "has 3 actions"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			led := filepath.Join(fx.dir, "ledger-refusal", strconv.Itoa(i))
			code, _, stderr := runCLI(t, append(append(append([]string(nil), base...), c.args...), "--ledger", led)...)
			if code != exitUsage || !strings.Contains(stderr, c.err) {
				t.Errorf("exit %d %q, want %d and %q", code, stderr, exitUsage, c.err)
			}
			if n := ledgerRuns(t, led); n != 0 {
				t.Errorf("refused run charged: %d entries", n)
			}
		})
	}
	// With --non-private the private log's MSPBE may be plotted, labelled.
	png := filepath.Join(fx.dir, "np.png")
	code, out, stderr := runCLI(t, append(base, "--data", fx.mc, "--env", "mountaincar", "--features", "fourier:1", "--plot", png, "--non-private",
		"--ledger", filepath.Join(fx.dir, "ledger-np"))...)
	if st, err := os.Stat(png); code != 0 || err != nil || st.Size() == 0 || !strings.Contains(out, notCovered) {
		t.Errorf("non-private plot: %d %v %s %s", code, err, out, stderr)
	}
}
