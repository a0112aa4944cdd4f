package record

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dprl/stream"
)

// BenchmarkAppend measures one writer's appends to the ledger of record,
// each waiting for its acknowledgement, with messages the size of a
// release of K = 32 users and a small policy (16 KiB): on one server and
// on three (R3), with nats-server's default sync and with an fsync on
// every write. Compare the cases with each other (same run), not across
// machines: the learner's sustained releases/s is at most 1/(ns/op).
func BenchmarkAppend(b *testing.B) {
	for _, c := range []struct {
		servers, replicas int
		sync              bool
	}{{1, 1, false}, {3, 3, false}, {3, 3, true}} {
		b.Run(fmt.Sprintf("R%d/sync=%v", c.replicas, c.sync), func(b *testing.B) {
			servers, err := stream.StartCluster("bench", c.servers, b.TempDir(), stream.EmbeddedOptions{Port: -1, JetStream: &stream.JetStreamOptions{SyncAlways: c.sync}})
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				for _, s := range servers {
					s.Shutdown()
				}
			}()
			nc, err := nats.Connect(servers[0].ClientURL())
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			l, err := Open(ctx, js, Config{Name: "bench", Replicas: c.replicas})
			if err != nil {
				b.Fatal(err)
			}
			data := make([]byte, 16<<10)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := l.Append(ctx, uint64(i), fmt.Sprint(i), data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
