package main

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"dprl/offline/evaluate"
	"dprl/offline/gtd2"
	"dprl/offline/lsw"
	"dprl/offline/policies"
	"dprl/sessionlog"
)

// TestOfflineRefusedAtLine2 checks that a log bad at line 2 is refused by
// gtd2 and svt naming line 2 and the field (or key), whatever follows it,
// and costs nothing. The logs go on with a line 3 that is not JSON: a reader that
// went past line 2 (the scan for the dataset's id used to accept a step
// without a behaviour probability, and a repeated key) reports line 3.
func TestOfflineRefusedAtLine2(t *testing.T) {
	dir := t.TempDir()
	good := `{"session":"a","steps":[{"obs":[0,1,0],"action":0,"reward":0,"prob":0.5},{"obs":[0,0,1],"action":1,"reward":1,"prob":0.5}],"terminal":true}` + "\n"
	tail := "{\"session\":\n" + strings.Repeat(good, 1000)
	cases := []struct {
		name, line2 string
		extra       []string
		want        string
	}{
		{"no behaviour probability", `{"session":"b","steps":[{"obs":[0,1,0],"action":0,"reward":0}],"terminal":true}`, nil,
			"log.jsonl:2: sessionlog: bad session record: steps[0].prob: missing"},
		{"repeated key", `{"session":"b","session":"c","steps":[{"obs":[0,1,0],"action":0,"reward":0,"prob":0.5}],"terminal":true}`, nil,
			`log.jsonl:2: sessionlog: bad session record: duplicate key "session"`},
		{"repeated step key", `{"session":"b","steps":[{"obs":[0,1,0],"action":0,"action":1,"reward":0,"prob":0.5}],"terminal":true}`, nil,
			`log.jsonl:2: sessionlog: bad session record: steps[0]: duplicate key "action"`},
		// With --env the target and features are checked as the log is
		// read too.
		{"not one-hot (--env)", `{"session":"b","steps":[{"obs":[0,0.5,0],"action":0,"reward":0,"prob":0.5}],"terminal":true}`,
			[]string{"--env", "chain"}, `log.jsonl:2: session "b" step 0: gtd2: tabular features: observation is not one-hot`},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log := filepath.Join(dir, strconv.Itoa(i), "log.jsonl")
			if err := os.MkdirAll(filepath.Dir(log), 0o700); err != nil {
				t.Fatal(err)
			}
			content := good + c.line2 + "\n" + tail
			if c.extra != nil { // the chain's 20 states
				content = strings.ReplaceAll(content, `"obs":[0,1,0]`, `"obs":[0,1`+strings.Repeat(",0", 18)+`]`)
				content = strings.ReplaceAll(content, `"obs":[0,0,1]`, `"obs":[0,0,1`+strings.Repeat(",0", 17)+`]`)
				content = strings.ReplaceAll(content, `"obs":[0,0.5,0]`, `"obs":[0,0.5`+strings.Repeat(",0", 18)+`]`)
			}
			if err := os.WriteFile(log, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			led := filepath.Join(dir, strconv.Itoa(i), "ledger")
			args := append([]string{"offline", "gtd2", "--data", log, "--target", "uniform", "--features", "tabular", "--actions", "2",
				"--epsilon", "1", "--delta", "1e-5", "--iters", "5", "--ledger", led}, c.extra...)
			code, _, stderr := runCLI(t, args...)
			if code != 1 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "log.jsonl:3") {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr, c.want)
			}
			if n := ledgerRuns(t, led); n != 0 {
				t.Errorf("refused run charged: %d entries", n)
			}
		})
	}
	// svt checks its own requirements as the log is read: an expert id on
	// every record.
	log := filepath.Join(dir, "svt.jsonl")
	withExpert := strings.Replace(good, `"session":"a",`, `"session":"a","expert":"e0",`, 1)
	if err := os.WriteFile(log, []byte(withExpert+good+tail), 0o600); err != nil {
		t.Fatal(err)
	}
	led := filepath.Join(dir, "svt-ledger")
	code, _, stderr := runCLI(t, "offline", "svt", "--data", log, "--experts", dir, "--epsilon", "5", "--delta", "1e-3",
		"--dataset-delta", "1e-2", "--queries", "1", "--out-stable", filepath.Join(dir, "s.jsonl"), "--ledger", led)
	if want := `svt.jsonl:2: session "a" names no expert`; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("svt: exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
	if n := ledgerRuns(t, led); n != 0 {
		t.Errorf("refused svt run charged: %d entries", n)
	}
}

