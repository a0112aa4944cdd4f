package main

import (
	"encoding/json"
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
	for _, args := range [][]string{
		{"agent", "--env-spec", "cartpole", "--check-config"},
		{"agent", "--data", dir, "--check-config"},
		{"agent", "--data", dir, "--env-spec", "nope", "--check-config"},
		{"agent", "--data", dir, "--env-spec", "cartpole", "--z", "-1", "--check-config"},
		{"agent", "--data", dir, "--env-spec", "cartpole", "--act-workers", "-1", "--check-config"},
		{"demo", "--pace", "sometimes"},
	} {
		if code, _, stderr := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, stderr)
		}
	}
}
