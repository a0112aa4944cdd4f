package stream_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io/fs"
	"math/big"
	"net"
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

// routeCerts writes a CA and a member certificate it signed (server and
// client authentication, 127.0.0.1) to dir, returning the member's cert,
// key and the CA file.
func routeCerts(t *testing.T, dir string) (cert, key, ca string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "route CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key1, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "member"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key1.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key1)
	cert, key, ca = filepath.Join(dir, "member.pem"), filepath.Join(dir, "member-key.pem"), filepath.Join(dir, "ca.pem")
	for f, b := range map[string]*pem.Block{cert: {Type: "CERTIFICATE", Bytes: der}, key: {Type: "EC PRIVATE KEY", Bytes: kder}, ca: {Type: "CERTIFICATE", Bytes: caDER}} {
		if err := os.WriteFile(f, pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return cert, key, ca
}

// TestRouteSecurity: members with the route credentials and certificates
// of the cluster's CA form a cluster; a server without the credentials,
// without TLS, or with a certificate of another CA cannot join it.
func TestRouteSecurity(t *testing.T) {
	tlsOf := func(dir string) *tls.Config {
		cert, key, ca := routeCerts(t, dir)
		cfg, err := stream.RouteTLS(cert, key, ca)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	ours, theirs := tlsOf(t.TempDir()), tlsOf(t.TempDir())
	start := func(name, user, password string, cfg *tls.Config, routes ...string) *server.Server {
		t.Helper()
		s, err := stream.StartEmbedded(stream.EmbeddedOptions{Port: -1, ServerName: name,
			Cluster: &stream.ClusterOptions{Name: "c", Port: -1, Routes: routes, User: user, Password: password, TLSConfig: cfg}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Shutdown)
		return s
	}
	const user, pw = "dprl-route", "route-secret-0123"
	a := start("a", user, pw, ours)
	route := "nats-route://" + a.ClusterAddr().String()
	start("b", user, pw, ours, route)
	for deadline := time.Now().Add(5 * time.Second); a.NumRoutes() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("b with the credentials and a certificate of the CA did not join")
		}
	}
	start("stranger", "", "", ours, route)
	start("guesser", user, "guess-guess-guess", ours, route)
	start("plain", user, pw, nil, route)
	start("other-ca", user, pw, theirs, route)
	time.Sleep(time.Second)
	// a's routes (a pool of connections per member, which grows for a
	// while after the first) all lead to b.
	rz, err := a.Routez(&server.RoutezOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rz.Routes {
		if r.RemoteName != "b" {
			t.Fatalf("a route to %q after the strangers tried: only b may join", r.RemoteName)
		}
	}
	if _, err := stream.StartEmbedded(stream.EmbeddedOptions{Port: -1, Cluster: &stream.ClusterOptions{Name: "c", Port: -1, User: "u"}}); err == nil {
		t.Error("a route user without a password accepted")
	}
	if _, err := stream.RouteTLS("c", "k", ""); err == nil {
		t.Error("route TLS without a CA accepted")
	}
}
