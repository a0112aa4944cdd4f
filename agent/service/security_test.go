package service

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"dprl/stream"
)

func TestNATSListenPolicy(t *testing.T) {
	_, pub := userKey(t)
	clients := []stream.ClientIdentity{{Name: "web", NKey: pub}}
	tlsCfg := &tls.Config{}
	cases := []struct {
		listen string
		sec    NATSSecurity
		want   string // "" when allowed
	}{
		{"", NATSSecurity{}, ""},
		{"127.0.0.1:4222", NATSSecurity{}, ""},
		{"127.0.0.2:0", NATSSecurity{}, ""},
		{"localhost:4222", NATSSecurity{}, ""},
		{"[::1]:4222", NATSSecurity{}, ""},
		{"0.0.0.0:4222", NATSSecurity{}, "without client identities"},
		{"[::]:4222", NATSSecurity{}, "without client identities"},
		{":4222", NATSSecurity{}, "without client identities"},
		{"10.1.2.3:4222", NATSSecurity{}, "and without TLS"},
		{"agent.example:4222", NATSSecurity{}, "not loopback"},
		{"0.0.0.0:4222", NATSSecurity{Clients: clients}, "without TLS"},
		{"0.0.0.0:4222", NATSSecurity{TLS: tlsCfg}, "without client identities"},
		{"0.0.0.0:4222", NATSSecurity{Clients: clients, TLS: tlsCfg}, ""},
		{"0.0.0.0:4222", NATSSecurity{Insecure: true}, ""},
		{"0.0.0.0", NATSSecurity{}, "missing port"},
		{"127.0.0.1:4222", NATSSecurity{MaxConn: -1}, ">= 0"},
	}
	for _, c := range cases {
		err := c.sec.Check(c.listen)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q %+v: %v, want %q", c.listen, c.sec, err, c.want)
		}
	}
}

func userKey(t *testing.T) (nkeys.KeyPair, string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	return kp, pub
}

