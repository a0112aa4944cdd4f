package stream_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"dprl/ledger"
	"dprl/ledger/record"
	"dprl/stream"
	"dprl/stream/updateq"
)

// violations collects a connection's permission violations (they arrive
// asynchronously: a refused request itself only times out).
type violations struct {
	mu   sync.Mutex
	errs []string
}

func (v *violations) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	if errors.Is(err, nats.ErrPermissionViolation) {
		v.mu.Lock()
		v.errs = append(v.errs, err.Error())
		v.mu.Unlock()
	}
}

// saw waits up to 2 s for a violation naming subject.
func (v *violations) saw(subject string) bool {
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		v.mu.Lock()
		for _, e := range v.errs {
			if strings.Contains(e, `"`+subject+`"`) {
				v.mu.Unlock()
				return true
			}
		}
		v.mu.Unlock()
		if time.Now().After(deadline) {
			return false
		}
	}
}

func (v *violations) all() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.errs...)
}

// roleConn is one identity's connection to the secured server.
type roleConn struct {
	nc *nats.Conn
	js jetstream.JetStream
	v  *violations
}

func newKey(t *testing.T) (nkeys.KeyPair, string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	return kp, pub
}

// startClusterServer starts a JetStream server secured with
// ClusterAccounts for learner l1, replica r1 (nkeys), client c1 (user and
// password) and operator o1 (nkey), and connects each.
func startClusterServer(t *testing.T) map[string]*roleConn {
	t.Helper()
	lkp, lpub := newKey(t)
	rkp, rpub := newKey(t)
	okp, opub := newKey(t)
	nk, users, err := stream.ClusterAccounts(stream.ClusterAuth{
		Learners:  []stream.ClientIdentity{{Name: "l1", NKey: lpub}},
		Replicas:  []stream.ClientIdentity{{Name: "r1", NKey: rpub}},
		Clients:   []stream.ClientIdentity{{Name: "c1", User: "c1", Password: "c1-secret"}},
		Operators: []stream.ClientIdentity{{Name: "o1", NKey: opub}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := stream.StartEmbedded(stream.EmbeddedOptions{Port: -1, Nkeys: nk, Users: users, JetStream: &stream.JetStreamOptions{StoreDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	conns := map[string]*roleConn{}
	for name, auth := range map[string]stream.Option{"l1": stream.WithNKeyPair(lkp), "r1": stream.WithNKeyPair(rkp), "c1": stream.WithUserPassword("c1", "c1-secret"), "o1": stream.WithNKeyPair(okp)} {
		v := &violations{}
		nc, err := stream.Connect(s.ClientURL(), auth, stream.WithInbox(name), stream.WithNATSOption(nats.ErrorHandler(v.handler)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		conns[name] = &roleConn{nc: nc, js: js, v: v}
	}
	return conns
}

// TestClusterPermissions runs the roles' real calls with each identity's
// connection on a server secured by ClusterAccounts: the learner does
// everything a learner does (opens the ledger, the lease, the queue and
// its consumer, appends, fetches and acknowledges); a replica reads the
// ledger and publishes an update but is refused anything else of the
// queue (its info, a consumer, a fetch, a message), the ledger's and the
// lease's writes, and creating a stream (which could copy the queue); a
// client reads and writes no stream; an operator reads the ledger and
// the queue's counts, never an update.
func TestClusterPermissions(t *testing.T) {
	c := startClusterServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := stream.ClusterStreams("")
	qcfg := updateq.Config{Name: stream.DefaultClusterName, Replicas: 1, MaxValues: 4}

	// The learner: everything it does.
	l := c["l1"]
	log, err := record.Open(ctx, l.js, record.Config{Name: stream.DefaultClusterName, Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	lease, err := record.OpenLease(ctx, l.js, record.LeaseConfig{Name: stream.DefaultClusterName, Replicas: 1, TTL: 5 * time.Second, Holder: "l1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lease.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	q, err := updateq.Open(ctx, l.js, qcfg)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := q.Consumer(ctx, "learner", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := log.Append(ctx, 0, "e1", []byte("entry one")); err != nil {
		t.Fatal(err)
	}

	// The replica: reads the ledger, publishes an update.
	r := c["r1"]
	rlog, err := record.OpenReader(ctx, r.js, stream.DefaultClusterName)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := rlog.Read(ctx, 1, func(e record.Entry) error { got = append(got, string(e.Data)); return nil }); err != nil || len(got) != 1 || got[0] != "entry one" {
		t.Fatalf("replica reads %q, %v", got, err)
	}
	rq, err := updateq.OpenPublisher(r.js, qcfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rq.Publish(ctx, &updateq.Update{Session: "s1", HasUser: true, User: [32]byte{1}, Version: 1, Values: []float64{0.5, -0.5}}); err != nil {
		t.Fatal(err)
	}

	// The partition bucket: a learner creates it, a replica binds to it,
	// writes, reads and watches it.
	if _, err := l.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: n.Parts, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	parts, err := r.js.KeyValue(ctx, n.Parts)
	if err != nil {
		t.Fatal(err)
	}
	w, err := parts.WatchAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parts.Put(ctx, "p0", []byte("r1")); err != nil {
		t.Fatal(err)
	}
	if e, err := parts.Get(ctx, "p0"); err != nil || string(e.Value()) != "r1" {
		t.Fatalf("replica reads the partition bucket: %v", err)
	}
	for e := range w.Updates() {
		if e != nil && e.Key() == "p0" {
			break
		}
	}
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}

	// The learner fetches and acknowledges it, renews and releases.
	msgs, bad, err := cons.Fetch(1, 2*time.Second)
	if err != nil || len(bad) != 0 || len(msgs) != 1 || msgs[0].Update.Session != "s1" {
		t.Fatalf("learner fetched %d updates (%v), %v", len(msgs), bad, err)
	}
	if err := msgs[0].Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := lease.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if h, _, err := lease.Holder(ctx); err != nil || h != "l1" {
		t.Fatalf("lease holder %q, %v", h, err)
	}
	if _, err := log.Append(ctx, 1, "e2", []byte("entry two")); err != nil {
		t.Fatal(err)
	}

	// The client's own subjects pass; the operator reads the ledger and
	// the queue's counts.
	cl := c["c1"]
	for _, subj := range []string{"dprl.v1.act", "dprl.v1.end", "dprl.v1.act.tok", "dprl.v1.end.tok"} {
		if err := cl.nc.Publish(subj, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.nc.SubscribeSync("dprl.v1.policy"); err != nil {
		t.Fatal(err)
	}
	if err := cl.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	o := c["o1"]
	olog, err := record.OpenReader(ctx, o.js, stream.DefaultClusterName)
	if err != nil {
		t.Fatal(err)
	}
	if last, err := olog.Last(ctx); err != nil || last != 2 {
		t.Fatalf("operator: last %d, %v", last, err)
	}
	st, err := o.js.Stream(ctx, n.Updates)
	if err != nil {
		t.Fatalf("operator: queue info: %v", err)
	}
	if st.CachedInfo().State.Msgs != 0 {
		t.Errorf("queue holds %d updates after the ack", st.CachedInfo().State.Msgs)
	}
	// An entry too large for one message: the learner stores its payload
	// in the blob stream; the replica and the operator read it back.
	snap := make([]byte, 1200<<10)
	for i := range snap {
		snap[i] = byte(i)
	}
	if err := log.AppendEntry(ctx, ledger.Entry{Seq: 3, Hash: "h3", Kind: ledger.KindRelease, PolicyVersion: 1}, snap, []float64{1, 2}); err != nil {
		t.Fatalf("learner: a large entry: %v", err)
	}
	for _, rl := range []*record.Log{rlog, olog} {
		e, err := rl.Entry(ctx, 3)
		if err != nil || len(e.Snapshot) != len(snap) || e.Snapshot[len(snap)-1] != snap[len(snap)-1] || len(e.Update) != 2 {
			t.Fatalf("reading a large entry: %d bytes, %v", len(e.Snapshot), err)
		}
	}

	// Nothing the roles do was refused.
	for name, rc := range c {
		if err := rc.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		if v := rc.v.all(); len(v) != 0 {
			t.Errorf("%s: %q", name, v)
		}
	}

	// What each identity is refused: every attempt fails with a
	// permission violation naming the subject.
	next := "$JS.API.CONSUMER.MSG.NEXT." + n.Updates + ".learner"
	type refusal struct {
		who, what, subject string
		try                func(ctx context.Context, rc *roleConn) error
	}
	request := func(subj string) func(context.Context, *roleConn) error {
		return func(ctx context.Context, rc *roleConn) error {
			_, err := rc.nc.RequestWithContext(ctx, subj, []byte(`{"batch":1,"seq":1}`))
			return err
		}
	}
	publish := func(subj string) func(context.Context, *roleConn) error {
		return func(ctx context.Context, rc *roleConn) error {
			_, err := rc.js.Publish(ctx, subj, []byte("x"))
			return err
		}
	}
	openQueue := func(ctx context.Context, rc *roleConn) error { _, err := updateq.Open(ctx, rc.js, qcfg); return err }
	openLog := func(ctx context.Context, rc *roleConn) error {
		_, err := record.Open(ctx, rc.js, record.Config{Name: stream.DefaultClusterName, Replicas: 1})
		return err
	}
	openLease := func(ctx context.Context, rc *roleConn) error {
		_, err := record.OpenLease(ctx, rc.js, record.LeaseConfig{Name: stream.DefaultClusterName, Replicas: 1, TTL: 5 * time.Second, Holder: "x"})
		return err
	}
	queueInfo := func(ctx context.Context, rc *roleConn) error { _, err := rc.js.Stream(ctx, n.Updates); return err }
	spyConsumer := func(ctx context.Context, rc *roleConn) error {
		_, err := rc.js.CreateOrUpdateConsumer(ctx, n.Updates, jetstream.ConsumerConfig{Durable: "spy", AckPolicy: jetstream.AckExplicitPolicy})
		return err
	}
	sourcing := func(ctx context.Context, rc *roleConn) error {
		_, err := rc.js.CreateStream(ctx, jetstream.StreamConfig{Name: "SPY", Sources: []*jetstream.StreamSource{{Name: n.Updates}}})
		return err
	}
	readLog := func(ctx context.Context, rc *roleConn) error {
		_, err := record.OpenReader(ctx, rc.js, stream.DefaultClusterName)
		return err
	}
	refusals := []refusal{
		{"r1", "update queue info", "$JS.API.STREAM.INFO." + n.Updates, queueInfo},
		{"r1", "update queue create/update", "$JS.API.STREAM.UPDATE." + n.Updates, openQueue},
		{"r1", "update queue consumer", "$JS.API.CONSUMER.CREATE." + n.Updates + ".spy", spyConsumer},
		{"r1", "update queue fetch", next, request(next)},
		{"r1", "update queue message", "$JS.API.STREAM.MSG.GET." + n.Updates, request("$JS.API.STREAM.MSG.GET." + n.Updates)},
		{"r1", "a stream sourcing the queue", "$JS.API.STREAM.CREATE.SPY", sourcing},
		{"r1", "ledger create/update", "$JS.API.STREAM.UPDATE." + n.Ledger, openLog},
		{"r1", "ledger append", n.LedgerSubject, publish(n.LedgerSubject)},
		{"r1", "blob append", n.BlobsSubject, publish(n.BlobsSubject)},
		{"c1", "blob read", "$JS.API.STREAM.MSG.GET." + n.Blobs, request("$JS.API.STREAM.MSG.GET." + n.Blobs)},
		{"o1", "blob append", n.BlobsSubject, publish(n.BlobsSubject)},
		{"r1", "lease open", "$JS.API.STREAM.UPDATE." + n.LeaseStream, openLease},
		{"r1", "lease key", "$KV." + n.Lease + ".writer", publish("$KV." + n.Lease + ".writer")},
		{"c1", "ledger read", "$JS.API.STREAM.INFO." + n.Ledger, readLog},
		{"c1", "update queue info", "$JS.API.STREAM.INFO." + n.Updates, queueInfo},
		{"c1", "update queue publish", n.UpdatesSubject, publish(n.UpdatesSubject)},
		{"c1", "update queue consumer", "$JS.API.CONSUMER.CREATE." + n.Updates + ".spy", spyConsumer},
		{"c1", "update queue fetch", next, request(next)},
		{"c1", "ledger append", n.LedgerSubject, publish(n.LedgerSubject)},
		{"c1", "account info", "$JS.API.INFO", request("$JS.API.INFO")},
		{"o1", "update queue consumer", "$JS.API.CONSUMER.CREATE." + n.Updates + ".spy", spyConsumer},
		{"o1", "update queue fetch", next, request(next)},
		{"o1", "update queue message", "$JS.API.STREAM.MSG.GET." + n.Updates, request("$JS.API.STREAM.MSG.GET." + n.Updates)},
		{"o1", "update queue publish", n.UpdatesSubject, publish(n.UpdatesSubject)},
		{"o1", "ledger append", n.LedgerSubject, publish(n.LedgerSubject)},
		{"l1", "update queue publish", n.UpdatesSubject, publish(n.UpdatesSubject)},
		{"l1", "a stream sourcing the queue", "$JS.API.STREAM.CREATE.SPY", sourcing},
		{"l1", "partition bucket key", "$KV." + n.Parts + ".x", publish("$KV." + n.Parts + ".x")},
		{"r1", "partition bucket create/update", "$JS.API.STREAM.UPDATE." + n.PartsStream, func(ctx context.Context, rc *roleConn) error {
			_, err := rc.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: n.Parts, Storage: jetstream.FileStorage})
			return err
		}},
	}
	var wg sync.WaitGroup
	for _, rf := range refusals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rctx, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
			defer cancel()
			rc := c[rf.who]
			if err := rf.try(rctx, rc); err == nil {
				t.Errorf("%s: %s succeeded", rf.who, rf.what)
			}
			if !rc.v.saw(rf.subject) {
				t.Errorf("%s: %s: no permission violation on %q (violations: %q)", rf.who, rf.what, rf.subject, rc.v.all())
			}
		}()
	}
	wg.Wait()

	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestClusterAccountsRefuse: a clash of names, nkeys or users across the
// roles, a bad identity, a cluster name or prefix that is not a subject,
// and a file with an unknown field or without learners are refused.
func TestClusterAccountsRefuse(t *testing.T) {
	_, k1 := newKey(t)
	_, k2 := newKey(t)
	id := func(name, key string) []stream.ClientIdentity {
		return []stream.ClientIdentity{{Name: name, NKey: key}}
	}
	for _, tc := range []struct {
		a    stream.ClusterAuth
		want string
	}{
		{stream.ClusterAuth{Learners: id("a", k1), Replicas: id("a", k2)}, `name "a" given twice`},
		{stream.ClusterAuth{Learners: id("a", k1), Replicas: id("b", k1)}, "nkey used twice"},
		{stream.ClusterAuth{Learners: id("a", k1), Replicas: id("b", k2), Clients: []stream.ClientIdentity{{Name: "c", User: "u", Password: "p"}, {Name: "d", User: "u", Password: "q"}}}, `user "u" given twice`},
		{stream.ClusterAuth{Learners: id("a", k1), Replicas: id("b", "Nnotakey")}, "not a public user nkey"},
		{stream.ClusterAuth{Learners: id("a.b", k1), Replicas: id("b", k2)}, "name"},
		{stream.ClusterAuth{Cluster: "x.y", Learners: id("a", k1), Replicas: id("b", k2)}, `cluster "x.y"`},
		{stream.ClusterAuth{Prefix: "p.*", Learners: id("a", k1), Replicas: id("b", k2)}, `prefix "p.*"`},
		{stream.ClusterAuth{Replicas: id("b", k2)}, "at least one learner"},
	} {
		if _, _, err := stream.ClusterAccounts(tc.a); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.a, err, tc.want)
		}
	}
	dir := t.TempDir()
	good := stream.ClusterAuth{Cluster: "c", Prefix: "p.q", Learners: id("a", k1), Replicas: id("b", k2), Clients: []stream.ClientIdentity{{Name: "w", User: "w", Password: "pw"}}}
	b, _ := json.Marshal(good)
	for name, tc := range map[string]struct {
		body, want string
	}{
		"good":          {string(b), ""},
		"unknown field": {strings.Replace(string(b), `"learners"`, `"learner":[],"learners"`, 1), "unknown field"},
		"no learners":   {`{"replicas":[{"name":"b","nkey":"` + k2 + `"}]}`, "at least one learner"},
		"trailing":      {string(b) + "{}", ""},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		if err := os.WriteFile(p, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		a, err := stream.LoadClusterAuth(p)
		switch {
		case name == "good" && (err != nil || a.Cluster != "c" || len(a.Clients) != 1):
			t.Errorf("%s: %+v, %v", name, a, err)
		case name == "trailing" && err == nil:
			t.Errorf("%s: accepted", name)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}
