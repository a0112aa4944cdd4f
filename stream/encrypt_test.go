package stream_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dprl/stream"
)

// TestEncryptionAtRest: with an encryption key (either cipher) no file of
// the store holds a message's plaintext, and a restart with the same key
// reads the message back; without a key the same check finds the
// plaintext on disk (so the check can fail).
func TestEncryptionAtRest(t *testing.T) {
	secret := []byte("clipped-update-plaintext-0123456789")
	for _, tc := range []struct{ key, cipher string }{{"", "none"}, {"0123456789abcdef0123456789abcdef", "chacha"}, {"fedcba9876543210fedcba9876543210", "aes"}} {
		t.Run(tc.cipher, func(t *testing.T) {
			if tc.key == "" {
				tc.cipher = ""
			}
			dir := t.TempDir()
			opts := stream.EmbeddedOptions{Port: -1, JetStream: &stream.JetStreamOptions{StoreDir: dir, SyncAlways: true, EncryptionKey: tc.key, Cipher: tc.cipher}}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			js, stop := startJS(t, opts)
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}, Storage: jetstream.FileStorage}); err != nil {
				t.Fatal(err)
			}
			if _, err := js.Publish(ctx, "s", secret); err != nil {
				t.Fatal(err)
			}
			stop()
			found := false
			err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, err := os.ReadFile(p)
				found = found || bytes.Contains(b, secret)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if found != (tc.key == "") {
				t.Fatalf("key %q: plaintext on disk: %v", tc.key, found)
			}
			js, stop = startJS(t, opts)
			defer stop()
			s, err := js.Stream(ctx, "S")
			if err != nil {
				t.Fatal(err)
			}
			if m, err := s.GetMsg(ctx, 1); err != nil || !bytes.Equal(m.Data, secret) {
				t.Fatalf("after a restart: %v", err)
			}
		})
	}
	if _, err := stream.StartEmbedded(stream.EmbeddedOptions{Port: -1, JetStream: &stream.JetStreamOptions{StoreDir: t.TempDir(), EncryptionKey: "k", Cipher: "rot13"}}); err == nil {
		t.Error("cipher rot13 accepted")
	}
}

// startJS starts an embedded server and connects to it; stop closes the
// connection and shuts the server down.
func startJS(t *testing.T, o stream.EmbeddedOptions) (jetstream.JetStream, func()) {
	t.Helper()
	s, err := stream.StartEmbedded(o)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		s.Shutdown()
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js, func() { nc.Close(); s.Shutdown(); s.WaitForShutdown() }
}

// TestRouteCredentials: members with the route credentials form a
// cluster; a server without them cannot join it.
func TestRouteCredentials(t *testing.T) {
	start := func(name, user, password string, port int, routes ...string) *server.Server {
		t.Helper()
		s, err := stream.StartEmbedded(stream.EmbeddedOptions{Port: -1, ServerName: name,
			Cluster: &stream.ClusterOptions{Name: "c", Port: port, Routes: routes, User: user, Password: password}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Shutdown)
		return s
	}
	a := start("a", "dprl-route", "route-secret-0123", -1)
	route := "nats-route://" + a.ClusterAddr().String()
	start("b", "dprl-route", "route-secret-0123", -1, route)
	for deadline := time.Now().Add(5 * time.Second); a.NumRoutes() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("b with the credentials did not join")
		}
	}
	joined := a.NumRoutes()
	start("stranger", "", "", -1, route)
	start("guesser", "dprl-route", "guess-guess-guess", -1, route)
	time.Sleep(time.Second)
	if n := a.NumRoutes(); n != joined {
		t.Fatalf("%d routes after the strangers tried, want %d", n, joined)
	}
	if _, err := stream.StartEmbedded(stream.EmbeddedOptions{Port: -1, Cluster: &stream.ClusterOptions{Name: "c", Port: -1, User: "u"}}); err == nil {
		t.Error("a route user without a password accepted")
	}
}
