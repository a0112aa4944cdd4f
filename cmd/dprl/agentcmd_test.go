package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgentLimitFlags: the admission limits and the reward bound reach the
// agent's configuration, and bad values are refused.
func TestAgentLimitFlags(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runCLI(t, "agent", "--data", dir, "--env-spec", "pendulum", "--check-config")
	if code != 0 || !strings.Contains(out, "rewards clipped to [-16.27") {
		t.Errorf("pendulum's reward bound: %d %q %q", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "agent", "--data", dir, "--obs-dim", "3", "--actions", "2", "--reward-high", "5", "--check-config")
	if code != 0 || !strings.Contains(out, "rewards clipped to [-1e+06, 5]") {
		t.Errorf("--reward-high: %d %q %q", code, out, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--reward-low", "2", "--reward-high", "1"}, "reward bound"},
		{[]string{"--max-sessions-per-user", "0"}, "per user"},
		{[]string{"--max-sessions-per-connection", "0"}, "per connection"},
		{[]string{"--session-memory-mib", "0"}, "--session-memory-mib"},
		{[]string{"--max-queued-per-user", "0"}, "queued"},
		{[]string{"--max-session-lifetime", "0s"}, "lifetime"},
	} {
		args := append([]string{"agent", "--data", dir, "--env-spec", "cartpole", "--check-config"}, c.args...)
		if code, _, stderr := runCLI(t, args...); code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d %q, want a usage error naming %q", c.args, code, stderr, c.want)
		}
	}
}

// TestAgentRefusesNonEmptyDataWithoutInit: a --data directory that holds
// files but no ledger (a mistyped path) is refused, naming --init, before
// anything is written there; the same directory with --check-config is
// still only checked.
func TestAgentRefusesNonEmptyDataWithoutInit(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a ledger"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "agent", "--data", dir, "--env-spec", "cartpole", "--nats-listen", "127.0.0.1:0")
	if code != exitUsage || !strings.Contains(stderr, "--init") || !strings.Contains(stderr, "holds files but no ledger") {
		t.Fatalf("agent on a non-empty directory: exit %d, %q; want %d naming --init", code, stderr, exitUsage)
	}
	names, err := os.ReadDir(dir)
	if err != nil || len(names) != 1 {
		t.Fatalf("the refused directory now holds %v (%v), want only notes.txt", names, err)
	}
}

// TestVersion: dprl version and --version name the build.
func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "version", "--json")
	var b struct{ Version, Go string }
	if code != 0 || json.Unmarshal([]byte(out), &b) != nil || b.Version == "" || !strings.HasPrefix(b.Go, "go") {
		t.Fatalf("version --json: %d %q", code, out)
	}
	if code, out, _ := runCLI(t, "--version"); code != 0 || !strings.HasPrefix(out, "dprl version "+b.Version) {
		t.Fatalf("--version: %d %q", code, out)
	}
}
