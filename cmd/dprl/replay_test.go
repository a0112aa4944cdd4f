package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"dprl/agent"
	"dprl/agent/service"
	"dprl/profile"
	"dprl/stream"
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
	svc, err := service.StartService(ctx, service.ServiceConfig{Agent: ac, DataDir: t.TempDir(), NATS: "embedded", NATSListen: "127.0.0.1:0"})
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

// TestReplayGivesUp runs dprl replay against a NATS server with no agent
// behind it: it stops after --give-up without a reply, prints the partial
// summary (the tenths never played as "-", or null in JSON) and exits 1
// with one line saying why. (Before, it played every session into "no
// responders", printed 0.0 for them and exited 0.)
func TestReplayGivesUp(t *testing.T) {
	ns, err := stream.StartEmbedded(stream.EmbeddedOptions{Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown()
	args := []string{"replay", "--nats", ns.ClientURL(), "--users", "5000", "--concurrency", "4", "--give-up", "300ms"}
	code, out, stderr := runCLI(t, args...)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	if code != 1 || !strings.HasPrefix(last, "dprl: agent unreachable: no reply for 300ms; ") || !strings.HasSuffix(last, " of 5000 sessions played") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if !strings.HasPrefix(out, "agent unreachable: no reply for 300ms: ") || !strings.HasSuffix(out, " - - - - - - - - - -\n") {
		t.Errorf("summary %q", out)
	}
	code, out, _ = runCLI(t, append(args, "--json")...)
	var r struct {
		Stopped string     `json:"stopped"`
		Planned int        `json:"users_planned"`
		Curve   []*float64 `json:"sim_users_curve"`
	}
	if err := json.Unmarshal([]byte(out), &r); code != 1 || err != nil || r.Stopped != "agent unreachable: no reply for 300ms" || r.Planned != 5000 || len(r.Curve) != 10 || r.Curve[9] != nil {
		t.Errorf("exit %d, JSON %q (%v)", code, out, err)
	}
}

// TestReplayExitsOneWhenSessionsFail: a replay that plays every session but
// some fail (here all: no agent on the subjects, and --give-up longer than
// the run) prints its summary, latencies as "-" when no act was answered,
// and exits 1 naming the failures. (Before, "0 acts ... 4 errors" exited 0.)
func TestReplayExitsOneWhenSessionsFail(t *testing.T) {
	ns, err := stream.StartEmbedded(stream.EmbeddedOptions{Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown()
	code, out, stderr := runCLI(t, "replay", "--nats", ns.ClientURL(), "--users", "4", "--concurrency", "4", "--give-up", "1m")
	if code != 1 || !strings.Contains(stderr, "4 of 4 sessions failed") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(out, "0 acts in") || !strings.Contains(out, "act p50 -, p99 -, 4 errors") {
		t.Errorf("summary %q", out)
	}
}
