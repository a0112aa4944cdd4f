package service

import (
	"context"
	"strings"
	"testing"

	"dprl/stream"
)

// TestProbePartitions: a replica refuses servers that do not partition
// the session subjects, or partition them into another count.
func TestProbePartitions(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		server, replica int
		want            string
	}{
		{8, 8, ""},
		{8, 16, "otherwise than --partitions 16"},
		{0, 16, "do not partition"},
	} {
		ns, err := stream.StartEmbedded(stream.EmbeddedOptions{Port: -1, Partitions: tc.server})
		if err != nil {
			t.Fatal(err)
		}
		nc, err := stream.Connect(ns.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		err = probePartitions(ctx, nc, "", tc.replica)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("server %d, replica %d: %v, want %q", tc.server, tc.replica, err, tc.want)
		}
		nc.Close()
		ns.Shutdown()
	}
}
