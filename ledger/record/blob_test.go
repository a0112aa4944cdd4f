package record

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"dprl/ledger"
	"dprl/stream"
)

// TestLargeEntries: on servers that accept messages of at most 64 KiB, a
// release whose snapshot and update take about 200 KiB is appended (its
// payload in chunks of the blob stream), read back whole by Entry and by a
// reader's Sync (OpenReader), and its ledger applies and verifies; small
// entries stay inline. A blob that does not match its reference (a chunk
// of another entry) is refused with ErrBlob.
func TestLargeEntries(t *testing.T) {
	servers, err := stream.StartCluster("test", 1, t.TempDir(), stream.EmbeddedOptions{Port: -1, MaxPayload: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(servers[0].Shutdown)
	js := connect(t, servers[0])
	l := openLog(t, js, 1)
	w := openStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	big := func(v uint64) ledger.Release {
		r := release(t, w, v, fmt.Sprint("user", v))
		r.Snapshot = make([]byte, 80<<10)
		for i := range r.Snapshot {
			r.Snapshot[i] = byte(i*7 + int(v))
		}
		return r
	}
	update := make([]float64, 6000)
	for i := range update {
		update[i] = float64(i)/3 + 1e-9
	}
	if _, err := w.AppendWriter("w", 1, func(e ledger.Entry) error { return l.AppendEntry(ctx, e, nil, nil) }); err != nil {
		t.Fatal(err)
	}
	for v := uint64(1); v <= 3; v++ {
		r := big(v)
		if _, err := w.ReleaseWith(r, func(e ledger.Entry) error { return l.AppendEntry(ctx, e, r.Snapshot, update) }); err != nil {
			t.Fatalf("release %d: %v", v, err)
		}
	}
	small := release(t, w, 4, "user4")
	if _, err := writeThrough(ctx, l, w, small); err != nil {
		t.Fatal(err)
	}
	blobs, err := js.Stream(ctx, "DPRL_BLOBS_test")
	if err != nil {
		t.Fatal(err)
	}
	info, err := blobs.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs < 9 { // 3 payloads of ~200 KiB in 60 KiB chunks
		t.Fatalf("%d chunks in the blob stream, want >= 9", info.State.Msgs)
	}
	for v := uint64(1); v <= 3; v++ {
		r, err := l.Entry(ctx, v+1)
		if err != nil {
			t.Fatal(err)
		}
		if want := big(v).Snapshot; string(r.Snapshot) != string(want) || len(r.Update) != len(update) || r.Update[5999] != update[5999] {
			t.Fatalf("entry %d read back: snapshot %d bytes, update %d values", v+1, len(r.Snapshot), len(r.Update))
		}
	}

	reader, err := OpenReader(ctx, js, "test")
	if err != nil {
		t.Fatal(err)
	}
	f := openStore(t)
	var got []int
	if n, err := Sync(ctx, reader, f, func(r Release) { got = append(got, len(r.Snapshot)) }); err != nil || n != 5 {
		t.Fatalf("a reader's sync: %d entries, %v", n, err)
	}
	if fmt.Sprint(got) != fmt.Sprint([]int{0, 80 << 10, 80 << 10, 80 << 10, len(small.Snapshot)}) {
		t.Fatalf("snapshots read back: %v", got)
	}
	if rep, err := f.Verify(); err != nil || !rep.OK() || rep.Releases != 4 {
		t.Fatalf("the reader's ledger: %+v %v", rep, err)
	}

	// An entry whose reference names another entry's chunks is refused.
	m, err := l.getMsg(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	var msg message
	if err := json.Unmarshal(m.Data, &msg); err != nil || msg.Blob == nil {
		t.Fatalf("entry 2 is not in the blob stream: %v", err)
	}
	m3, err := l.getMsg(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	var msg3 message
	if err := json.Unmarshal(m3.Data, &msg3); err != nil {
		t.Fatal(err)
	}
	msg.Blob.Seqs = msg3.Blob.Seqs
	forged, _ := json.Marshal(msg)
	if _, err := l.decodeMessage(ctx, 2, forged); !errors.Is(err, ErrBlob) {
		t.Fatalf("a reference to another entry's chunks: %v, want ErrBlob", err)
	}
	msg.Blob.Seqs = []uint64{1 << 40}
	forged, _ = json.Marshal(msg)
	if _, err := l.decodeMessage(ctx, 2, forged); !errors.Is(err, ErrBlob) {
		t.Fatalf("a reference to a missing chunk: %v, want ErrBlob", err)
	}
}
