package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	for _, k := range []string{"users", "updates", "mean_return", "epsilon", "delta", "data_dir"} {
		if _, ok := r[k]; !ok {
			t.Errorf("missing %q", k)
		}
	}
	if r["updates"].(float64) != 6 || r["ledger_ok"] != true || r["data_dir"] != dir {
		t.Errorf("result %v", r)
	}
	// The data directory is a valid ledger afterwards.
	if code, out, _ := runCLI(t, "ledger", "verify", "--data", dir); code != 0 || !strings.Contains(out, "ledger OK: 6 entries") {
		t.Errorf("verify: %d %s", code, out)
	}
}

func TestAgentCheckConfig(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runCLI(t, "agent", "--data", dir, "--env-spec", "cartpole", "--check-config")
	if code != 0 || !strings.Contains(out, "configuration OK") || !strings.Contains(out, "epsilon 4.377") {
		t.Errorf("check-config: %d %q %q", code, out, stderr)
	}
	// A target epsilon sets z (dprl accountant noise --epsilon 5 --delta
	// 1e-5: z = 0.891869), from a flag or from the environment.
	code, out, stderr = runCLI(t, "agent", "--data", dir, "--env-spec", "cartpole", "--session-epsilon", "5", "--check-config")
	if code != 0 || !strings.Contains(out, "z = 0.89186") || !strings.Contains(out, "epsilon 5 at") {
		t.Errorf("--session-epsilon 5: %d %q %q", code, out, stderr)
	}
	for _, args := range [][]string{
		{"agent", "--env-spec", "cartpole", "--check-config"},
		{"agent", "--data", dir, "--check-config"},
		{"agent", "--data", dir, "--env-spec", "nope", "--check-config"},
		{"agent", "--data", dir, "--env-spec", "cartpole", "--z", "-1", "--check-config"},
		{"agent", "--data", dir, "--env-spec", "cartpole", "--act-workers", "-1", "--check-config"},
		{"agent", "--data", dir, "--env-spec", "cartpole", "--session-epsilon", "5", "--z", "1", "--check-config"},
		{"agent", "--data", dir, "--env-spec", "cartpole", "--session-epsilon", "-1", "--check-config"},
		{"agent", "--data", dir, "--env-spec", "cartpole", "--session-epsilon", "5", "--delta", "2", "--check-config"},
		{"demo", "--pace", "sometimes"},
	} {
		if code, _, stderr := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, stderr)
		}
	}

	t.Setenv("DPRL_SESSION_EPSILON", "1")
	code, out, stderr = runCLI(t, "agent", "--data", dir, "--env-spec", "cartpole", "--check-config")
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
	code, out, stderr = runCLI(t, "offline", "gtd2", "--data", data, "--target", "snapshot:"+snap, "--features", "raw",
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
