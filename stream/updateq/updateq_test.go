package updateq

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dprl/stream"
)

func TestRoundTrip(t *testing.T) {
	user := [32]byte{1, 2, 3, 31: 9}
	for _, u := range []Update{
		{Session: "s1", HasUser: true, User: user, Version: 7, Values: []float64{1, -2.5, 0}},
		{Session: "anon", Version: 1 << 40, Values: []float64{math.NaN(), math.Inf(1), math.Inf(-1), -0.0}},
		{Session: strings.Repeat("é", 512), HasUser: true, Values: []float64{math.MaxFloat64}},
	} {
		b := u.AppendBinary(nil)
		var got Update
		if err := Decode(b, &got, 4); err != nil {
			t.Fatalf("%q: %v", u.Session, err)
		}
		if got.Session != u.Session || got.HasUser != u.HasUser || got.User != u.User || got.Version != u.Version || len(got.Values) != len(u.Values) {
			t.Fatalf("got %+v, want %+v", got, u)
		}
		for i, v := range u.Values {
			if math.Float64bits(got.Values[i]) != math.Float64bits(v) {
				t.Fatalf("value %d: %v, want %v", i, got.Values[i], v)
			}
		}
		if !bytes.Equal(got.AppendBinary(nil), b) {
			t.Fatal("re-encoding differs")
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	good := (&Update{Session: "s", HasUser: true, User: [32]byte{1}, Version: 1, Values: []float64{1, 2}}).AppendBinary(nil)
	anonKey := (&Update{Session: "s", User: [32]byte{1}, Values: []float64{1}}).AppendBinary(nil)
	badFlag := bytes.Clone(good)
	badFlag[12] = 2
	ctl := (&Update{Session: "a\x01b", Values: []float64{1}}).AppendBinary(nil)
	empty := (&Update{Session: "", Values: []float64{1}}).AppendBinary(nil)
	none := (&Update{Session: "s"}).AppendBinary(nil)
	for name, b := range map[string][]byte{
		"empty":          nil,
		"magic":          append([]byte("DPU2"), good[4:]...),
		"truncated":      good[:len(good)-1],
		"trailing":       append(bytes.Clone(good), 0),
		"header only":    good[:headerLen],
		"flag":           badFlag,
		"anonymous key":  anonKey,
		"control char":   ctl,
		"empty session":  empty,
		"no values":      none,
		"too many":       (&Update{Session: "s", Values: make([]float64, 3)}).AppendBinary(nil),
		"not UTF-8":      (&Update{Session: "\xff", Values: []float64{1}}).AppendBinary(nil),
		"session length": append(append(bytes.Clone(good[:45]), 0xff, 0xff), good[47:]...),
	} {
		var u Update
		if err := Decode(b, &u, 2); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
}

// TestDecodeAllocs: in steady state Decode allocates only the session id.
func TestDecodeAllocs(t *testing.T) {
	b := (&Update{Session: "s1", HasUser: true, Version: 3, Values: make([]float64, 1000)}).AppendBinary(nil)
	var u Update
	if err := Decode(b, &u, 1000); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = Decode(b, &u, 1000) }); n > 1 {
		t.Fatalf("%v allocations per decode, want 1 (the session id)", n)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add((&Update{Session: "s", HasUser: true, Values: []float64{1}}).AppendBinary(nil))
	f.Add((&Update{Session: "anon", Values: []float64{math.NaN(), 2}}).AppendBinary(nil))
	f.Add([]byte("DPU1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var u Update
		if err := Decode(b, &u, 64); err != nil {
			return
		}
		if err := u.Check(64); err != nil {
			t.Fatalf("decoded an update Check refuses: %v", err)
		}
		if !bytes.Equal(u.AppendBinary(nil), b) {
			t.Fatal("accepted bytes that do not re-encode identically")
		}
	})
}

// TestQueueOnCluster: on a 3-server cluster, a session published twice is
// queued once; an unacknowledged update is redelivered after the ack
// wait, an acknowledged one never; a malformed message is removed and
// reported.
func TestQueueOnCluster(t *testing.T) {
	servers, err := stream.StartCluster("q", 3, t.TempDir(), stream.EmbeddedOptions{Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		t.Cleanup(s.Shutdown)
	}
	js := func(i int) jetstream.JetStream {
		nc, err := nats.Connect(servers[i].ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		j, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := Config{Name: "m", Replicas: 3, MaxValues: 8}
	replica, err := Open(ctx, js(0), cfg)
	if err != nil {
		t.Fatal(err)
	}
	learnerQ, err := Open(ctx, js(2), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"a", "b", "a", "c"} {
		if err := replica.Publish(ctx, &Update{Session: s, HasUser: true, User: [32]byte{s[0]}, Version: 1, Values: []float64{1, 2}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := replica.Publish(ctx, &Update{Session: "big", Values: make([]float64, 9)}); err == nil {
		t.Fatal("an update over MaxValues was published")
	}
	// A malformed message from elsewhere on the subject.
	if _, err := js(1).Publish(ctx, "dprl.updates.m", []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	c, err := learnerQ.Consumer(ctx, "learner", 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	msgs, bad, err := c.Fetch(10, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 3 || len(bad) != 1 {
		t.Fatalf("%d updates and %d malformed, want 3 and 1", len(msgs), len(bad))
	}
	for _, m := range msgs {
		if m.Update.Session != "c" {
			if err := m.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(2500 * time.Millisecond) // past the 3 s ack wait with the fetch's 1 s
	again, bad, err := c.Fetch(10, time.Second)
	if err != nil || len(bad) != 0 {
		t.Fatal(err, bad)
	}
	if len(again) != 1 || again[0].Update.Session != "c" {
		t.Fatalf("redelivered %d updates, want only c's", len(again))
	}
	if err := again[0].Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if rest, _, err := c.Fetch(10, 500*time.Millisecond); err != nil || len(rest) != 0 {
		t.Fatalf("after every ack: %d, %v", len(rest), err)
	}
}

// TestPublisher: a publisher's queue asks the server nothing (a replica
// may only publish): it has no consumer, and its updates reach the
// learner's once a learner has opened the queue.
func TestPublisher(t *testing.T) {
	s, err := stream.StartEmbedded(stream.EmbeddedOptions{Port: -1, JetStream: &stream.JetStreamOptions{StoreDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := Config{Name: "m", Replicas: 1, MaxValues: 2}
	if _, err := OpenPublisher(js, Config{Name: "a.b", MaxValues: 2}); err == nil {
		t.Error("name a.b accepted")
	}
	p, err := OpenPublisher(js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Consumer(ctx, "learner", time.Second); err == nil {
		t.Error("a publisher's queue gave a consumer")
	}
	if _, err := js.Stream(ctx, "DPRL_UPDATES_m"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("the publisher created the stream: %v", err)
	}
	q, err := Open(ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(ctx, &Update{Session: "s", Version: 1, Values: []float64{1, 2}}); err != nil {
		t.Fatal(err)
	}
	c, err := q.Consumer(ctx, "learner", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _, err := c.Fetch(1, time.Second)
	if err != nil || len(msgs) != 1 || msgs[0].Update.Session != "s" {
		t.Fatalf("fetched %d, %v", len(msgs), err)
	}
}
