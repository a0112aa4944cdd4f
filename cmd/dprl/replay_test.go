package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"dprl/agent"
	"dprl/profile"
)

// TestReplay drives simulated users against a real agent (embedded NATS on
// loopback, Pebble in a temp dir) over its URL, and checks that the users'
// own returns are reported only as simulation-only.
func TestReplay(t *testing.T) {
	spec, pc, err := profile.AgentDefaults("cartpole")
	if err != nil {
		t.Fatal(err)
	}
	pc.DP.UsersPerUpdate = 8
	ac := agent.DefaultConfig(spec, pc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc, err := agent.StartService(ctx, agent.ServiceConfig{Agent: ac, DataDir: t.TempDir(), NATS: "embedded", NATSListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()

	code, out, stderr := runCLI(t, "replay", "--nats", svc.NATSURL(), "--env", "cartpole", "--users", "20", "--concurrency", "4", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if _, ok := r["curve"]; ok {
		t.Errorf("unlabelled curve of returns: %v", r)
	}
	if c, ok := r["sim_users_curve"].([]any); !ok || len(c) != 10 || r["users"].(float64) != 20 || r["errors"].(float64) != 0 {
		t.Errorf("result %v", r)
	}
	code, out, stderr = runCLI(t, "replay", "--nats", svc.NATSURL(), "--env", "cartpole", "--users", "8")
	if code != 0 || !strings.Contains(out, "simulation only: the simulated users' own mean return") {
		t.Errorf("text: %d %q %q", code, out, stderr)
	}
}
