package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dprl/ledger"
	"dprl/ledger/record"
	"dprl/stream"
)

// TestClusterWithAuth runs a cluster on a dprl nats node with --auth: a
// learner, a replica, a client (dprl replay) and an operator, each
// authenticated with its nkey and its own reply inbox. The learner
// releases from the replica's updates through the ledger of record, which
// the operator reads; no process is refused anything it does; a
// connection without credentials is refused, and the client cannot read
// the ledger.
func TestClusterWithAuth(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster of processes")
	}
	dir := t.TempDir()
	auth := stream.ClusterAuth{}
	seed := func(name string) string { return filepath.Join(dir, name+".nk") }
	for _, role := range []struct {
		ids  *[]stream.ClientIdentity
		name string
	}{{&auth.Learners, "l1"}, {&auth.Replicas, "r1"}, {&auth.Clients, "web"}, {&auth.Operators, "ops"}} {
		pub, err := stream.NewIdentityKey(seed(role.name))
		if err != nil {
			t.Fatal(err)
		}
		*role.ids = append(*role.ids, stream.ClientIdentity{Name: role.name, NKey: pub})
	}
	b, _ := json.Marshal(auth)
	authFile := filepath.Join(dir, "auth.json")
	key := filepath.Join(dir, "user.key")
	for f, data := range map[string]string{authFile: string(b), key: strings.Repeat("ef", 32)} {
		if err := os.WriteFile(f, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // before wg.Wait: the processes stop
	var outs sync.Map
	start := func(name string, args ...string) {
		var out bytes.Buffer
		var mu sync.Mutex
		w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
		outs.Store(name, func() string { mu.Lock(); defer mu.Unlock(); return out.String() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code := run(ctx, args, strings.NewReader(""), w, w); code != 0 && ctx.Err() == nil {
				mu.Lock()
				t.Errorf("%s exited %d:\n%s", name, code, out.String())
				mu.Unlock()
			}
		}()
	}
	ports := freePorts(t, 3)
	url := fmt.Sprintf("nats://127.0.0.1:%d", ports[0])
	start("nats", "nats", "--log-level", "warn", "--store", filepath.Join(dir, "nats"), "--listen", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--auth", authFile)
	connect := func(name string) (*nats.Conn, error) {
		return stream.Connect(url, stream.WithNKey(seed(name)), stream.WithInbox(name), stream.WithReconnect(0, time.Millisecond, time.Millisecond))
	}
	var ops *nats.Conn
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var err error
		if ops, err = connect("ops"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the nats node does not serve: %v", err)
		}
	}
	defer ops.Close()
	if nc, err := stream.Connect(url, stream.WithReconnect(0, time.Millisecond, time.Millisecond)); err == nil {
		nc.Close()
		t.Fatal("a connection without credentials was accepted")
	}

	common := []string{"--log-level", "warn", "--env", "cartpole", "--K", "4", "--nats", url, "--user-key", key, "--cluster-replicas", "1",
		"--flush-timeout", "1h", "--lease-ttl", "1s", "--max-updates-per-user", "1"}
	http := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[1+i]) }
	start("learner", append([]string{"agent", "--role", "learn", "--data", filepath.Join(dir, "learner"), "--http", http(0), "--nkey", seed("l1"), "--nats-identity", "l1"}, common...)...)
	start("replica", append([]string{"agent", "--role", "serve", "--data", filepath.Join(dir, "replica"), "--http", http(1), "--nkey", seed("r1"), "--nats-identity", "r1"}, common...)...)
	for i := range 2 {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if code, err := httpGet("http://" + http(i) + "/readyz"); err == nil && code == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("agent %d not ready", i)
			}
		}
	}
	js, err := jetstream.New(ops)
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	defer rcancel()
	log, err := record.OpenReader(rctx, js, "default")
	if err != nil {
		t.Fatal(err)
	}
	kinds := func() (writers, releases int) {
		if err := log.Read(rctx, 1, func(e record.Entry) error {
			var m struct {
				Entry ledger.Entry `json:"entry"`
			}
			if err := json.Unmarshal(e.Data, &m); err != nil {
				return err
			}
			switch m.Entry.Kind {
			case ledger.KindWriter:
				writers++
			case ledger.KindRelease:
				releases++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return writers, releases
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if w, _ := kinds(); w > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the learner wrote no writer entry")
		}
	}
	time.Sleep(500 * time.Millisecond) // the replica follows the log every 200 ms
	var rout, rerr bytes.Buffer
	if code := run(ctx, []string{"replay", "--log-level", "warn", "--nats", url, "--nkey", seed("web"), "--nats-identity", "web", "--users", "16",
		"--concurrency", "4", "--rate", "200", "--seed", "5", "--json"}, strings.NewReader(""), &rout, &rerr); code != 0 {
		t.Fatalf("replay exited %d: %s %s", code, rout.String(), rerr.String())
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, r := kinds(); r > 0 {
			t.Logf("%d releases", r)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no release")
		}
	}
	// The client reads no stream.
	web, err := stream.Connect(url, stream.WithNKey(seed("web")), stream.WithInbox("web"), stream.WithNATSOption(nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})))
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	wjs, _ := jetstream.New(web)
	wctx, wcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer wcancel()
	if _, err := wjs.Stream(wctx, "DPRL_LEDGER_default"); err == nil || errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("the client read the ledger's info: %v", err)
	}
	cancel()
	wg.Wait()
	outs.Range(func(k, v any) bool {
		if o := v.(func() string)(); strings.Contains(strings.ToLower(o), "permissions violation") {
			t.Errorf("%s was refused something:\n%s", k, o)
		}
		return true
	})
}
