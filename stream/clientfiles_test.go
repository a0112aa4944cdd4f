package stream

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/internal/fielderr"

	"github.com/nats-io/nkeys"
)

// TestClientFilesOptions: the settings' errors, and a client of a secured
// server authenticating from files alone (a password file with a trailing
// line break, an nkey seed file from NewIdentityKey) is served on its own
// inbox.
func TestClientFilesOptions(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "bob.pw")
	if err := os.WriteFile(pw, []byte("bob-secret\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := map[string]string{"User": "--nats-user", "PasswordFile": "--nats-password-file", "Creds": "--creds", "TLSCA": "--tls-ca"}
	for _, c := range []struct {
		name        string
		f           ClientFiles
		plain, flag string
	}{
		{"user without password file", ClientFiles{User: "bob"}, "User and PasswordFile go together", "--nats-user and --nats-password-file go together"},
		{"password file without user", ClientFiles{PasswordFile: pw}, "User and PasswordFile go together", "--nats-user and --nats-password-file go together"},
		{"missing password file", ClientFiles{User: "bob", PasswordFile: filepath.Join(dir, "nope")}, "PasswordFile: open ", "--nats-password-file: open "},
		{"missing credentials file", ClientFiles{Creds: filepath.Join(dir, "nope")}, "Creds: stat ", "--creds: stat "},
		{"missing CA file", ClientFiles{TLSCA: filepath.Join(dir, "nope")}, "TLSCA: stat ", "--tls-ca: stat "},
	} {
		_, err := c.f.Options()
		if err == nil || !strings.HasPrefix(err.Error(), c.plain) {
			t.Errorf("%s: %v, want %q", c.name, err, c.plain)
			continue
		}
		if got := fielderr.Rename(err, func(f string) string { return flags[f] }).Error(); !strings.HasPrefix(got, c.flag) {
			t.Errorf("%s: rendered %q, want %q", c.name, got, c.flag)
		}
	}
	if _, err := (ClientFiles{User: "bob", PasswordFile: filepath.Join(dir, "nope")}).Options(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing password file: %v, want os.ErrNotExist", err)
	}
	if opts, err := (ClientFiles{}).Options(); err != nil || len(opts) != 0 {
		t.Errorf("no settings: %d options, %v", len(opts), err)
	}

	x := startSecured(t, securedOpts{})
	seed := filepath.Join(dir, "carol.nk")
	pub, err := NewIdentityKey(seed)
	if err != nil {
		t.Fatal(err)
	}
	// A second server knows carol's key: the first one's accounts are fixed.
	agentKP, agentPub := newUserKey(t)
	eo := EmbeddedOptions{Port: -1}
	if eo.Nkeys, eo.Users, err = Accounts("", agentPub, []ClientIdentity{{Name: "carol", NKey: pub}}); err != nil {
		t.Fatal(err)
	}
	s2, err := StartEmbedded(eo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s2.Shutdown)
	anc, err := Connect("", WithInProcess(s2), WithNKeyPair(agentKP))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(anc.Close)
	srv, err := Serve(context.Background(), anc, &testHandler{}, ServerConfig{ObsDim: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })

	for _, c := range []struct {
		name, url string
		f         ClientFiles
	}{
		{"user and password file", x.url, ClientFiles{Identity: "bob", User: "bob", PasswordFile: pw}},
		{"nkey seed file", s2.ClientURL(), ClientFiles{Identity: "carol", NKey: seed}},
	} {
		opts, err := c.f.Options()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		nc, err := Connect(c.url, append(opts, quick())...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		cl, _ := NewClient(nc)
		if a, err := cl.Act(context.Background(), "abc", "u", []float64{1}, 0, true); err != nil || a.Index != 3 {
			t.Errorf("%s: act %+v %v", c.name, a, err)
		}
		nc.Close()
	}
}

// TestNewIdentityKey: the seed file is private, holds the key pair of the
// returned public key, and is never overwritten.
func TestNewIdentityKey(t *testing.T) {
	seed := filepath.Join(t.TempDir(), "web.nk")
	pub, err := NewIdentityKey(seed)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(seed)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("seed file %v %v, want mode 0600", st, err)
	}
	b, _ := os.ReadFile(seed)
	if !strings.HasSuffix(string(b), "\n") {
		t.Errorf("seed file %q: want a final line break", b)
	}
	kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(b))))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := kp.PublicKey(); got != pub || !nkeys.IsValidPublicUserKey(pub) {
		t.Errorf("public key %q, seed's %q", pub, got)
	}
	if _, err := NewIdentityKey(seed); !errors.Is(err, os.ErrExist) || !strings.HasPrefix(err.Error(), "seed file: ") {
		t.Errorf("over an existing file: %v, want a seed file error wrapping os.ErrExist", err)
	}
	if again, _ := os.ReadFile(seed); string(again) != string(b) {
		t.Error("seed file overwritten")
	}
}
