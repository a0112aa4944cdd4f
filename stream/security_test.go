package stream

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"dprl/internal/testutil"
)

// testCA is a certificate authority generated in memory for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t testing.TB, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue returns a leaf certificate for 127.0.0.1 (server) or a client.
func (ca *testCA) issue(t testing.TB, cn string, server bool) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	usage := x509.ExtKeyUsageClientAuth
	if server {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func newUserKey(t testing.TB) (nkeys.KeyPair, string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	return kp, pub
}

// secured is an embedded server with accounts for the agent and two
// clients (alice: nkey, bob: user and password) and a test handler served
// over the agent's in-process connection.
type secured struct {
	s        *server.Server
	url      string
	agent    *nats.Conn
	h        *testHandler
	aliceKey nkeys.KeyPair
}

type securedOpts struct {
	tls      *tls.Config
	maxConn  int
	authWait time.Duration
	open     bool // no accounts at all: the open server, for comparison
}

func startSecured(t *testing.T, o securedOpts) *secured {
	t.Helper()
	agentKP, agentPub := newUserKey(t)
	aliceKP, alicePub := newUserKey(t)
	eo := EmbeddedOptions{Port: -1, TLSConfig: o.tls, MaxConn: o.maxConn, AuthTimeout: o.authWait}
	if !o.open {
		var err error
		eo.Nkeys, eo.Users, err = Accounts("", agentPub, []ClientIdentity{
			{Name: "alice", NKey: alicePub},
			{Name: "bob", User: "bob", Password: "bob-secret"},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	s, err := StartEmbedded(eo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	agentOpts := []Option{WithInProcess(s), WithName("agent")}
	if !o.open {
		agentOpts = append(agentOpts, WithNKeyPair(agentKP))
	}
	nc, err := Connect("", agentOpts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	h := &testHandler{}
	srv, err := Serve(context.Background(), nc, h, ServerConfig{ObsDim: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	return &secured{s: s, url: s.ClientURL(), agent: nc, h: h, aliceKey: aliceKP}
}

// errSink collects a connection's asynchronous errors (permission
// violations arrive that way).
type errSink struct {
	mu   sync.Mutex
	errs []string
}

func (e *errSink) opt() Option {
	return WithNATSOption(nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		e.mu.Lock()
		e.errs = append(e.errs, err.Error())
		e.mu.Unlock()
	}))
}

func (e *errSink) count(sub string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, s := range e.errs {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

func quick() Option { return WithReconnect(0, time.Millisecond, time.Millisecond) }

func TestSecuredRefusesUnauthenticated(t *testing.T) {
	x := startSecured(t, securedOpts{})
	strangerKP, _ := newUserKey(t)
	for name, opts := range map[string][]Option{
		"no credentials": nil,
		"unknown nkey":   {WithNKeyPair(strangerKP)},
		"wrong password": {WithUserPassword("bob", "guess")},
		"unknown user":   {WithUserPassword("mallory", "bob-secret")},
	} {
		nc, err := Connect(x.s.ClientURL(), append(opts, quick())...)
		if err == nil {
			nc.Close()
			t.Errorf("%s: connected", name)
		} else if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(err.Error(), "Authorization Violation") {
			t.Errorf("%s: %v, want an authorization violation", name, err)
		}
	}
	// The identities that are configured are served.
	for name, opts := range map[string][]Option{
		"alice (nkey)":        {WithNKeyPair(x.aliceKey), WithInbox("alice")},
		"bob (user+password)": {WithUserPassword("bob", "bob-secret"), WithInbox("bob")},
	} {
		nc, err := Connect(x.s.ClientURL(), append(opts, quick())...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c, _ := NewClient(nc)
		if a, err := c.Act(context.Background(), "abc", "u", []float64{1}, 0, true); err != nil || a.Index != 3 {
			t.Errorf("%s: act %+v %v", name, a, err)
		}
		if err := c.End(context.Background(), "abc", 1, true); err != nil {
			t.Errorf("%s: end %v", name, err)
		}
		nc.Close()
	}
	// In-process connections authenticate and are restricted like TCP
	// ones: alice in-process still may not join the act queue group.
	var sink errSink
	ip, err := Connect("", WithInProcess(x.s), WithNKeyPair(x.aliceKey), sink.opt())
	if err != nil {
		t.Fatal(err)
	}
	ip.QueueSubscribe("dprl.v1.act", QueueGroup, func(*nats.Msg) {})
	ip.Flush()
	testutil.Eventually(t, 2*time.Second, func() error {
		if sink.count("Permissions Violation for Subscription") == 0 {
			return errors.New("in-process queue subscription to act not refused")
		}
		return nil
	})
	ip.Close()
	// A client must use its own inbox: the default _INBOX.> is not its to
	// read, so a request without WithInbox gets no reply.
	nc, err := Connect(x.s.ClientURL(), WithNKeyPair(x.aliceKey), quick(), sink.opt())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c, _ := NewClient(nc, WithTimeout(300*time.Millisecond))
	if _, err := c.Act(context.Background(), "abc", "u", []float64{1}, 0, true); err == nil {
		t.Error("request on the shared _INBOX answered")
	}
}

// attackResult is what the attacks of TestSecuredAttacks achieved.
type attackResult struct {
	snooped, fakeActions, fakePolicies, violations int
}

// runAttacks plays issue 17's attacks against x: an eavesdropper
// subscribing to ">", "_INBOX.>", the victim's inbox and the request
// subjects; a rogue member of the act queue group answering with action 99;
// a forged policy announcement (directly, and by making the agent answer an
// act request onto the policy subject). The attacker authenticates as the
// client alice when x is secured. The victim, bob, makes 200 act requests.
func runAttacks(t *testing.T, x *secured, attacker []Option, victim []Option) attackResult {
	t.Helper()
	var sink errSink
	mal, err := Connect(x.url, append(attacker, sink.opt(), quick())...)
	if err != nil {
		t.Fatal(err)
	}
	defer mal.Close()
	var snooped atomic.Int64
	for _, subj := range []string{">", "_INBOX.>", "_INBOX.bob.>", "dprl.v1.act", "dprl.v1.end", "dprl.v1.act.*", "dprl.v1.end.*", "dprl.>"} {
		if _, err := mal.Subscribe(subj, func(m *nats.Msg) {
			if strings.Contains(string(m.Data), "victim") || strings.Contains(string(m.Data), `"action"`) {
				snooped.Add(1)
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, subj := range []string{"dprl.v1.act", "dprl.v1.act.*"} {
		if _, err := mal.QueueSubscribe(subj, QueueGroup, func(m *nats.Msg) {
			m.Respond([]byte(`{"action":99,"version":1,"step":0}`))
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := mal.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the server answers permission violations asynchronously

	vc, err := Connect(x.url, append(victim, quick())...)
	if err != nil {
		t.Fatal(err)
	}
	defer vc.Close()
	var fakePolicies atomic.Int64
	real := make(chan struct{}, 1)
	client, _ := NewClient(vc)
	sub, err := client.WatchPolicy(func(p PolicyAnnouncement) {
		if p.Version == 999 {
			fakePolicies.Add(1)
		} else if p.Version == 5 {
			real <- struct{}{}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	vc.Flush()

	fake := 0
	for i := range 200 {
		a, err := client.Act(context.Background(), "ab", "victim-user", []float64{float64(i)}, 0, true)
		if err != nil {
			t.Fatalf("act %d: %v", i, err)
		}
		if a.Index == 99 {
			fake++
		} else if a.Index != 2 {
			t.Fatalf("act %d: action %d", i, a.Index)
		}
	}
	// Forged announcements: published directly, and an act request whose
	// reply subject is the policy subject (the agent must not answer there).
	mal.Publish("dprl.v1.policy", []byte(`{"version":999,"epsilon":0.01,"delta":1e-9}`))
	mal.PublishRequest("dprl.v1.act", "dprl.v1.policy", []byte(`{"session":"x","user":"m","obs":[1]}`))
	mal.Flush()
	time.Sleep(50 * time.Millisecond)
	// The real announcement comes after: once it is in, anything forged
	// before it has been delivered too.
	if err := PublishPolicy(x.agent, "", PolicyAnnouncement{Version: 5, Epsilon: 1, Delta: 1e-5}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-real:
	case <-time.After(5 * time.Second):
		t.Fatal("the agent's announcement did not arrive")
	}
	return attackResult{snooped: int(snooped.Load()), fakeActions: fake, fakePolicies: int(fakePolicies.Load()),
		violations: sink.count("Permissions Violation")}
}

// TestSecuredAttacks replays issue 17's attacks on the NATS transport: on
// an open server they succeed (the threat is real), on a secured one every
// one of them fails and the attacker's connection is told why.
func TestSecuredAttacks(t *testing.T) {
	t.Run("open", func(t *testing.T) {
		x := startSecured(t, securedOpts{open: true})
		r := runAttacks(t, x, nil, nil)
		if r.snooped == 0 || r.fakeActions == 0 || r.fakePolicies == 0 {
			t.Fatalf("attacks on the open server failed (%+v): the test no longer shows the threat", r)
		}
		t.Logf("open server: %+v", r)
	})
	t.Run("secured", func(t *testing.T) {
		x := startSecured(t, securedOpts{})
		r := runAttacks(t, x, []Option{WithNKeyPair(x.aliceKey), WithInbox("alice")},
			[]Option{WithUserPassword("bob", "bob-secret"), WithInbox("bob")})
		if r.snooped != 0 || r.fakeActions != 0 || r.fakePolicies != 0 {
			t.Fatalf("attacks on the secured server: %+v", r)
		}
		// 7 refused subscriptions and 1 refused publish at least.
		if r.violations < 8 {
			t.Errorf("%d permission violations reported to the attacker, want >= 8", r.violations)
		}
		if n := x.h.acts.Load(); n != 200 {
			t.Errorf("agent handled %d acts, want 200 (the request with the policy subject as its reply subject must be dropped)", n)
		}
	})
}

func TestSecuredConnectionCap(t *testing.T) {
	const capN = 8
	// MaxConn counts the agent's in-process connection too.
	x := startSecured(t, securedOpts{maxConn: capN + 1, authWait: time.Second})
	var conns []*nats.Conn
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	for i := range capN {
		nc, err := Connect(x.s.ClientURL(), WithNKeyPair(x.aliceKey), WithInbox("alice"), quick())
		if err != nil {
			t.Fatalf("connection %d: %v", i+1, err)
		}
		conns = append(conns, nc)
	}
	if nc, err := Connect(x.s.ClientURL(), WithNKeyPair(x.aliceKey), WithInbox("alice"), quick()); err == nil {
		nc.Close()
		t.Fatalf("connection %d accepted", capN+1)
	}
	// What the server says to it (nats.go may see only the closed socket).
	conn, err := net.Dial("tcp", x.s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	br := bufio.NewReader(conn)
	br.ReadString('\n') // INFO
	if line, _ := br.ReadString('\n'); !strings.Contains(line, "maximum connections exceeded") {
		t.Fatalf("connection %d told %q", capN+1, line)
	}
	conn.Close()
	for _, nc := range conns {
		nc.Close()
	}
	conns = nil

	// A flood of idle TCP connections that never authenticate: the server
	// never holds more than the cap, and closes the idle ones after the
	// auth timeout, so legitimate clients get in again.
	addr := x.s.Addr().String()
	var raw []net.Conn
	defer func() {
		for _, c := range raw {
			c.Close()
		}
	}()
	for range 100 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, c)
		if n := x.s.NumClients(); n > capN+1 {
			t.Fatalf("server holds %d connections, cap %d", n, capN+1)
		}
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		if n := x.s.NumClients(); n != 1 {
			return errors.New("idle unauthenticated connections still held")
		}
		return nil
	})
	nc, err := Connect(x.s.ClientURL(), WithNKeyPair(x.aliceKey), WithInbox("alice"), quick())
	if err != nil {
		t.Fatalf("after the flood: %v", err)
	}
	nc.Close()
}

func TestSecuredTLS(t *testing.T) {
	ca := newTestCA(t, "dprl test CA")
	other := newTestCA(t, "someone else")
	serverCert := ca.issue(t, "agent", true)
	for _, mutual := range []bool{false, true} {
		name := "tls"
		cfg := &tls.Config{Certificates: []tls.Certificate{serverCert}, MinVersion: tls.VersionTLS12}
		if mutual {
			name = "mutual tls"
			cfg.ClientCAs, cfg.ClientAuth = ca.pool, tls.RequireAndVerifyClientCert
		}
		t.Run(name, func(t *testing.T) {
			x := startSecured(t, securedOpts{tls: cfg})
			creds := []Option{WithNKeyPair(x.aliceKey), WithInbox("alice"), quick()}
			good := &tls.Config{RootCAs: ca.pool, MinVersion: tls.VersionTLS12}
			if mutual {
				good.Certificates = []tls.Certificate{ca.issue(t, "alice", false)}
			}
			nc, err := Connect(x.s.ClientURL(), append(creds, WithNATSOption(nats.Secure(good)))...)
			if err != nil {
				t.Fatalf("client with the CA: %v", err)
			}
			c, _ := NewClient(nc)
			if a, err := c.Act(context.Background(), "abc", "u", []float64{1}, 0, true); err != nil || a.Index != 3 {
				t.Fatalf("act over TLS: %+v %v", a, err)
			}
			nc.Close()

			refused := map[string]Option{
				"server not trusted": WithNATSOption(nats.Secure(&tls.Config{RootCAs: other.pool})),
			}
			if mutual {
				refused["no client certificate"] = WithNATSOption(nats.Secure(&tls.Config{RootCAs: ca.pool}))
				refused["client certificate from another CA"] = WithNATSOption(nats.Secure(&tls.Config{RootCAs: ca.pool,
					Certificates: []tls.Certificate{other.issue(t, "mallory", false)}}))
			}
			for what, opt := range refused {
				if nc, err := Connect(x.s.ClientURL(), append(creds, opt)...); err == nil {
					// A TLS 1.3 server rejects a missing client
					// certificate after the client's handshake
					// completes: the connection must not survive it.
					if err := nc.Flush(); err == nil {
						t.Errorf("%s: connected", what)
					}
					nc.Close()
				}
			}

			// A plain-text client is refused: its CONNECT never gets a PONG.
			conn, err := net.Dial("tcp", x.s.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			br := bufio.NewReader(conn)
			info, _ := br.ReadString('\n')
			if !strings.Contains(info, `"tls_required":true`) {
				t.Errorf("INFO does not require TLS: %s", info)
			}
			conn.Write([]byte("CONNECT {\"verbose\":false}\r\nPING\r\n"))
			conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					break
				}
				if strings.HasPrefix(line, "PONG") {
					t.Fatal("plain-text client served")
				}
			}
		})
	}
}

func TestAccountsAndClientsFile(t *testing.T) {
	_, agent := newUserKey(t)
	_, k1 := newUserKey(t)
	_, k2 := newUserKey(t)
	account, _ := nkeys.CreateAccount()
	accountPub, _ := account.PublicKey()
	seed, _ := func() (nkeys.KeyPair, error) { return nkeys.CreateUser() }()
	seedBytes, _ := seed.Seed()
	cases := []struct {
		name    string
		clients []ClientIdentity
		want    string // "" when valid
	}{
		{"nkey and user", []ClientIdentity{{Name: "a", NKey: k1}, {Name: "b", User: "b", Password: "$2a$11$abc"}}, ""},
		{"bad name", []ClientIdentity{{Name: "a.b", NKey: k1}}, "name"},
		{"wildcard name", []ClientIdentity{{Name: ">", NKey: k1}}, "name"},
		{"empty name", []ClientIdentity{{NKey: k1}}, "name"},
		{"both", []ClientIdentity{{Name: "a", NKey: k1, User: "a", Password: "p"}}, "not both"},
		{"neither", []ClientIdentity{{Name: "a"}}, "give an nkey"},
		{"user without password", []ClientIdentity{{Name: "a", User: "a"}}, "give an nkey"},
		{"account key", []ClientIdentity{{Name: "a", NKey: accountPub}}, "not a public user nkey"},
		{"seed instead of key", []ClientIdentity{{Name: "a", NKey: string(seedBytes)}}, "not a public user nkey"},
		{"duplicate name", []ClientIdentity{{Name: "a", NKey: k1}, {Name: "a", NKey: k2}}, "twice"},
		{"duplicate nkey", []ClientIdentity{{Name: "a", NKey: k1}, {Name: "b", NKey: k1}}, "twice"},
		{"agent's key", []ClientIdentity{{Name: "a", NKey: agent}}, "agent"},
		{"duplicate user", []ClientIdentity{{Name: "a", User: "u", Password: "p"}, {Name: "b", User: "u", Password: "q"}}, "twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			nk, users, err := Accounts("x", agent, c.clients)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(nk) != 2 || len(users) != 1 || nk[0].Nkey != agent {
					t.Fatalf("%d nkeys, %d users", len(nk), len(users))
				}
				if p := nk[1].Permissions; p.Subscribe.Allow[1] != "_INBOX.a.>" || p.Publish.Allow[0] != "x.v1.act" {
					t.Fatalf("client permissions %+v %+v", p.Publish, p.Subscribe)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
	if _, _, err := Accounts("", k1[:10], nil); err == nil {
		t.Error("bad agent key accepted")
	}

	dir := t.TempDir()
	files := map[string]string{
		"ok":       `{"clients":[{"name":"web","nkey":"` + k1 + `"},{"name":"ops","user":"ops","password":"pw"}]}`,
		"unknown":  `{"clients":[{"name":"web","nkey":"` + k1 + `","perms":">"}]}`,
		"trailing": `{"clients":[{"name":"web","nkey":"` + k1 + `"}]} {}`,
		"dupkey":   `{"clients":[{"name":"web","nkey":"` + k1 + `","name":"ops"}]}`,
		"empty":    `{"clients":[]}`,
		"invalid":  `{"clients":[{"name":"web"}]}`,
	}
	for name, body := range files {
		p := filepath.Join(dir, name+".json")
		os.WriteFile(p, []byte(body), 0o600)
		cl, err := LoadClients(p)
		if (err == nil) != (name == "ok") {
			t.Errorf("%s: %v", name, err)
		}
		if name == "ok" && (len(cl) != 2 || cl[1].Password != "pw") {
			t.Errorf("loaded %+v", cl)
		}
	}
	if _, err := LoadClients(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("missing file accepted")
	}

	// ServerTLS from PEM files.
	ca := newTestCA(t, "ca")
	leaf := ca.issue(t, "srv", true)
	keyDER, _ := x509.MarshalECPrivateKey(leaf.PrivateKey.(*ecdsa.PrivateKey))
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
		return p
	}
	certF, keyF := write("cert.pem", "CERTIFICATE", leaf.Certificate[0]), write("key.pem", "EC PRIVATE KEY", keyDER)
	caF := write("ca.pem", "CERTIFICATE", ca.cert.Raw)
	cfg, err := ServerTLS(certF, keyF, caF)
	if err != nil || cfg.ClientAuth != tls.RequireAndVerifyClientCert || cfg.MinVersion != tls.VersionTLS12 {
		t.Fatalf("ServerTLS: %v", err)
	}
	for name, args := range map[string][3]string{
		"no key":      {certF, "", ""},
		"bad key":     {certF, certF, ""},
		"bad CA":      {certF, keyF, keyF},
		"missing CA":  {certF, keyF, filepath.Join(dir, "nope")},
		"no cert arg": {"", keyF, ""},
	} {
		if _, err := ServerTLS(args[0], args[1], args[2]); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for name, opt := range map[string]Option{
		"inbox with dot":  WithInbox("a.b"),
		"empty password":  WithUserPassword("u", ""),
		"nil key pair":    WithNKeyPair(nil),
		"account keypair": WithNKeyPair(account),
	} {
		if _, err := Connect("nats://127.0.0.1:1", opt); err == nil || strings.Contains(err.Error(), "no servers") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The keys written in examples/nats-server.conf and examples/nats-clients.json.
const (
	exampleAgentKey  = "UAJDCSFLMCSD6C35GSMQWXSFJ5AWGKVDYM3J2K3Y2X444EB7QKV6JQI6"
	exampleWebKey    = "UBALVDVO5B5JK53MO3ZYJBANPXFD56VVKBIHF7QQSWFY4C43CLSIJVV4"
	exampleReplayKey = "UDKUOTEO3SEZMQIXFG3QPAZ7SCV7J5XLVQGJYWUGEITY2ZWGRGCUEADM"
)

// writeTLSFiles writes a server certificate for 127.0.0.1 from ca and its
// key as PEM files.
func writeTLSFiles(t *testing.T, ca *testCA) (certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	leaf := ca.issue(t, "nats", true)
	keyDER, err := x509.MarshalECPrivateKey(leaf.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Certificate[0]}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	return certFile, keyFile
}

// exampleConf returns examples/nats-server.conf with the given keys, TLS
// files and listen address substituted.
func exampleConf(t *testing.T, listen, agent, web, replay, certFile, keyFile string) string {
	t.Helper()
	b, err := os.ReadFile("../examples/nats-server.conf")
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer(exampleAgentKey, agent, exampleWebKey, web, exampleReplayKey, replay,
		"/etc/dprl/nats/server-cert.pem", certFile, "/etc/dprl/nats/server-key.pem", keyFile,
		"0.0.0.0:4222", listen).Replace(string(b))
}

// TestExampleServerConfig checks examples/nats-server.conf, the
// configuration documented for an external server: it grants exactly the
// permissions the embedded server grants (Accounts), and a server running it
// defeats the attacks of TestSecuredAttacks, with the agent connected over
// TLS like any other client.
func TestExampleServerConfig(t *testing.T) {
	if cl, err := LoadClients("../examples/nats-clients.json"); err != nil || len(cl) != 2 || cl[0].NKey != exampleWebKey || cl[1].NKey != exampleReplayKey {
		t.Fatalf("examples/nats-clients.json: %+v %v", cl, err)
	}
	ca := newTestCA(t, "example CA")
	certFile, keyFile := writeTLSFiles(t, ca)
	agentKP, agentPub := newUserKey(t)
	webKP, webPub := newUserKey(t)
	replayKP, replayPub := newUserKey(t)
	conf := filepath.Join(t.TempDir(), "nats-server.conf")
	os.WriteFile(conf, []byte(exampleConf(t, "127.0.0.1:-1", agentPub, webPub, replayPub, certFile, keyFile)), 0o600)
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*server.Permissions{agentPub: AgentPermissions(""), webPub: ClientPermissions("", "web"), replayPub: ClientPermissions("", "replay")}
	if len(opts.Nkeys) != 3 || len(opts.Users) != 0 || opts.MaxConn != 1000 || opts.MaxSubs != 256 || opts.TLSConfig == nil {
		t.Fatalf("example: %d nkeys, %d users, max conn %d, max subs %d, TLS %v", len(opts.Nkeys), len(opts.Users), opts.MaxConn, opts.MaxSubs, opts.TLSConfig != nil)
	}
	for _, u := range opts.Nkeys {
		w, p := want[u.Nkey], u.Permissions
		if w == nil || p == nil || strings.Join(p.Publish.Allow, " ") != strings.Join(w.Publish.Allow, " ") ||
			strings.Join(p.Subscribe.Allow, " ") != strings.Join(w.Subscribe.Allow, " ") || len(p.Publish.Deny)+len(p.Subscribe.Deny) != 0 ||
			(p.Response == nil) != (w.Response == nil) || p.Response != nil && p.Response.MaxMsgs != w.Response.MaxMsgs {
			t.Errorf("example permissions of %s: %+v %+v %+v, want %+v %+v %+v", u.Nkey, p.Publish, p.Subscribe, p.Response, w.Publish, w.Subscribe, w.Response)
		}
	}
	opts.NoSigs = true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(5 * time.Second) {
		t.Fatal("example server not ready")
	}
	t.Cleanup(s.Shutdown)
	secure := WithNATSOption(nats.Secure(&tls.Config{RootCAs: ca.pool, MinVersion: tls.VersionTLS12}))
	attack := func(t *testing.T, url string) {
		x := startExternal(t, url, agentKP, secure)
		r := runAttacks(t, x, []Option{WithNKeyPair(webKP), WithInbox("web"), secure}, []Option{WithNKeyPair(replayKP), WithInbox("replay"), secure})
		if r.snooped != 0 || r.fakeActions != 0 || r.fakePolicies != 0 || r.violations < 8 {
			t.Fatalf("attacks on the example configuration: %+v", r)
		}
	}
	t.Run("in-process nats-server", func(t *testing.T) { attack(t, s.ClientURL()) })

	// The same configuration in a nats-server binary, when one is
	// installed (e.g. Debian's package): a separate process, the agent
	// one TCP client among others.
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		t.Log("no nats-server binary: external process case skipped")
		return
	}
	t.Run("nats-server binary", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		conf := filepath.Join(t.TempDir(), "nats-server.conf")
		os.WriteFile(conf, []byte(exampleConf(t, addr, agentPub, webPub, replayPub, certFile, keyFile)), 0o600)
		cmd := exec.Command(bin, "-c", conf)
		var out testutil.LockedBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		testutil.Eventually(t, 5*time.Second, func() error {
			c, err := net.Dial("tcp", addr)
			if err == nil {
				c.Close()
			}
			return err
		})
		attack(t, "tls://"+addr)
		if t.Failed() {
			t.Log(out.String())
		}
	})
}

// startExternal connects the agent to a server at url over TCP and serves
// the test handler.
func startExternal(t *testing.T, url string, agentKP nkeys.KeyPair, opts ...Option) *secured {
	t.Helper()
	nc, err := Connect(url, append([]Option{WithNKeyPair(agentKP), WithName("agent"), quick()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	h := &testHandler{}
	srv, err := Serve(context.Background(), nc, h, ServerConfig{ObsDim: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	return &secured{url: url, agent: nc, h: h}
}
