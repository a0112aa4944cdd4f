package main

import (
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
