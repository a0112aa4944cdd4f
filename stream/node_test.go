package stream

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/internal/fielderr"
)

// TestNodeConfigOptions: NodeConfig.Options builds the server's options
// and refuses every inconsistent or unprotected setting with an error
// naming its fields (rendered here as dprl nats's flags would be).
func TestNodeConfigOptions(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	short, pw, key := write("short", "x\n"), write("pw", "0123456789abcdef\n"), write("key", strings.Repeat("k", 32)+"\r\n")
	base := NodeConfig{Listen: "127.0.0.1:4222", Store: dir, ClusterListen: "127.0.0.1:6222", Cipher: "chacha"}
	with := func(f func(*NodeConfig)) NodeConfig { c := base; f(&c); return c }
	cases := []struct {
		name string
		cfg  NodeConfig
		want string // error text with fields as {Field}; "" for none
	}{
		{"plain", base, ""},
		{"no store", with(func(c *NodeConfig) { c.Store = "" }), "{Store}: give JetStream's storage directory"},
		{"partitions", with(func(c *NodeConfig) { c.Partitions = MaxPartitions + 1 }), "{Partitions} 1025: want 0 to 1024"},
		{"bad listen", with(func(c *NodeConfig) { c.Listen = "bad" }), `{Listen} "bad": want HOST:PORT`},
		{"routes alone", with(func(c *NodeConfig) { c.Routes = []string{"nats-route://h:1"} }), "{Routes} needs {Cluster}"},
		{"half tls", with(func(c *NodeConfig) { c.TLSCert = "x" }), "{TLSCert} and {TLSKey} go together"},
		{"route password alone", with(func(c *NodeConfig) { c.RoutePasswordFile = pw }), "{RoutePasswordFile} and --route-tls-* need {Cluster}"},
		{"half route tls", with(func(c *NodeConfig) { c.Cluster, c.RouteTLSCA = "c", "x" }), "{RouteTLSCert}, {RouteTLSKey} and {RouteTLSCA} go together"},
		{"short password", with(func(c *NodeConfig) { c.Cluster, c.RoutePasswordFile = "c", short }), "{RoutePasswordFile} " + short + ": 1 characters, want at least 16"},
		{"short key", with(func(c *NodeConfig) { c.EncryptionKey = short }), "{EncryptionKey} " + short + ": 1 characters, want at least 32"},
		{"bad cipher", with(func(c *NodeConfig) { c.EncryptionKey, c.Cipher = key, "des" }), `{Cipher} "des": want chacha or aes`},
		{"open listener", with(func(c *NodeConfig) { c.Listen = "0.0.0.0:4222" }), "{Listen} off loopback needs {Auth} and {TLSCert}/{TLSKey} (or {Insecure})"},
		{"open listener allowed", with(func(c *NodeConfig) { c.Listen, c.Insecure = "0.0.0.0:4222", true }), ""},
		{"open routes", with(func(c *NodeConfig) { c.Cluster, c.ClusterListen, c.RoutePasswordFile = "c", "0.0.0.0:6222", pw }), "{ClusterListen} off loopback needs"},
		{"missing auth", with(func(c *NodeConfig) { c.Auth = filepath.Join(dir, "none.json") }), "{Auth}: stream: auth file"},
	}
	braces := func(f string) string { return "{" + f + "}" }
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.cfg.Options()
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *fielderr.Error
			if !errors.As(err, &fe) || !strings.HasPrefix(fielderr.Rename(err, braces).Error(), c.want) {
				t.Errorf("error %v, want a field error starting %q", err, c.want)
			}
		})
	}
	o, err := with(func(c *NodeConfig) {
		c.Name, c.Cluster, c.Routes, c.RoutePasswordFile, c.EncryptionKey, c.Cipher, c.Partitions = "n1", "c", []string{"nats-route://h:1"}, pw, key, "aes", 8
	}).Options()
	if err != nil {
		t.Fatal(err)
	}
	if o.ServerName != "n1" || o.Host != "127.0.0.1" || o.Port != 4222 || o.Partitions != 8 || o.JetStream.StoreDir != dir ||
		o.Cluster.Port != 6222 || o.Cluster.Password != "0123456789abcdef" || o.JetStream.EncryptionKey != strings.Repeat("k", 32) || o.JetStream.Cipher != "aes" {
		t.Errorf("options %+v, cluster %+v, jetstream %+v", o, o.Cluster, o.JetStream)
	}
}