// TestServiceRefusesOpenNATSOffLoopback: an agent with the embedded server
// on all interfaces and no client identities does not start, unless told
// it may (and then it is served, and labelled).
func TestServiceRefusesOpenNATSOffLoopback(t *testing.T) {
	cfg := cartpoleConfig(2)
	_, err := StartService(context.Background(), ServiceConfig{Agent: cfg, DataDir: t.TempDir(), NATSListen: "0.0.0.0:0"})
	if err == nil || !strings.Contains(err.Error(), "not loopback") {
		t.Fatalf("open server on 0.0.0.0: %v", err)
	}
	svc, err := StartService(context.Background(), ServiceConfig{Agent: cfg, DataDir: t.TempDir(), NATSListen: "0.0.0.0:0",
		NATSSecurity: NATSSecurity{Insecure: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if !strings.HasPrefix(svc.NATSSecurityMode(), "open (INSECURE: listening on 0.0.0.0): no authentication") {
		t.Errorf("mode %q", svc.NATSSecurityMode())
	}
	for name, sec := range map[string]NATSSecurity{
		"agent key, no clients": {AgentKey: func() nkeys.KeyPair { kp, _ := userKey(t); return kp }()},
		"too few subscriptions": {MaxSubs: 2},
		"cap over the fd limit": {MaxConn: 1 << 30},
	} {
		if limit, _ := fdLimit(); limit == 0 && sec.MaxConn != 0 {
			continue // no open-file limit here
		}
		if _, err := StartService(context.Background(), ServiceConfig{Agent: cfg, DataDir: t.TempDir(), NATSListen: "127.0.0.1:0", NATSSecurity: sec}); err == nil {
			t.Errorf("%s: started", name)
		}
	}
}

// TestServiceSecuredNATS runs the real agent with client identities: a
// client plays sessions and sees the agent's policy announcement (so the
// agent's own permissions suffice), an unauthenticated client is refused,
// the client cannot join the act queue group, read others' traffic or
// announce a policy, and the connection cap holds.
func TestServiceSecuredNATS(t *testing.T) {
	aliceKP, alicePub := userKey(t)
	cfg := cartpoleConfig(2)
	cfg.Workers = 1
	svc, err := StartService(context.Background(), ServiceConfig{Agent: cfg, DataDir: t.TempDir(), NATSListen: "127.0.0.1:0",
		NATSSecurity: NATSSecurity{Clients: []stream.ClientIdentity{{Name: "alice", NKey: alicePub}, {Name: "bob", User: "bob", Password: "pw"}}, MaxConn: 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if !strings.HasPrefix(svc.NATSSecurityMode(), "authenticated: 2 client identities") {
		t.Errorf("mode %q", svc.NATSSecurityMode())
	}
	quick := stream.WithReconnect(0, time.Millisecond, time.Millisecond)
	if nc, err := stream.Connect(svc.NATSURL(), quick); err == nil {
		nc.Close()
		t.Fatal("unauthenticated client connected")
	}

	var mu sync.Mutex
	var violations []string
	onErr := stream.WithNATSOption(nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		mu.Lock()
		violations = append(violations, err.Error())
		mu.Unlock()
	}))
	// bob is the attacker: a rogue responder, an eavesdropper, a forger.
	bob, err := stream.Connect(svc.NATSURL(), stream.WithUserPassword("bob", "pw"), stream.WithInbox("bob"), quick, onErr)
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	var stolen sync.Map
	bob.QueueSubscribe("dprl.v1.act", stream.QueueGroup, func(m *nats.Msg) {
		stolen.Store(string(m.Data), true)
		m.Respond([]byte(`{"action":1,"version":0,"step":0}`))
	})
	bob.Subscribe(">", func(m *nats.Msg) { stolen.Store(string(m.Data), true) })
	bob.Subscribe("_INBOX.alice.>", func(m *nats.Msg) { stolen.Store(string(m.Data), true) })
	bob.Flush()

	alice, err := stream.Connect(svc.NATSURL(), stream.WithNKeyPair(aliceKP), stream.WithInbox("alice"), quick)
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	c, _ := stream.NewClient(alice)
	versions := make(chan uint64, 16)
	sub, err := c.WatchPolicy(func(p stream.PolicyAnnouncement) { versions <- p.Version })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	alice.Flush()
	bob.Publish("dprl.v1.policy", []byte(`{"version":99,"epsilon":0.1,"delta":1e-9}`))
	bob.Flush()

	ctx := context.Background()
	for s := range 2 {
		id := fmt.Sprintf("s%d", s)
		for step := range 5 {
			a, err := c.Act(ctx, id, fmt.Sprintf("user-%d", s), []float64{0.01 * float64(step), 0, 0, 0}, 1, step == 0)
			if err != nil {
				t.Fatalf("act: %v", err)
			}
			if a.Index < 0 || a.Index > 1 {
				t.Fatalf("action %+v", a)
			}
		}
		if err := c.End(ctx, id, 1, true); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case v := <-versions:
		if v != 1 {
			t.Fatalf("announcement of version %d, want the agent's 1 (a forged one got through)", v)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no policy announcement from the agent")
	}
	n := 0
	stolen.Range(func(k, _ any) bool { n++; t.Logf("stolen: %s", k); return true })
	if n != 0 {
		t.Fatalf("the attacker read or answered %d messages", n)
	}
	mu.Lock()
	if len(violations) < 4 {
		t.Errorf("violations %q: want the 3 subscriptions and the publish refused", violations)
	}
	mu.Unlock()

	// Cap of 3 client connections: alice and bob hold two.
	third, err := stream.Connect(svc.NATSURL(), stream.WithNKeyPair(aliceKP), stream.WithInbox("alice"), quick)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if nc, err := stream.Connect(svc.NATSURL(), stream.WithNKeyPair(aliceKP), stream.WithInbox("alice"), quick); err == nil {
		nc.Close()
		t.Fatal("a 4th client connection accepted with a cap of 3")
	}
}

func TestFitsFDs(t *testing.T) {
	for _, c := range []struct {
		conn, limit int
		want        bool
	}{{1000, 20000, true}, {1000, 3024, true}, {1000, 3023, false}, {9488, 20000, true}, {9489, 20000, false}, {1 << 30, 0, true}} {
		if got := fitsFDs(c.conn, c.limit); got != c.want {
			t.Errorf("fitsFDs(%d, %d) = %v", c.conn, c.limit, got)
		}
	}
}

// TestDefaultCapFitsOrRefuses: the default connection cap is lowered to fit
// the open-file limit, and below the smallest cap that fits the agent
// refuses to start, as docs/agent.md says (with ulimit -n 1000 it used to
// start with a cap of 16 that did not fit).
func TestDefaultCapFitsOrRefuses(t *testing.T) {
	for _, c := range []struct {
		limit, want int // want 0: refused
	}{{0, DefaultNATSMaxConn}, {20000, DefaultNATSMaxConn}, {2024, 500}, {1056, 16}, {1055, 0}, {1000, 0}} {
		got, _, err := NATSSecurity{}.capsFor(4, c.limit)
		switch {
		case c.want == 0 && (err == nil || !strings.Contains(err.Error(), "raise the limit")):
			t.Errorf("limit %d: cap %d, %v; want refused", c.limit, got, err)
		case c.want != 0 && (err != nil || got != c.want || !fitsFDs(got, c.limit)):
			t.Errorf("limit %d: cap %d, %v; want %d", c.limit, got, err, c.want)
		}
	}
}
