package stream

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"dprl/sims"
)

var benchAct = []byte(`{"session":"session-0001","user":"user-0001","obs":[0.0123,-1.25,3.5,0.75,-0.002,1e-3,2.5,-3.25],"reward":0.5}`)

func BenchmarkDecodeAct(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchAct)))
	for b.Loop() {
		if _, err := DecodeAct(benchAct, Limits{}, 8); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeActInto reuses the request: only the two id strings are
// allocated.
func BenchmarkDecodeActInto(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchAct)))
	var r ActRequest
	for b.Loop() {
		if err := DecodeActInto(&r, benchAct, Limits{}, 8); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeActReply(b *testing.B) {
	for _, bc := range []struct {
		name string
		r    ActReply
	}{
		{"discrete", ActReply{Action: sims.Action{Index: 3}, Version: 17, Step: 42}},
		{"continuous4", ActReply{Action: sims.Action{Vec: []float64{0.125, -1.5, 0.3333333333333333, 2}}, Version: 17, Step: 42}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 256)
			for b.Loop() {
				var err error
				if buf, err = AppendActReply(buf[:0], bc.r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestHotPathAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under -race")
	}
	var r ActRequest
	DecodeActInto(&r, benchAct, Limits{}, 8)
	if n := testing.AllocsPerRun(100, func() { DecodeActInto(&r, benchAct, Limits{}, 8) }); n > 2 {
		t.Errorf("DecodeActInto: %v allocs, want <= 2 (the id strings)", n)
	}
	buf := make([]byte, 0, 256)
	rep := ActReply{Action: sims.Action{Vec: []float64{0.125, -1.5}}, Version: 17, Step: 42}
	if n := testing.AllocsPerRun(100, func() { buf, _ = AppendActReply(buf[:0], rep) }); n != 0 {
		t.Errorf("AppendActReply: %v allocs, want 0", n)
	}
}

type constHandler struct{}

func (constHandler) Act(context.Context, ActRequest) (ActReply, error) {
	return ActReply{Action: sims.Action{Index: 1}, Version: 17, Step: 3}, nil
}
func (constHandler) End(context.Context, EndRequest) (EndReply, error) {
	return EndReply{OK: true, Used: true}, nil
}

// BenchmarkRoundTrip compares one act round trip through Serve + Client
// with a bare NATS echo responder on the same embedded server, same run.
func BenchmarkRoundTrip(b *testing.B) {
	s := runServer(b, 0)
	srvConn := connect(b, s)
	if _, err := Serve(context.Background(), srvConn, constHandler{}, ServerConfig{ObsDim: 8}); err != nil {
		b.Fatal(err)
	}
	reply := []byte(`{"action":1,"version":17,"step":3}`)
	if _, err := srvConn.Subscribe("echo", func(m *nats.Msg) { m.Respond(reply) }); err != nil {
		b.Fatal(err)
	}
	srvConn.Flush()
	nc := connect(b, s)
	obs := []float64{0.0123, -1.25, 3.5, 0.75, -0.002, 1e-3, 2.5, -3.25}
	b.Run("echo", func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		for b.Loop() {
			if _, err := nc.Request("echo", benchAct, 5*time.Second); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	})
	b.Run("stream", func(b *testing.B) {
		c, _ := NewClient(nc)
		ctx := context.Background()
		b.ReportAllocs()
		start := time.Now()
		for b.Loop() {
			if _, err := c.Act(ctx, "session-0001", "user-0001", obs, 0.5, false); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	})
}
