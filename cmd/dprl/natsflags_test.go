package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/agent"
	"dprl/agent/service"
	"dprl/internal/testutil"
	"dprl/profile"
	"dprl/stream"

	"github.com/nats-io/nkeys"
)

// writeClient creates a client nkey, writes its seed file and returns the
// seed file and the public key.
func writeClient(t *testing.T, dir, name string) (string, string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	f := filepath.Join(dir, name+".nk")
	if err := os.WriteFile(f, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	return f, pub
}

func TestAgentNATSSecurityFlags(t *testing.T) {
	dir := t.TempDir()
	cert, key := testutil.WriteSelfSigned(t, dir)
	_, pub := writeClient(t, dir, "web")
	clients := filepath.Join(dir, "clients.json")
	os.WriteFile(clients, []byte(`{"clients":[{"name":"web","nkey":"`+pub+`"}]}`), 0o600)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"clients":[{"name":"web","nkey":"`+pub+`","subscribe":">"}]}`), 0o600)
	base := []string{"agent", "--data", dir, "--env", "cartpole", "--check-config"}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"loopback open (default)", nil, 0, "configuration OK"},
		{"all interfaces, open", []string{"--nats-listen", "0.0.0.0:4222"}, 2, "--insecure-nats"},
		{"all interfaces, open, insecure", []string{"--nats-listen", "0.0.0.0:4222", "--insecure-nats"}, 0, "configuration OK"},
		{"all interfaces, clients, no TLS", []string{"--nats-listen", "0.0.0.0:4222", "--nats-clients", clients}, 2, "without TLS"},
		{"all interfaces, TLS, no clients", []string{"--nats-listen", "0.0.0.0:4222", "--nats-tls-cert", cert, "--nats-tls-key", key}, 2, "without client identities"},
		{"all interfaces, secured", []string{"--nats-listen", "0.0.0.0:4222", "--nats-clients", clients, "--nats-tls-cert", cert, "--nats-tls-key", key}, 0, "configuration OK"},
		{"mutual TLS", []string{"--nats-listen", "0.0.0.0:4222", "--nats-clients", clients, "--nats-tls-cert", cert, "--nats-tls-key", key, "--nats-tls-client-ca", cert}, 0, "configuration OK"},
		{"client CA alone", []string{"--nats-tls-client-ca", cert}, 2, "needs --nats-tls-cert"},
		{"cert without key", []string{"--nats-tls-cert", cert}, 2, "certificate and its key"},
		{"unknown field in clients", []string{"--nats-clients", bad}, 2, "unknown field"},
		{"missing clients file", []string{"--nats-clients", filepath.Join(dir, "nope.json")}, 2, "no such file"},
		{"external server", []string{"--nats", "nats://127.0.0.1:4222", "--nats-clients", clients}, 2, "embedded server"},
		{"negative cap", []string{"--nats-max-conn", "-1"}, 2, ">= 0"},
		{"agent nkey with the embedded server", []string{"--nkey", clients}, 2, "external --nats server"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, stderr := runCLI(t, append(base, c.args...)...)
			if code != c.code || !strings.Contains(out+stderr, c.want) {
				t.Errorf("exit %d (want %d): %q %q, want %q", code, c.code, out, stderr, c.want)
			}
		})
	}
	// The environment sets them too, like every agent flag.
	t.Setenv("DPRL_NATS_LISTEN", "0.0.0.0:4222")
	if code, _, stderr := runCLI(t, base...); code != 2 || !strings.Contains(stderr, "not loopback") {
		t.Errorf("DPRL_NATS_LISTEN: %d %q", code, stderr)
	}
	t.Setenv("DPRL_INSECURE_NATS", "true")
	if code, _, stderr := runCLI(t, base...); code != 0 {
		t.Errorf("DPRL_INSECURE_NATS: %d %q", code, stderr)
	}
}

// TestReplaySecuredAgent drives a secured agent with dprl replay under a
// client identity; without credentials replay is refused.
func TestReplaySecuredAgent(t *testing.T) {
	dir := t.TempDir()
	// The client's key from dprl agent nkey.
	seed := filepath.Join(dir, "replay.nk")
	code, out, stderr := runCLI(t, "agent", "nkey", "--seed-file", seed, "--name", "replay")
	var id stream.ClientIdentity
	if code != 0 || json.Unmarshal([]byte(out), &id) != nil || id.Name != "replay" {
		t.Fatalf("agent nkey: %d %q %q", code, out, stderr)
	}
	if st, err := os.Stat(seed); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("seed file: %v", err)
	}
	if code, _, _ := runCLI(t, "agent", "nkey", "--seed-file", seed); code == 0 {
		t.Fatal("seed file overwritten")
	}
	spec, pc, err := profile.AgentDefaults("cartpole")
	if err != nil {
		t.Fatal(err)
	}
	pc.DP.UsersPerUpdate = 4
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc, err := service.StartService(ctx, service.ServiceConfig{Agent: agent.DefaultConfig(spec, pc), DataDir: t.TempDir(), NATSListen: "127.0.0.1:0",
		NATSSecurity: service.NATSSecurity{Clients: []stream.ClientIdentity{id}}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	code, out, stderr = runCLI(t, "replay", "--nats", svc.NATSURL(), "--users", "8", "--concurrency", "2", "--json",
		"--nkey", seed, "--nats-identity", "replay")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil || r["errors"].(float64) != 0 || r["users"].(float64) != 8 {
		t.Fatalf("%v %s", err, out)
	}
	if code, _, stderr := runCLI(t, "replay", "--nats", svc.NATSURL(), "--users", "1"); code == 0 || !strings.Contains(stderr, "Authorization") {
		t.Errorf("replay without credentials: exit %d %q", code, stderr)
	}
	if code, _, _ := runCLI(t, "replay", "--nats", svc.NATSURL(), "--nats-user", "u"); code != 2 {
		t.Errorf("--nats-user without password file: exit %d", code)
	}
}

// TestExampleAgentConfigs checks the example configurations with
// --check-config (the secured one with real certificate files).
func TestExampleAgentConfigs(t *testing.T) {
	dir := t.TempDir()
	cert, key := testutil.WriteSelfSigned(t, dir)
	b, err := os.ReadFile("../../examples/agent-secure.json")
	if err != nil {
		t.Fatal(err)
	}
	conf := strings.NewReplacer("/etc/dprl/nats/server-cert.pem", cert, "/etc/dprl/nats/server-key.pem", key,
		"examples/nats-clients.json", "../../examples/nats-clients.json", "./dprl-data", dir).Replace(string(b))
	f := filepath.Join(dir, "agent-secure.json")
	os.WriteFile(f, []byte(conf), 0o600)
	if code, out, stderr := runCLI(t, "agent", "--config", f, "--check-config"); code != 0 || !strings.Contains(out, "configuration OK") {
		t.Errorf("agent-secure.json: %d %q %q", code, out, stderr)
	}
	// Without its security it is refused: it listens on all interfaces.
	var m map[string]any
	if err := json.Unmarshal([]byte(conf), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "nats-clients")
	delete(m, "nats-tls-cert")
	delete(m, "nats-tls-key")
	open, _ := json.Marshal(m)
	os.WriteFile(f, open, 0o600)
	if code, _, stderr := runCLI(t, "agent", "--config", f, "--check-config"); code != 2 || !strings.Contains(stderr, "not loopback") {
		t.Errorf("agent-secure.json without its security: %d %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "agent", "--config", "../../examples/agent.json", "--data", dir, "--check-config"); code != 0 {
		t.Errorf("agent.json: %d %q", code, stderr)
	}
}
