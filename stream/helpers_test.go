package stream

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"dprl/sims"
)

// runServer starts an embedded server on a random loopback port and stops it
// at cleanup.
func runServer(tb testing.TB, maxPayload int32) *server.Server {
	tb.Helper()
	s, err := StartEmbedded(EmbeddedOptions{Port: -1, MaxPayload: maxPayload})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Shutdown)
	return s
}

func connect(tb testing.TB, s *server.Server) *nats.Conn {
	tb.Helper()
	nc, err := Connect(s.ClientURL(), WithName(tb.Name()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

// testHandler answers act with action = len(session) (discrete) or the
// observation itself (continuous, when the session starts with "c"); it
// can panic, fail or block on request.
type testHandler struct {
	mu      sync.Mutex
	ends    []EndRequest
	acts    atomic.Int64
	block   chan struct{} // when non-nil, act waits on it
	entered atomic.Int64
}

func (h *testHandler) Act(ctx context.Context, r ActRequest) (ActReply, error) {
	h.acts.Add(1)
	switch r.Session {
	case "panic":
		panic("test panic")
	case "fail":
		return ActReply{}, fmt.Errorf("disk on fire at /secret/path")
	case "limit":
		return ActReply{}, Errorf(CodeStepLimit, "session %s at 100 steps", r.Session)
	case "block":
		h.entered.Add(1)
		<-h.block
	case "nan":
		return ActReply{Action: sims.Action{Vec: []float64{0, nan()}}}, nil
	}
	step := 0
	if r.Reward != nil {
		step = int(*r.Reward)
	}
	if r.Session[0] == 'c' {
		return ActReply{Action: sims.Action{Vec: r.Obs}, Version: 7, Step: step}, nil
	}
	return ActReply{Action: sims.Action{Index: len(r.Session)}, Version: 7, Step: step}, nil
}

func (h *testHandler) End(ctx context.Context, r EndRequest) (EndReply, error) {
	if r.Session == "panic" {
		panic("end panic")
	}
	h.mu.Lock()
	h.ends = append(h.ends, r)
	h.mu.Unlock()
	if !r.Terminal {
		return EndReply{OK: true, Used: false, Reason: "truncated"}, nil
	}
	return EndReply{OK: true, Used: true}, nil
}