// gtd2JSON is the part of gtd2's JSON output the equivalence test reads.
type gtd2JSON struct {
	Weights         []float64 `json:"weights"`
	NoiseMultiplier float64   `json:"noise_multiplier"`
	Iters           int       `json:"iters"`
	Clip            float64   `json:"clip"`
	Batch           float64   `json:"batch"`
	NTrajectories   int       `json:"n_trajectories"`
	NonPrivate      *struct {
		NTrajectories int               `json:"n_trajectories"`
		NTransitions  int               `json:"n_transitions"`
		MSPBE         *float64          `json:"mspbe_private_data"`
		GPOPE         *gtd2.Diagnostics `json:"gpope"`
		LSW           *lsw.Diagnostics  `json:"dp_lsw"`
	} `json:"non_private"`
}

// readAllSessions reads a whole log into memory, as gtd2 did before it
// streamed.
func readAllSessions(t *testing.T, path string, spec sessionlog.Spec) []sessionlog.Session {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := sessionlog.NewReader(f, sessionlog.ReaderOptions{Name: path, Spec: spec})
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

// TestOfflineGTD2SameAsInMemory checks that the streaming command releases
// bit for bit what the in-memory path releases on the same log with the
// same seed: gtd2.Prepare on every session, then gtd2.GPOPE, lsw.Estimate
// or gtd2.LSTD, as the command ran them before it streamed. It also checks
// the --non-private statistics against the in-memory ones.
func TestOfflineGTD2SameAsInMemory(t *testing.T) {
	fx := newGTD2Fixture(t)
	const seed = 7
	chainSpec := sessionlog.Spec{ObsDim: 20, Discrete: 2}
	uniform, err := policies.Parse("uniform", policies.Options{NumActions: 2, ObsDim: 20})
	if err != nil {
		t.Fatal(err)
	}
	tp := evaluate.NewTargetProb(uniform)
	feats := gtd2.Tabular{N: 20}
	cases := []struct {
		name string
		log  string
		args []string
	}{
		{"gpope", fx.chain, []string{"--env", "chain", "--epsilon", "1", "--delta", "1e-5", "--iters", "200", "--batch", "5", "--clip", "0.5"}},
		{"gpope without --env, non-private section", fx.chain, []string{"--actions", "2", "--epsilon", "1", "--delta", "1e-5", "--iters", "100", "--batch", "30", "--non-private"}},
		{"gpope off-policy, diminishing", fx.chainOff, []string{"--env", "chain", "--epsilon", "2", "--delta", "1e-5", "--iters", "150", "--batch", "2", "--diminishing", "--n", "120", "--non-private"}},
		{"dp-lsw", fx.chain, []string{"--env", "chain", "--method", "dp-lsw", "--epsilon", "1", "--delta", "1e-6", "--non-private"}},
		{"lstd", fx.chain, []string{"--method", "lstd", "--non-private"}},
		{"wis-lstd", fx.chainOff, []string{"--method", "wis-lstd", "--non-private"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"offline", "gtd2", "--data", c.log, "--target", "uniform", "--features", "tabular", "--json",
				"--seed", strconv.Itoa(seed), "--ledger", filepath.Join(fx.dir, "eq-ledger", strconv.Itoa(i))}, c.args...)
			code, out, stderr := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var o gtd2JSON
			if err := json.Unmarshal([]byte(out), &o); err != nil {
				t.Fatal(err)
			}
			sessions := readAllSessions(t, c.log, chainSpec)
			ds, err := gtd2.Prepare(sessions, feats, tp, 0.9)
			if err != nil {
				t.Fatal(err)
			}
			rng, err := evaluate.NewNoiseRand(true, seed)
			if err != nil {
				t.Fatal(err)
			}
			var want []float64
			switch {
			case strings.HasPrefix(c.name, "gpope"):
				n := len(sessions)
				if slices.Contains(c.args, "--n") {
					n = 120
				}
				cfg := gtd2.Config{Iters: o.Iters, StepSize: 0.5, Diminishing: slices.Contains(c.args, "--diminishing"), Clip: o.Clip,
					Z: o.NoiseMultiplier, Q: o.Batch / float64(n), Batch: o.Batch}
				res, diag, err := gtd2.GPOPEWithDiagnostics(ds, cfg, rng)
				if err != nil {
					t.Fatal(err)
				}
				want = res.Theta
				if o.NonPrivate != nil && *o.NonPrivate.GPOPE != diag {
					t.Errorf("diagnostics %+v, in memory %+v", *o.NonPrivate.GPOPE, diag)
				}
			case c.name == "dp-lsw":
				phi := make([][]float64, 20)
				w := make([]float64, 20)
				for s := range phi {
					phi[s] = make([]float64, 20)
					phi[s][s] = 1
					w[s] = 1
				}
				w[19] = 0
				trajs := make([]lsw.Trajectory, len(sessions))
				for i, s := range sessions {
					for _, st := range s.Steps {
						trajs[i].States = append(trajs[i].States, slices.Index(st.Obs, 1))
						trajs[i].Rewards = append(trajs[i].Rewards, st.Reward)
					}
				}
				res, diag, err := lsw.EstimateWithDiagnostics(phi, trajs, lsw.Config{Epsilon: 1, Delta: 1e-6, Gamma: 0.9, RewardLow: 0, RewardHigh: 1, Weights: w}, rng)
				if err != nil {
					t.Fatal(err)
				}
				want = res.Theta
				if got := *o.NonPrivate.LSW; got.Sigma != diag.Sigma || got.Psi != diag.Psi || got.Visited != diag.Visited || !slices.Equal(got.NonPrivate, diag.NonPrivate) {
					t.Errorf("diagnostics %+v, in memory %+v", got, diag)
				}
			default:
				if want, err = gtd2.LSTD(ds, c.name == "wis-lstd", 1e-6); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(o.Weights, want) {
				t.Errorf("weights %v, in memory %v", o.Weights, want)
			}
			if np := o.NonPrivate; np != nil {
				steps := 0
				for _, s := range sessions {
					steps += len(s.Steps)
				}
				m := gtd2.EmpiricalMoments(ds, true)
				m.FillUnvisited()
				mspbe, err := gtd2.MSPBE(m, want)
				if np.NTrajectories != len(sessions) || np.NTransitions != steps || err != nil || np.MSPBE == nil || *np.MSPBE != mspbe {
					t.Errorf("non-private section %d trajectories, %d transitions, MSPBE %v; in memory %d, %d, %v (%v)",
						np.NTrajectories, np.NTransitions, np.MSPBE, len(sessions), steps, mspbe, err)
				}
			}
		})
	}
}

