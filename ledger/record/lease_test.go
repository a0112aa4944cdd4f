package record

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func openLease(t *testing.T, l *Log, holder string) *Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ls, err := OpenLease(ctx, l.js, LeaseConfig{Name: "test", Replicas: 3, TTL: time.Second, Holder: holder})
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

// TestLeaseTakeoverAndFence is the split-brain scenario on a 3-server
// cluster: A holds the lease and renews it (B cannot take it); A pauses
// past the TTL; B takes the lease and appends its takeover entry; A wakes
// up still believing it leads, and its append against the tail it read
// before the pause is refused (ErrFenced), as is its renewal (ErrLost).
// A released lease is free at once.
func TestLeaseTakeoverAndFence(t *testing.T) {
	servers := startCluster(t, 3)
	logA := openLog(t, connect(t, servers[0]), 3)
	logB := openLog(t, connect(t, servers[1]), 3)
	a, b := openLease(t, logA, "a"), openLease(t, logB, "b")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	revA, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx); !errors.Is(err, ErrHeld) {
		t.Fatalf("second candidate: %v, want ErrHeld", err)
	}
	// Renewed every 300 ms for 2.5 TTLs: the lease never frees.
	lastRenew := time.Now()
	for range 8 {
		time.Sleep(300 * time.Millisecond)
		rev, err := a.Renew(ctx)
		if err != nil {
			t.Fatalf("renew: %v", err)
		}
		if rev <= revA {
			t.Fatalf("renewal revision %d after %d", rev, revA)
		}
		revA = rev
		lastRenew = time.Now()
		if _, err := b.Acquire(ctx); !errors.Is(err, ErrHeld) {
			t.Fatalf("while renewed: %v, want ErrHeld", err)
		}
	}
	if name, _, err := b.Holder(ctx); err != nil || name != "a" {
		t.Fatalf("holder %q, %v", name, err)
	}
	// A writes at position 1, then reads the tail and pauses.
	if _, err := logA.Append(ctx, 0, "a-1", []byte("a release")); err != nil {
		t.Fatal(err)
	}
	tailA, err := logA.Last(ctx)
	if err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	var took time.Duration
	for {
		if _, err := b.Acquire(ctx); err == nil {
			took = time.Since(lastRenew)
			break
		} else if !errors.Is(err, ErrHeld) {
			t.Fatal(err)
		}
		if time.Since(paused) > 10*time.Second { // a TTL is 1 s
			t.Fatal("the lease never expired")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if took < 900*time.Millisecond {
		t.Fatalf("taken %v after the last renewal, before the 1 s TTL", took)
	}
	t.Logf("takeover %v after the holder's last renewal (TTL 1 s)", took)
	tailB, err := logB.Last(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := logB.Append(ctx, tailB, "b-takeover", []byte("takeover")); err != nil {
		t.Fatal(err)
	}
	// A resumes.
	if _, err := logA.Append(ctx, tailA, "a-2", []byte("a stale release")); !errors.Is(err, ErrFenced) {
		t.Fatalf("stale holder's append: %v, want ErrFenced", err)
	}
	if _, err := a.Renew(ctx); !errors.Is(err, ErrLost) {
		t.Fatalf("stale holder's renewal: %v, want ErrLost", err)
	}
	// B releases; A takes it at once.
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatalf("after release: %v", err)
	}
}

// TestLeaseConfigRefused: bad names, TTLs and holders are refused.
func TestLeaseConfigRefused(t *testing.T) {
	for _, c := range []LeaseConfig{
		{Name: "x", Replicas: 1, TTL: 500 * time.Millisecond, Holder: "h"},
		{Name: "x", Replicas: 1, TTL: 1500 * time.Millisecond, Holder: "h"},
		{Name: "x", Replicas: 1, TTL: time.Second},
		{Name: "x y", Replicas: 1, TTL: time.Second, Holder: "h"},
		{Name: "x", Replicas: 0, TTL: time.Second, Holder: "h"},
	} {
		if _, err := OpenLease(context.Background(), nil, c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// TestLeaseKeys: leases on keys of another bucket (a replica's
// partitions and its membership) are exclusive per key, counted while
// held, and no longer counted once expired or released.
func TestLeaseKeys(t *testing.T) {
	servers := startCluster(t, 1)
	l := openLog(t, connect(t, servers[0]), 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	open := func(holder string) *Lease {
		ls, err := OpenLease(ctx, l.js, LeaseConfig{Name: "test", Replicas: 1, TTL: time.Second, Holder: holder, Bucket: "DPRL_PARTS_test", Key: "m.a"})
		if err != nil {
			t.Fatal(err)
		}
		return ls
	}
	a, b := open("a"), open("b")
	if n, err := a.Count(ctx, "m"); err != nil || n != 0 {
		t.Fatalf("count of an empty bucket: %d, %v", n, err)
	}
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	mb, err := b.For("m.b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mb.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	pa, _ := a.For("p.3")
	pb, _ := b.For("p.3")
	if _, err := pa.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pb.Acquire(ctx); !errors.Is(err, ErrHeld) {
		t.Fatalf("p.3 taken twice: %v", err)
	}
	if n, err := a.Count(ctx, "m"); err != nil || n != 2 {
		t.Fatalf("members: %d, %v; want 2", n, err)
	}
	if n, err := a.Count(ctx, "p"); err != nil || n != 1 {
		t.Fatalf("partitions: %d, %v; want 1", n, err)
	}
	if err := mb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := a.Count(ctx, "m"); n != 1 {
		t.Fatalf("members after a release: %d, want 1", n)
	}
	time.Sleep(2500 * time.Millisecond) // a and p.3 expire unrenewed
	if n, _ := a.Count(ctx, "m"); n != 0 {
		t.Fatalf("members after expiry: %d, want 0", n)
	}
	if _, err := pb.Acquire(ctx); err != nil {
		t.Fatalf("p.3 after expiry: %v", err)
	}
	if _, err := a.For("bad key"); err == nil {
		t.Error("a key with a space accepted")
	}
}

// TestLeaseOwnWriteAndStaleKey: a renewal whose answer was lost (the key
// moved on with this lease's own token) is adopted, not taken for a lost
// lease; and a key that outlived twice its TTL (one written without a
// TTL here, as a restarted server may keep an expired one) is taken over.
func TestLeaseOwnWriteAndStaleKey(t *testing.T) {
	servers := startCluster(t, 1)
	l := openLog(t, connect(t, servers[0]), 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := OpenLease(ctx, l.js, LeaseConfig{Name: "own", Replicas: 1, TTL: time.Second, Holder: "a"})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A renewal that landed but whose answer was lost.
	m := &nats.Msg{Subject: a.subject, Data: []byte(a.token)}
	ack, err := l.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.Renew(ctx); err != nil || got <= ack.Sequence {
		t.Fatalf("renew after a lost answer: %d, %v; want a revision after %d", got, err, ack.Sequence)
	}
	if h, _, err := a.Holder(ctx); err != nil || h != "a" {
		t.Fatalf("holder %q, %v", h, err)
	}
	// A stale key with no TTL.
	b, _ := a.For("stale")
	c, _ := a.For("stale")
	if _, err := b.kv.Put(ctx, "stale", []byte("gone\nx")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx); !errors.Is(err, ErrHeld) {
		t.Fatalf("a fresh key taken over: %v", err)
	}
	if _, err := b.kv.Put(ctx, "m.old", []byte("gone\nx")); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Count(ctx, "m"); err != nil || n != 1 {
		t.Fatalf("members with a fresh key: %d, %v; want 1", n, err)
	}
	time.Sleep(2100 * time.Millisecond)
	if n, err := c.Count(ctx, "m"); err != nil || n != 0 {
		t.Fatalf("members with a key twice its TTL old: %d, %v; want 0", n, err)
	}
	if _, err := c.Acquire(ctx); err != nil {
		t.Fatalf("a key twice its TTL old: %v, want it taken over", err)
	}
	if h, _, _ := c.Holder(ctx); h != "a" {
		t.Fatalf("holder after the takeover: %q", h)
	}
}
