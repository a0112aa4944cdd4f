package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"dprl/agent"
	"dprl/experiment/demo"
	"dprl/ledger"
	"dprl/profile"
)

func TestDemoEndToEnd(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runCLI(t, "demo", "--users", "48", "--K", "8", "--seed", "1", "--data", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	for _, k := range []string{"users", "updates", "sim_eval", "sim_users_mean_return", "epsilon", "delta", "data_dir"} {
		if _, ok := r[k]; !ok {
			t.Errorf("missing %q", k)
		}
	}
	// No unlabelled statistic of sessions: the mean return is reported only
	// as the simulated users' own (sim_users_mean_return) or as evaluations
	// of released policies (sim_eval).
	if _, ok := r["mean_return"]; ok {
		t.Errorf("unlabelled mean_return in %v", r)
	}
	if r["updates"].(float64) != 6 || r["ledger_ok"] != true || r["data_dir"] != dir {
		t.Errorf("result %v", r)
	}
	// The per-user guarantee beside the per-session one: the most-used
	// user's composition, never below one release's epsilon.
	if n, _ := r["user_max_updates"].(float64); n < 1 || r["user_epsilon"].(float64) < r["epsilon"].(float64) {
		t.Errorf("per-user epsilon %v after %v updates, per session %v", r["user_epsilon"], r["user_max_updates"], r["epsilon"])
	}
	// The data directory is a valid ledger afterwards.
	if code, out, _ := runCLI(t, "ledger", "verify", "--data", dir); code != 0 || !strings.Contains(out, "ledger OK: 6 entries") {
		t.Errorf("verify: %d %s", code, out)
	}
}

func TestAgentCheckConfig(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runCLI(t, "agent", "--data", dir, "--env", "cartpole", "--check-config")
	if code != 0 || !strings.Contains(out, "configuration OK") || !strings.Contains(out, "per-user epsilon at most 4.378 at delta 1e-05 (at most 1 update per user)") || !strings.Contains(out, "per-session epsilon 4.378") {
		t.Errorf("check-config: %d %q %q", code, out, stderr)
	}
	// --user-epsilon alone derives z from the update cap: a user in all 10
	// updates reaches 5 (z = sqrt(10) x the one-release multiplier).
	code, out, stderr = runCLI(t, "agent", "--data", dir, "--env", "cartpole", "--user-epsilon", "5", "--max-updates-per-user", "10", "--check-config")
	if code != 0 || !strings.Contains(out, "z = 2.82034") || !strings.Contains(out, "per-user epsilon at most 5 at delta 1e-05 (at most 10 updates per user, user epsilon 5)") {
		t.Errorf("check-config --user-epsilon: %d %q %q", code, out, stderr)
	}
	// A target epsilon sets z (dprl accountant noise --epsilon 5 --delta
	// 1e-5: z = 0.891869), from a flag or from the environment.
	code, out, stderr = runCLI(t, "agent", "--data", dir, "--env", "cartpole", "--session-epsilon", "5", "--check-config")
	if code != 0 || !strings.Contains(out, "z = 0.89186") || !strings.Contains(out, "epsilon 5 at") {
		t.Errorf("--session-epsilon 5: %d %q %q", code, out, stderr)
	}
	for _, args := range [][]string{
		{"agent", "--env", "cartpole", "--check-config"},
		{"agent", "--data", dir, "--check-config"},
		{"agent", "--data", dir, "--env", "nope", "--check-config"},
		{"agent", "--data", dir, "--env", "cartpole", "--z", "-1", "--check-config"},
		{"agent", "--data", dir, "--env", "cartpole", "--z", "0", "--check-config"},
		{"agent", "--data", dir, "--env", "cartpole", "--K", "0", "--check-config"},
		{"agent", "--data", dir, "--env", "cartpole", "--clip", "0", "--check-config"},
		{"agent", "--data", dir, "--env", "cartpole", "--session-epsilon", "0", "--check-config"},
		{"agent", "--data", dir, "--env", "cartpole", "--act-workers", "-1", "--check-config"},
		{"agent", "--data", dir, "--env", "cartpole", "--session-epsilon", "5", "--z", "1", "--check-config"},
		{"agent", "--data", dir, "--env", "cartpole", "--session-epsilon", "-1", "--check-config"},
		{"agent", "--data", dir, "--env", "cartpole", "--session-epsilon", "5", "--delta", "2", "--check-config"},
		{"demo", "--pace", "sometimes"},
	} {
		if code, _, stderr := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, stderr)
		}
	}

	t.Setenv("DPRL_SESSION_EPSILON", "1")
	code, out, stderr = runCLI(t, "agent", "--data", dir, "--env", "cartpole", "--check-config")
	if code != 0 || !strings.Contains(out, "epsilon 1 at") {
		t.Errorf("DPRL_SESSION_EPSILON=1: %d %q %q", code, out, stderr)
	}
}

