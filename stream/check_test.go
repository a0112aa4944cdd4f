package stream

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/internal/testutil"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

func TestCheckServerURL(t *testing.T) {
	for _, c := range []struct {
		url, want string // want "": accepted
	}{
		{"nats://127.0.0.1:4222", ""},
		{"tls://nats.example.com", ""},
		{"wss://nats.example.com:443/ws", ""},
		{"nats://user:pw@[::1]:4222", ""},
		{"nats://a:4222, nats://b:4222", ""},
		{"NATS://HOST:4222", ""},
		{"bogus://x", "want a nats://, tls://, ws:// or wss:// URL"},
		{"127.0.0.1:4222", "want a nats://"},
		{"http://x:4222", "want a nats://"},
		{"nats://", "want a host"},
		{"nats://bad host:4222", "invalid character"},
		{"nats://h:0", `port "0"`},
		{"nats://h:65536", `port "65536"`},
		{"nats://h:4222,", "want a nats://"},
		{"", "empty"},
	} {
		err := CheckServerURL(c.url)
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckServerURL(%q) = %v, want %q", c.url, err, c.want)
		}
	}
}

func TestCheckListenAddr(t *testing.T) {
	for _, c := range []struct {
		addr, want string
	}{
		{"127.0.0.1:9090", ""},
		{"127.0.0.1:0", ""},
		{":9090", ""},
		{"[::1]:4222", ""},
		{"localhost:4222", ""},
		{"agent_1.internal:4222", ""},
		{"not-an-addr", "want HOST:PORT"},
		{"127.0.0.1", "want HOST:PORT"},
		{"127.0.0.1:http", `port "http"`},
		{"127.0.0.1:65536", `port "65536"`},
		{"127.0.0.1:-1", `port "-1"`},
		{"bad host:80", "want an IP address or a host name"},
		{"-x:80", "want an IP address or a host name"},
		{"a..b:80", "want an IP address or a host name"},
	} {
		err := CheckListenAddr(c.addr)
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckListenAddr(%q) = %v, want %q", c.addr, err, c.want)
		}
	}
}

// TestCheckFiles: each credential file is read and parsed; a missing or
// malformed one is refused.
func TestCheckFiles(t *testing.T) {
	dir := t.TempDir()
	cert, key := testutil.WriteSelfSigned(t, dir)
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	junk := write("junk", "not a key\n")
	seed := filepath.Join(dir, "user.nk")
	if _, err := NewIdentityKey(seed); err != nil {
		t.Fatal(err)
	}
	account, _ := nkeys.CreateAccount()
	user, _ := nkeys.CreateUser()
	upub, _ := user.PublicKey()
	tok, err := jwt.NewUserClaims(upub).Encode(account)
	if err != nil {
		t.Fatal(err)
	}
	useed, _ := user.Seed()
	cb, err := jwt.FormatUserConfig(tok, useed)
	if err != nil {
		t.Fatal(err)
	}
	creds := write("user.creds", string(cb))
	jwtOnly := write("jwt-only.creds", tok+"\n")
	accountSeed, _ := account.Seed()
	accountKey := write("account.nk", string(accountSeed)+"\n")
	missing := filepath.Join(dir, "missing")
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"CA", CheckCAFile(cert), ""},
		{"CA missing", CheckCAFile(missing), "no such file"},
		{"CA not PEM", CheckCAFile(junk), "no PEM certificate"},
		{"key pair", CheckKeyPair(cert, key), ""},
		{"key pair missing", CheckKeyPair(missing, key), "no such file"},
		{"key pair swapped", CheckKeyPair(key, cert), "PEM"},
		{"cert without key", CheckKeyPair(cert, ""), "needs its key"},
		{"creds", CheckCredsFile(creds), ""},
		{"creds missing", CheckCredsFile(missing), "no such file"},
		{"creds junk", CheckCredsFile(junk), "no user JWT"},
		{"creds without seed", CheckCredsFile(jwtOnly), "no user nkey seed"},
		{"nkey", CheckNKeyFile(seed), ""},
		{"nkey missing", CheckNKeyFile(missing), "no such file"},
		{"nkey junk", CheckNKeyFile(junk), "seed"},
		{"nkey of an account", CheckNKeyFile(accountKey), "user seed"},
	} {
		if (c.want == "") != (c.err == nil) || c.err != nil && !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, c.err, c.want)
		}
	}
}
