package main

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/policy"
)

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
	for _, k := range []string{"value", "mspbe", "mspbe_kind", "epsilon", "delta", "method", "n_trajectories", "dataset_id", "weights", "noise_multiplier", "true_value"} {
		if _, ok := o[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if o["mspbe_kind"] != "exact (chain model)" || o["n_trajectories"].(float64) != 300 || o["epsilon"].(float64) > 1 || o["seeded"] != true {
		t.Errorf("output %s", out)
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
	if code != 0 || !strings.Contains(out, `"sigma"`) || !strings.Contains(out, "smooth sensitivity") {
		t.Fatalf("dp-lsw: %d %s %s", code, out, stderr)
	}
	if n := ledgerRuns(t, led); n != 3 {
		t.Errorf("%d ledger entries after dp-lsw, want 3", n)
	}
	for _, m := range []string{"lstd", "wis-lstd"} {
		code, out, stderr = runCLI(t, "offline", "gtd2", "--data", fx.chain, "--env", "chain", "--target", "uniform", "--features", "tabular",
			"--method", m, "--non-private", "--ledger", led, "--json")
		var r struct {
			MSPBE     float64 `json:"mspbe"`
			Value     float64 `json:"value"`
			TrueValue float64 `json:"true_value"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.MSPBE > 1e-3 || math.Abs(r.Value-r.TrueValue) > 0.05 {
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
	if code != 0 || !strings.Contains(out, "exact (chain model)") || !strings.Contains(out, "-DP per trajectory") {
		t.Errorf("off-policy gpope: %d %s %s", code, out, stderr)
	}
	// Mountain car: Fourier features, empirical MSPBE on the private data,
	// flagged as such; and on a public eval log.
	code, out, stderr = runCLI(t, "offline", "gtd2", "--data", fx.mc, "--env", "mountaincar", "--target", "uniform", "--features", "fourier:2",
		"--method", "wis-lstd", "--non-private", "--json")
	if code != 0 || !strings.Contains(out, "not covered by the DP guarantee") {
		t.Errorf("mountaincar wis-lstd: %d %s %s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "offline", "gtd2", "--data", fx.mc, "--env", "mountaincar", "--target", "epsilon-greedy:0.3", "--features", "fourier:2",
		"--method", "dp-lsw", "--epsilon", "1", "--delta", "1e-6", "--eval-data", fx.mc, "--ledger", led, "--json")
	if code != 0 || !strings.Contains(out, "empirical (eval data)") {
		t.Errorf("mountaincar dp-lsw: %d %s %s", code, out, stderr)
	}
}

func TestOfflineGTD2Refusals(t *testing.T) {
	fx := newGTD2Fixture(t)
	base := func(data string, extra ...string) []string {
		return append([]string{"offline", "gtd2", "--data", data, "--epsilon", "1", "--delta", "1e-6", "--iters", "10"}, extra...)
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
		{"dp-lsw off-policy", base(fx.chainOff, "--env", "chain", "--target", "uniform", "--features", "tabular", "--method", "dp-lsw"), 1, "on-policy only"},
		{"lstd off-policy", base(fx.chainOff, "--target", "uniform", "--features", "tabular", "--method", "lstd", "--non-private"), 2, "--epsilon/--delta"},
		{"fourier unbounded", base(fx.chain, "--target", "uniform", "--features", "fourier:3"), 2, "--low and --high"},
		{"env mismatch", base(fx.mc, "--env", "chain", "--target", "uniform", "--features", "raw"), 1, "obs"},
		{"budget exceeded", base(fx.chain, "--target", "uniform", "--features", "tabular", "--dataset-epsilon", "0.5"), 1, "budget exceeded"},
		{"dp-lsw epsilon", base(fx.chain, "--env", "chain", "--target", "uniform", "--features", "tabular", "--method", "dp-lsw", "--epsilon", "2"), 2, "epsilon <= 1"},
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