// TestAgentLogsOffline runs the whole audit path: a demo agent logs its
// sessions, its serving policy is exported, and GPOPE evaluates that policy
// on the agent's own logs, charged to the log in a ledger.
func TestAgentLogsOffline(t *testing.T) {
	dir, logs := t.TempDir(), t.TempDir()
	if code, _, stderr := runCLI(t, "demo", "--users", "48", "--K", "8", "--seed", "1", "--data", dir, "--log-sessions", logs); code != 0 {
		t.Fatalf("demo: exit %d: %s", code, stderr)
	}
	files, err := filepath.Glob(filepath.Join(logs, "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no session logs in %s (%v)", logs, err)
	}
	// The rotated files concatenate into one dataset.
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	data := filepath.Join(t.TempDir(), "sessions.jsonl")
	if err := os.WriteFile(data, all, 0o600); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(t.TempDir(), "policy.snap")
	code, out, stderr := runCLI(t, "ledger", "snapshot", "--data", dir, "--out", snap, "--json")
	if code != 0 || !strings.Contains(out, `"version": 6`) {
		t.Fatalf("ledger snapshot: exit %d: %s %s", code, out, stderr)
	}
	if code, _, _ := runCLI(t, "ledger", "snapshot", "--data", dir, "--out", snap); code != exitUsage {
		t.Errorf("snapshot over an existing file: exit %d, want %d", code, exitUsage)
	}
	if code, _, _ := runCLI(t, "ledger", "snapshot", "--data", dir, "--version", "99", "--out", snap+"2"); code != exitFailure {
		t.Errorf("unknown version: exit %d, want %d", code, exitFailure)
	}
	led := filepath.Join(t.TempDir(), "ledger")
	code, out, stderr = runCLI(t, "offline", "gtd2", "--data", data, "--target", "snapshot:"+snap, "--features", "raw", "--actions", "2",
		"--epsilon", "1", "--delta", "1e-5", "--iters", "200", "--seed", "1", "--ledger", led, "--json")
	if code != 0 {
		t.Fatalf("gtd2 on agent logs: exit %d: %s", code, stderr)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r["method"] != "gpope" || r["epsilon"].(float64) > 1 || r["n_trajectories"].(float64) < 48 {
		t.Errorf("gtd2 result %v", r)
	}
	if code, out, _ := runCLI(t, "ledger", "show", "--data", led, "--json"); code != 0 || !strings.Contains(out, `"runs": 1`) {
		t.Errorf("offline charge missing: %d %s", code, out)
	}
}

// TestDemoStopsOnReleasedPolicies checks the demo's stopping rule: it
// stops admitting users at the first evaluated release whose simulator
// return reaches the target, and every evaluation it reports is recomputed
// here from the released snapshot in the ledger and the seed alone. The
// rule is thus a function of DP releases and public settings; the agent
// serves no statistic of sessions it could read instead (agent.Stats holds
// only public fields).
func TestDemoStopsOnReleasedPolicies(t *testing.T) {
	var fields []string
	for f := range reflect.TypeFor[agent.Stats]().Fields() {
		fields = append(fields, f.Name)
	}
	// FixedPolicy and FixedProvenance are configuration: the identity of
	// the snapshot served and the guarantee it records. NextEpsilon is of
	// the settings; Epsilon and Delta of the ledger's releases.
	if !slices.Equal(fields, []string{"Version", "Updates", "Epsilon", "Delta", "NextEpsilon", "FixedPolicy", "FixedProvenance"}) {
		t.Fatalf("agent.Stats fields %v: the agent must serve no statistic of sessions", fields)
	}

	const K, target, episodes, seed = 8, 40.0, 3, 3
	dir := t.TempDir()
	code, out, stderr := runCLI(t, "demo", "--users", "400", "--K", "8", "--seed", "3", "--target-return", "40",
		"--eval-every", "1", "--eval-episodes", "3", "--data", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r struct {
		Users   int64       `json:"users"`
		Updates int64       `json:"updates"`
		Version uint64      `json:"version"`
		SimEval []demo.Eval `json:"sim_eval"`
		Final   demo.Eval   `json:"sim_final_eval"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(r.SimEval) == 0 {
		t.Fatalf("no evaluation: %s", out)
	}
	last := r.SimEval[len(r.SimEval)-1]
	reached := last.MeanReturn >= target
	if !reached && r.Users != 400 {
		t.Fatalf("stopped at %d users without reaching the target: %+v", r.Users, r)
	}
	for i, e := range r.SimEval[:len(r.SimEval)-1] {
		if e.MeanReturn >= target {
			t.Fatalf("evaluation %d (version %d) reached %v >= %v but the demo went on", i, e.Version, e.MeanReturn, target)
		}
		if e.Version != uint64(i+1) {
			t.Fatalf("evaluation %d of version %d, want every release evaluated", i, e.Version)
		}
	}
	if reached {
		// Lockstep: the sessions of batch b start on version b and are
		// admitted after its evaluation, so no session was admitted beyond
		// the batches before the version that reached the target.
		if r.Users > int64(K)*int64(last.Version) || last.Version > r.Version || r.Updates != int64(r.Version) {
			t.Fatalf("stopped inconsistently: %+v", r)
		}
	}
	if r.Final.Version != r.Version {
		t.Fatalf("final evaluation of version %d, want %d", r.Final.Version, r.Version)
	}
	spec, pc, err := profile.AgentDefaults("cartpole")
	if err != nil {
		t.Fatal(err)
	}
	store, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, e := range append(r.SimEval, r.Final) {
		got, err := demo.EvaluateRelease(store, spec, pc, "cartpole", e.Version, episodes, seed)
		if err != nil {
			t.Fatal(err)
		}
		if got != e.MeanReturn {
			t.Fatalf("version %d: the demo reported %v, the released snapshot evaluates to %v", e.Version, e.MeanReturn, got)
		}
	}
}

// TestDemoRefusesNonEmptyDirectory: a --data directory that holds files
// but no ledger is a usage error that says what to give instead (it named
// an "initialise it explicitly" the demo has no flag for).
func TestDemoRefusesNonEmptyDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "demo", "--data", dir, "--users", "4")
	if code != exitUsage || !strings.Contains(stderr, "holds files but no ledger") || strings.Contains(stderr, "initialise it explicitly") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// TestDemoLinCBLedger: dprl demo --learner lincb on the bandit (blocks of
// 500, 650 and 845 sessions: 1,995 users), then the
// ledger's commands on what it wrote: verify, show and snapshot read the
// linear contextual bandit's releases.
func TestDemoLinCBLedger(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runCLI(t, "demo", "--env", "bandit", "--learner", "lincb", "--users", "1995", "--K", "500", "--user-epsilon", "1", "--returning", "0", "--seed", "4", "--data", dir)
	if code != 0 || !strings.Contains(out, "3 updates") || !strings.Contains(out, "expected click per session") {
		t.Fatalf("demo: exit %d: %s %s", code, out, stderr)
	}
	if code, out, stderr := runCLI(t, "ledger", "verify", "--data", dir); code != 0 {
		t.Fatalf("verify: exit %d: %s %s", code, out, stderr)
	}
	if code, out, stderr := runCLI(t, "ledger", "show", "--data", dir, "--json"); code != 0 || !strings.Contains(out, "lincb: sum of a block of K sessions") {
		t.Errorf("show: exit %d: %s %s", code, out, stderr)
	}
	snap := filepath.Join(t.TempDir(), "lincb.json")
	code, out, stderr = runCLI(t, "ledger", "snapshot", "--data", dir, "--out", snap, "--json")
	if code != 0 || !strings.Contains(out, `"version": 3`) || !strings.Contains(out, `"params": 440`) {
		t.Fatalf("ledger snapshot: exit %d: %s %s", code, out, stderr)
	}
}
