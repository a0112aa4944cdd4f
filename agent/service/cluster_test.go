package service

import (
	"context"
	"dprl/stream"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClusterSettings: a role needs an external NATS server, no models or
// fixed policy, replicas 1 to 5, a whole-second lease TTL and a user key
// file of 64 hex digits; "all" (or nothing) is no cluster.
func TestClusterSettings(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "k"), filepath.Join(dir, "bad")
	if err := os.WriteFile(good, []byte(strings.Repeat("0f", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("not hex"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := ClusterSettings{Role: RoleLearn, Name: "c", Replicas: 3, LeaseTTL: 3 * time.Second, UserKeyFile: good, Partitions: 16}
	for _, tc := range []struct {
		edit   func(*ClusterSettings)
		nats   string
		models int
		want   string // "" for valid
	}{
		{func(c *ClusterSettings) {}, "nats://h:4222", 0, ""},
		{func(c *ClusterSettings) { c.Role = "" }, "", 0, ""},
		{func(c *ClusterSettings) { c.Role = "boss" }, "nats://h", 0, `Role "boss"`},
		{func(c *ClusterSettings) {}, "embedded", 0, "needs NATS URL"},
		{func(c *ClusterSettings) {}, "nats://h", 2, "not with models"},
		{func(c *ClusterSettings) { c.Replicas = 7 }, "nats://h", 0, "ClusterReplicas 7"},
		{func(c *ClusterSettings) { c.LeaseTTL = 1500 * time.Millisecond }, "nats://h", 0, "LeaseTTL"},
		{func(c *ClusterSettings) { c.UserKeyFile = "" }, "nats://h", 0, "needs UserKeyFile"},
		{func(c *ClusterSettings) { c.UserKeyFile = bad }, "nats://h", 0, "64 hex digits"},
		{func(c *ClusterSettings) { c.UserKeyFile = filepath.Join(dir, "missing") }, "nats://h", 0, "UserKeyFile"},
	} {
		c := base
		tc.edit(&c)
		got, err := c.resolve(tc.nats, tc.models, false)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", c, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want %q", c, err, tc.want)
		case tc.want == "" && c.Role == RoleLearn && (got == nil || len(got.UserKey) != 32 || got.UserKey[0] != 0x0f || got.Holder == ""):
			t.Errorf("%+v: cluster %+v", c, got)
		case tc.want == "" && c.Role == "" && got != nil:
			t.Errorf("no role gave a cluster %+v", got)
		}
	}
}

// TestClusterPayloadTooSmall: a cluster role whose servers accept messages
// smaller than a session's update of its policy refuses to start, naming
// the sizes and the remedy, rather than failing on every session.
func TestClusterPayloadTooSmall(t *testing.T) {
	ns, err := stream.StartEmbedded(stream.EmbeddedOptions{Port: -1, MaxPayload: 16 << 10, Partitions: 4, JetStream: &stream.JetStreamOptions{StoreDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	for _, role := range []string{RoleLearn, RoleServe} {
		svc, err := StartService(context.Background(), ServiceConfig{Agent: cartpoleConfig(2), DataDir: t.TempDir(), NATS: ns.ClientURL(),
			Cluster: &Cluster{Role: role, Name: "t", Replicas: 1, Holder: "h", LeaseTTL: time.Second, UserKey: []byte(strings.Repeat("ab", 16)), Partitions: 4}})
		if err == nil {
			svc.Close()
			t.Fatalf("%s started on servers accepting 16 KiB", role)
		}
		if !strings.Contains(err.Error(), "above the 16384 bytes the NATS servers accept") || !strings.Contains(err.Error(), "--max-payload") {
			t.Errorf("%s: %v", role, err)
		}
	}
}
