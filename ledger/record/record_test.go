package record

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dprl/stream"
)

// startCluster starts n embedded servers with JetStream in one cluster on
// loopback; they stop at the end of the test.
func startCluster(t *testing.T, n int) []*server.Server {
	t.Helper()
	servers, err := stream.StartCluster("test", n, t.TempDir(), stream.EmbeddedOptions{Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		t.Cleanup(s.Shutdown)
	}
	return servers
}

// connect returns a JetStream context on a connection to s.
func connect(t *testing.T, s *server.Server) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func openLog(t *testing.T, js jetstream.JetStream, replicas int) *Log {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := Open(ctx, js, Config{Name: "test", Replicas: replicas})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestAppendFence: on an R3 stream, two writers appending at the same
// positions get exactly one entry per position; the loser is told
// ErrFenced; a retry of a landed append returns its position without a
// second copy; and the log reads back in order with every id once.
func TestAppendFence(t *testing.T) {
	servers := startCluster(t, 3)
	a := openLog(t, connect(t, servers[0]), 3)
	b := openLog(t, connect(t, servers[2]), 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	pos, err := a.Append(ctx, 0, "a-1", []byte("first"))
	if err != nil || pos != 1 {
		t.Fatalf("first append: %d, %v", pos, err)
	}
	// A retry of the same append (same id, same position) is the same entry.
	if pos, err := a.Append(ctx, 0, "a-1", []byte("first")); err != nil || pos != 1 {
		t.Fatalf("retried append: %d, %v", pos, err)
	}
	// b's view is stale: it writes at position 1 too.
	if _, err := b.Append(ctx, 0, "b-1", []byte("other")); !errors.Is(err, ErrFenced) {
		t.Fatalf("stale writer: %v, want ErrFenced", err)
	}

	// Two writers racing over 200 positions, each re-reading the tail
	// after a refusal: every position is taken once.
	const n = 200
	var wg sync.WaitGroup
	won := make([]map[uint64]string, 2)
	for w, l := range []*Log{a, b} {
		won[w] = map[uint64]string{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				last, err := l.Last(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if last >= n {
					return
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				p, err := l.Append(ctx, last, id, []byte(id))
				switch {
				case errors.Is(err, ErrFenced):
				case err != nil:
					t.Error(err)
					return
				default:
					won[w][p] = id
				}
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	next := uint64(1)
	err = a.Read(ctx, 1, func(e Entry) error {
		if e.Position != next {
			return fmt.Errorf("position %d, want %d", e.Position, next)
		}
		next++
		if seen[e.ID] {
			return fmt.Errorf("id %s twice", e.ID)
		}
		seen[e.ID] = true
		if string(e.Data) != e.ID && e.Position > 1 {
			return fmt.Errorf("position %d holds %q under id %s", e.Position, e.Data, e.ID)
		}
		for w := range won {
			if id, ok := won[w][e.Position]; ok && id != e.ID {
				return fmt.Errorf("writer %d was told it holds position %d with %s; the log has %s", w, e.Position, id, e.ID)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if next-1 < n {
		t.Fatalf("%d entries read, want >= %d", next-1, n)
	}
	if len(won[0]) == 0 || len(won[1]) == 0 {
		t.Logf("one writer won every position (%d, %d): the race was not exercised", len(won[0]), len(won[1]))
	}
}

// TestAppendSurvivesServerLoss: with one of three servers shut down, an
// R3 log keeps its entries and accepts appends (a majority remains).
func TestAppendSurvivesServerLoss(t *testing.T) {
	servers := startCluster(t, 3)
	l := openLog(t, connect(t, servers[0]), 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 10 {
		if _, err := l.Append(ctx, uint64(i), fmt.Sprint(i), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	servers[1].Shutdown()
	for i := 10; i < 20; i++ {
		if _, err := l.Append(ctx, uint64(i), fmt.Sprint(i), []byte{byte(i)}); err != nil {
			t.Fatalf("append %d with a server down: %v", i, err)
		}
	}
	count := 0
	if err := l.Read(ctx, 1, func(e Entry) error {
		if e.Data[0] != byte(e.Position-1) {
			return fmt.Errorf("position %d holds %v", e.Position, e.Data)
		}
		count++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if count != 20 {
		t.Fatalf("%d entries, want 20", count)
	}
}

// TestOpenRefuses: bad names and replica counts are refused before any
// request.
func TestOpenRefuses(t *testing.T) {
	for _, c := range []Config{{Name: "", Replicas: 1}, {Name: "a.b", Replicas: 1}, {Name: "a", Replicas: 0}, {Name: "a", Replicas: 6}, {Name: "a", Replicas: 1, DuplicateWindow: -1}} {
		if _, err := Open(context.Background(), nil, c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// TestOpenReader: a reader binds without creating the stream (a replica
// may not): before any writer opened the ledger it reads as empty and
// leaves no stream behind; once a writer appended, the same reader reads
// the entries.
func TestOpenReader(t *testing.T) {
	s := startCluster(t, 1)[0]
	js := connect(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := OpenReader(ctx, js, "a.b"); err == nil {
		t.Error("name a.b accepted")
	}
	r, err := OpenReader(ctx, js, "test")
	if err != nil {
		t.Fatal(err)
	}
	if last, err := r.Last(ctx); err != nil || last != 0 {
		t.Fatalf("before the writer: last %d, %v", last, err)
	}
	if err := r.Read(ctx, 1, func(Entry) error { return errors.New("an entry") }); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Stream(ctx, "DPRL_LEDGER_test"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("the reader created the stream: %v", err)
	}
	w := openLog(t, js, 1)
	if _, err := w.Append(ctx, 0, "e1", []byte("one")); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := r.Read(ctx, 1, func(e Entry) error { got = append(got, e.ID+"="+string(e.Data)); return nil }); err != nil || len(got) != 1 || got[0] != "e1=one" {
		t.Fatalf("after the writer: %q, %v", got, err)
	}
}

// TestOpenReaderFollowsSoon: a reader polling a three-server cluster from
// its start, before any writer created the stream, sees the first entry
// within 1.5 s of its append: a request lost while the cluster elects its
// leaders or creates the stream is retried after at most 500 ms, not
// after the 2 s of a request (a replica started with its learner would
// otherwise serve its initial policy, setting sessions aside, that long).
func TestOpenReaderFollowsSoon(t *testing.T) {
	servers := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := connect(t, servers[1])
	seen := make(chan time.Time, 1)
	go func() {
		r, err := OpenReader(ctx, js, "test")
		if err != nil {
			t.Error(err)
			return
		}
		for ctx.Err() == nil {
			if last, err := r.Last(ctx); err == nil && last > 0 {
				seen <- time.Now()
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	w := openLog(t, connect(t, servers[0]), 3)
	if _, err := w.Append(ctx, 0, "e1", []byte("one")); err != nil {
		t.Fatal(err)
	}
	appended := time.Now()
	select {
	case at := <-seen:
		if lag := at.Sub(appended); lag > 1500*time.Millisecond {
			t.Errorf("the reader saw the first entry %v after its append", lag)
		}
	case <-ctx.Done():
		t.Fatal("the reader never saw the first entry")
	}
}