// memChildEnv makes the test binary run one dprl command and exit (the
// memory test measures it as a process of its own).
const memChildEnv = "DPRL_TEST_RUN_CLI"

// TestOfflineGTD2MemoryLong runs GPOPE over 10^6 chain sessions (a 2 GB
// log) in a process of its own and requires its peak resident set below
// 350 MB (opt-in: DPRL_LONG=1; a few minutes: generating the log takes
// about a minute, the run half of one). Before the command streamed, it
// held every session and its features: 1.6 GB for 10^5 sessions.
func TestOfflineGTD2MemoryLong(t *testing.T) {
	if args := os.Getenv(memChildEnv); args != "" {
		var a []string
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			t.Fatal(err)
		}
		os.Exit(run(t.Context(), a, strings.NewReader(""), os.Stdout, os.Stderr))
	}
	if os.Getenv("DPRL_LONG") == "" {
		t.Skip("set DPRL_LONG=1 for the 10^6-session memory test")
	}
	if raceEnabled {
		t.Skip("the race detector multiplies memory use")
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "chain.jsonl")
	if code, _, stderr := runCLI(t, "sims", "generate", "--env", "chain", "--behavior", "random", "--episodes", "1000000", "--seed", "7", "--out", log); code != 0 {
		t.Fatal(stderr)
	}
	args, _ := json.Marshal([]string{"--log-level", "disabled", "offline", "gtd2", "--data", log, "--env", "chain", "--target", "uniform",
		"--features", "tabular", "--epsilon", "1", "--delta", "1e-5", "--iters", "100", "--batch", "100", "--seed", "1",
		"--ledger", filepath.Join(dir, "ledger"), "--json"})
	cmd := exec.Command(os.Args[0], "-test.run=^TestOfflineGTD2MemoryLong$")
	cmd.Env = append(os.Environ(), memChildEnv+"="+string(args))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var o gtd2JSON
	if err := json.Unmarshal(out, &o); err != nil || o.NTrajectories != 1000000 || len(o.Weights) != 20 {
		t.Fatalf("output %s (%v)", out, err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	rss := float64(ru.Maxrss) * 1024 // kilobytes on Linux
	t.Logf("10^6 sessions: peak RSS %.0f MB, %v user, %v system", rss/1e6, cmd.ProcessState.UserTime(), cmd.ProcessState.SystemTime())
	if rss >= 350e6 || math.IsNaN(rss) {
		t.Errorf("peak RSS %.0f MB, want under 350 MB", rss/1e6)
	}
}
