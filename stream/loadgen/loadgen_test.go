package loadgen

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"dprl/stream"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// startServer runs an embedded NATS server on a loopback port.
func startServer(t *testing.T) *server.Server {
	t.Helper()
	s, err := stream.StartEmbedded(stream.EmbeddedOptions{Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

func connect(t *testing.T, s *server.Server) *nats.Conn {
	t.Helper()
	nc, err := stream.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// TestSideAgainstEcho drives a side against a real echo responder: every
// request is answered, sessions run 100 acts then an end with valid wire
// bodies, and the counts agree.
func TestSideAgainstEcho(t *testing.T) {
	s := startServer(t)
	if _, err := Echo(connect(t, s), "t.echo"); err != nil {
		t.Fatal(err)
	}
	// Watch what the side sends: acts and ends of whole sessions.
	spy := connect(t, s)
	var acts, ends int
	var bad []string
	msgs := make(chan *nats.Msg, 1<<16)
	if _, err := spy.ChanSubscribe("t.*", msgs); err != nil {
		t.Fatal(err)
	}
	spy.Flush()
	nc := connect(t, s)
	side := NewSide(3)
	subj := Subjects{Act: "t.echo", End: "t.end"}
	if _, err := Echo(connect(t, s), "t.end"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := side.Run(context.Background(), nc, subj, 150*time.Millisecond, true); err != nil {
			t.Fatal(err)
		}
	}
	n := side.Requests()
	if n == 0 || len(side.Latencies()) != n || !(side.RPS() > 0) {
		t.Fatalf("requests %d, latencies %d, rps %v", n, len(side.Latencies()), side.RPS())
	}
	spy.Flush()
	deadline := time.After(5 * time.Second)
	for got := 0; got < n; got++ {
		select {
		case m := <-msgs:
			switch m.Subject {
			case "t.echo":
				acts++
				if _, err := stream.DecodeAct(m.Data, stream.Limits{}, 4); err != nil {
					bad = append(bad, err.Error())
				}
			case "t.end":
				ends++
				if e, err := stream.DecodeEnd(m.Data, stream.Limits{}); err != nil || !e.Terminal {
					bad = append(bad, fmt.Sprintf("%s: %v", m.Data, err))
				}
			}
		case <-deadline:
			t.Fatalf("saw %d of %d requests", got, n)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("bad bodies: %v", bad[:min(3, len(bad))])
	}
	// Each worker ends a session after every 100 acts.
	if ends > acts/SessionSteps || ends < acts/SessionSteps-3 {
		t.Errorf("%d acts and %d ends, want one end per %d acts per worker", acts, ends, SessionSteps)
	}
}

// TestSideCheck: with check, an error body fails the run; without, it is
// a reply like any other.
func TestSideCheck(t *testing.T) {
	s := startServer(t)
	rc := connect(t, s)
	if _, err := rc.Subscribe("t.err", func(m *nats.Msg) { m.Respond([]byte(`{"error":{"code":"bad_request"}}`)) }); err != nil {
		t.Fatal(err)
	}
	rc.Flush()
	nc := connect(t, s)
	subj := Subjects{Act: "t.err", End: "t.err"}
	if err := NewSide(2).Run(context.Background(), nc, subj, 100*time.Millisecond, true); err == nil || !strings.Contains(err.Error(), "error reply") {
		t.Errorf("checked: %v, want an error reply", err)
	}
	if err := NewSide(2).Run(context.Background(), nc, subj, 100*time.Millisecond, false); err != nil {
		t.Errorf("unchecked: %v", err)
	}
	// No responder at all: the request fails at once.
	if err := NewSide(1).Run(context.Background(), nc, Subjects{Act: "t.none", End: "t.none"}, time.Second, false); err == nil {
		t.Error("no responder: no error")
	}
}

// TestCompare runs a brief comparison where the "agent" is an echo
// responder on the agent's subjects: both sides answer, and the ratios are
// those of the measured values.
func TestCompare(t *testing.T) {
	s := startServer(t)
	ec := connect(t, s)
	for _, subj := range []string{"x.v1.act", "x.v1.end"} {
		if _, err := Echo(ec, subj); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Compare(context.Background(), Config{URL: s.ClientURL(), Prefix: "x", Concurrency: 2, Duration: 200 * time.Millisecond, Rounds: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !(r.AgentRPS > 0 && r.EchoRPS > 0 && r.AgentP99Ms > 0 && r.EchoP99Ms > 0) || r.RPSRatio != r.AgentRPS/r.EchoRPS ||
		r.P99Ratio != r.AgentP99Ms/r.EchoP99Ms || r.Seconds != 0.2 || r.Concurrency != 2 || r.Each != 200*time.Millisecond {
		t.Errorf("result %+v", r)
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil || !strings.HasSuffix(b.String(), "(concurrency 2, 200ms each)\n") {
		t.Errorf("text %q %v", b.String(), err)
	}
	for _, c := range []Config{
		{URL: s.ClientURL(), Prefix: "x", Concurrency: 0, Duration: time.Second, Rounds: 1},
		{URL: s.ClientURL(), Prefix: "x", Concurrency: 1, Duration: 0, Rounds: 1},
		{URL: s.ClientURL(), Prefix: "x", Concurrency: 1, Duration: time.Second, Rounds: 0},
		{URL: s.ClientURL(), Prefix: "", Concurrency: 1, Duration: time.Second, Rounds: 1},
	} {
		if _, err := Compare(context.Background(), c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

func TestResultWriteText(t *testing.T) {
	r := Result{Concurrency: 16, Seconds: 5, AgentRPS: 12345.6, EchoRPS: 23456.7, AgentP50Ms: 0.1234, AgentP99Ms: 1.5, EchoP50Ms: 0.05, EchoP99Ms: 0.75,
		RPSRatio: 0.526, P99Ratio: 2, Each: 5 * time.Second}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	const want = "agent 12346 req/s (p50 0.123 ms, p99 1.500 ms); echo 23457 req/s (p50 0.050 ms, p99 0.750 ms); throughput ratio 0.53, p99 ratio 2.00 (concurrency 16, 5s each)\n"
	if b.String() != want {
		t.Errorf("got  %q\nwant %q", b.String(), want)
	}
}

func TestQuantiles(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		var d []time.Duration
		for _, x := range xs {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	for _, c := range []struct {
		d    []time.Duration
		qs   []float64
		want []float64
	}{
		{nil, []float64{0.5, 0.99}, []float64{0, 0}},
		{ms(3), []float64{0, 0.5, 1}, []float64{3, 3, 3}},
		{ms(4, 1, 3, 2), []float64{0, 0.5, 0.99}, []float64{1, 3, 4}},
		{ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), []float64{0.5, 0.9}, []float64{6, 10}},
	} {
		got := Quantiles(c.d, c.qs...)
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("Quantiles(%v, %v) = %v, want %v", c.d, c.qs, got, c.want)
				break
			}
		}
	}
}
