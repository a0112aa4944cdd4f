package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"dprl/internal/testutil"
	"dprl/sims"
)

func nan() float64 { return math.NaN() }

func serve(t *testing.T, h Handler, lim Limits) (*nats.Conn, *Server) {
	t.Helper()
	s := runServer(t, 0)
	nc := connect(t, s)
	srv, err := Serve(context.Background(), nc, h, ServerConfig{ObsDim: 3, Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	return connect(t, s), srv
}

func TestRoundTrip(t *testing.T) {
	h := &testHandler{}
	nc, _ := serve(t, h, Limits{})
	c, err := NewClient(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := c.Act(ctx, "abcd", "u1", []float64{1, 2, 3}, 0, true)
	if err != nil || a.Index != 4 || a.Vec != nil {
		t.Fatalf("act: %+v %v", a, err)
	}
	a, err = c.Act(ctx, "cont", "u1", []float64{1, 2.5, -3}, 5, false)
	if err != nil || len(a.Vec) != 3 || a.Vec[1] != 2.5 {
		t.Fatalf("continuous act: %+v %v", a, err)
	}
	if err := c.End(ctx, "abcd", 1.5, true); err != nil {
		t.Fatal(err)
	}
	rep, err := c.EndDetail(ctx, "cont", -1, false)
	if err != nil || !rep.OK || rep.Used || rep.Reason != "truncated" {
		t.Fatalf("end: %+v %v", rep, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// The server tells the handler which connection sent the request: the
	// client's inbox prefix.
	origin := ReplyOrigin(nc.NewRespInbox())
	if len(h.ends) != 2 || h.ends[0] != (EndRequest{Session: "abcd", Reward: 1.5, Terminal: true, Origin: origin}) || !strings.HasPrefix(origin, "_INBOX.") {
		t.Fatalf("ends %+v, want origin %q", h.ends, origin)
	}
}

func TestFirstStepSendsNoReward(t *testing.T) {
	s := runServer(t, 0)
	nc := connect(t, s)
	got := make(chan []byte, 2)
	sub, err := nc.Subscribe("dprl.v1.act.>", func(m *nats.Msg) {
		got <- append([]byte(nil), m.Data...)
		m.Respond([]byte(`{"action":0,"version":1,"step":0}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil { // the server knows the subscription before the request
		t.Fatal(err)
	}
	c, _ := NewClient(connect(t, s))
	if _, err := c.Act(context.Background(), "s", "u", []float64{1}, 9, true); err != nil {
		t.Fatal(err)
	}
	if b := <-got; strings.Contains(string(b), "reward") {
		t.Fatalf("first step sent a reward: %s", b)
	}
	if _, err := c.Act(context.Background(), "s", "u", []float64{1}, 9, false); err != nil {
		t.Fatal(err)
	}
	if b := <-got; !strings.Contains(string(b), `"reward":9`) {
		t.Fatalf("reward missing: %s", b)
	}
}

func TestBadInputOverTheWire(t *testing.T) {
	h := &testHandler{}
	nc, _ := serve(t, h, Limits{MaxMessageBytes: 1024})
	tests := []struct {
		name, subj, body string
		want             *Error
	}{
		{"not json", "act", `not json`, ErrBadRequest},
		{"unknown field", "act", `{"session":"s","user":"u","obs":[1,2,3],"extra":true}`, ErrUnknownField},
		{"wrong type", "act", `{"session":"s","user":"u","obs":[1,2,"3"]}`, ErrWrongType},
		{"obs length", "act", `{"session":"s","user":"u","obs":[1,2]}`, ErrObsDim},
		{"huge number", "act", `{"session":"s","user":"u","obs":[1,2,1e400]}`, ErrNonFinite},
		{"oversized", "act", `{"session":"s","user":"u","obs":[1,2,3],"reward":0.` + strings.Repeat("1", 2000) + `}`, ErrTooLarge},
		{"empty session", "act", `{"session":"","user":"u","obs":[1,2,3]}`, ErrBadID},
		{"empty user", "act", `{"session":"s","user":"","obs":[1,2,3]}`, ErrBadID},
		{"empty body", "act", ``, ErrBadRequest},
		{"handler code", "act", `{"session":"limit","user":"u","obs":[1,2,3]}`, ErrStepLimit},
		{"handler error", "act", `{"session":"fail","user":"u","obs":[1,2,3]}`, ErrInternal},
		{"handler NaN action", "act", `{"session":"nan","user":"u","obs":[1,2,3]}`, ErrInternal},
		{"handler panic", "act", `{"session":"panic","user":"u","obs":[1,2,3]}`, ErrInternal},
		{"end not json", "end", `{`, ErrBadRequest},
		{"end missing terminal", "end", `{"session":"s","reward":1}`, ErrMissingField},
		{"end panic", "end", `{"session":"panic","reward":1,"terminal":true}`, ErrInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := nc.Request("dprl.v1."+tt.subj, []byte(tt.body), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			_, err = DecodeEndReply(m.Data)
			if !errors.Is(err, tt.want) {
				t.Fatalf("reply %s: got %v, want %v", m.Data, err, tt.want)
			}
			if strings.Contains(string(m.Data), "secret") {
				t.Fatalf("internal detail leaked: %s", m.Data)
			}
		})
	}
	// The server keeps serving after the panics.
	c, _ := NewClient(nc)
	if _, err := c.Act(context.Background(), "ok", "u", []float64{1, 2, 3}, 0, true); err != nil {
		t.Fatalf("after panic: %v", err)
	}
}

func TestClientErrors(t *testing.T) {
	h := &testHandler{}
	nc, _ := serve(t, h, Limits{})
	c, _ := NewClient(nc)
	ctx := context.Background()
	if _, err := c.Act(ctx, "s", "u", []float64{1, 2}, 0, true); !errors.Is(err, ErrObsDim) {
		t.Fatalf("obs dim: %v", err)
	}
	if _, err := c.Act(ctx, "s", "u", []float64{1, math.Inf(1), 2}, 0, true); !errors.Is(err, ErrNonFinite) {
		t.Fatalf("client-side Inf: %v", err)
	}
	var e *Error
	if _, err := c.Act(ctx, "limit", "u", []float64{1, 2, 3}, 0, true); !errors.As(err, &e) || e.Code != CodeStepLimit || !strings.Contains(e.Message, "100 steps") {
		t.Fatalf("handler error: %v", err)
	}
	c2, _ := NewClient(nc, WithPrefix("nobody"))
	if _, err := c2.Act(ctx, "s", "u", []float64{1, 2, 3}, 0, true); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("no responders: %v", err)
	}
}

func TestClientTimeout(t *testing.T) {
	h := &testHandler{block: make(chan struct{})}
	nc, _ := serve(t, h, Limits{})
	defer close(h.block)
	c, _ := NewClient(nc, WithTimeout(50*time.Millisecond))
	_, err := c.Act(context.Background(), "block", "u", []float64{1, 2, 3}, 0, true)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("default timeout: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := c.End(ctx, "block", 0, true); err != nil {
		t.Fatalf("end is a separate subscription and must not block: %v", err)
	}
	if _, err := c.Act(ctx, "block", "u", []float64{1, 2, 3}, 0, true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ctx timeout: %v", err)
	}
}

func TestStopDrains(t *testing.T) {
	h := &testHandler{block: make(chan struct{})}
	nc, srv := serve(t, h, Limits{})
	c, _ := NewClient(nc, WithTimeout(10*time.Second))
	var wg sync.WaitGroup
	var actErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, actErr = c.Act(context.Background(), "block", "u", []float64{1, 2, 3}, 0, true)
	}()
	testutil.Eventually(t, 5*time.Second, func() error {
		if h.entered.Load() == 0 {
			return errors.New("handler not entered")
		}
		return nil
	})
	stopped := make(chan error)
	go func() { stopped <- srv.Stop() }()
	close(h.block) // let the in-flight request finish; Stop waits for it
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if actErr != nil {
		t.Fatalf("in-flight request lost on stop: %v", actErr)
	}
	if err := srv.Stop(); err != nil {
		t.Fatalf("second stop: %v", err)
	}
	if _, err := c.Act(context.Background(), "s", "u", []float64{1, 2, 3}, 0, true); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("after stop: %v", err)
	}
}

func TestStopOnContextCancel(t *testing.T) {
	s := runServer(t, 0)
	nc := connect(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := Serve(ctx, nc, &testHandler{}, ServerConfig{ObsDim: 1}); err != nil {
		t.Fatal(err)
	}
	cancel()
	c, _ := NewClient(connect(t, s), WithTimeout(time.Second))
	testutil.Eventually(t, 5*time.Second, func() error {
		_, err := c.Act(context.Background(), "s", "u", []float64{1}, 0, true)
		if !errors.Is(err, nats.ErrNoResponders) {
			return errors.New("still serving")
		}
		return nil
	})
}

func TestServeValidates(t *testing.T) {
	s := runServer(t, 0)
	nc := connect(t, s)
	if _, err := Serve(context.Background(), nc, &testHandler{}, ServerConfig{}); err == nil {
		t.Fatal("ObsDim 0 accepted")
	}
}

func TestPolicyAnnouncements(t *testing.T) {
	s := runServer(t, 0)
	nc := connect(t, s)
	c, _ := NewClient(connect(t, s))
	got := make(chan PolicyAnnouncement, 1)
	sub, err := c.WatchPolicy(func(p PolicyAnnouncement) { got <- p })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := c.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	nc.Publish("dprl.v1.policy", []byte(`garbage`)) // ignored
	want := PolicyAnnouncement{Version: 18, Epsilon: 0.9, Delta: 1e-5}
	if err := PublishPolicy(nc, "", want); err != nil {
		t.Fatal(err)
	}
	if p := <-got; p != want {
		t.Fatalf("%+v", p)
	}
}

func TestInProcessAndEmbeddedOptions(t *testing.T) {
	s, err := StartEmbedded(EmbeddedOptions{DontListen: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	nc, err := Connect("", WithInProcess(s), WithReconnect(3, 10*time.Millisecond, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := Serve(context.Background(), nc, &testHandler{}, ServerConfig{ObsDim: 1, Prefix: "x"}); err != nil {
		t.Fatal(err)
	}
	c, _ := NewClient(nc, WithPrefix("x"))
	if a, err := c.Act(context.Background(), "ab", "u", []float64{0}, 0, true); err != nil || a.Index != 2 {
		t.Fatalf("%+v %v", a, err)
	}
	if _, err := Connect("", WithReconnect(1, 0, 0)); err == nil {
		t.Fatal("bad reconnect accepted")
	}
	if _, err := Connect("", WithTLS("", "cert", "")); err == nil {
		t.Fatal("cert without key accepted")
	}
	if _, err := StartEmbedded(EmbeddedOptions{Port: -1, MaxPayload: -1}); err == nil {
		t.Fatal("negative MaxPayload accepted")
	}
}

func TestBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 7: 5 * time.Second, 1000: 5 * time.Second} {
		if got := backoff(n, 100*time.Millisecond, 5*time.Second, 0.5); got != want {
			t.Errorf("backoff(%d) = %v, want %v", n, got, want)
		}
	}
	if lo, hi := backoff(1, time.Second, time.Second, 0), backoff(1, time.Second, time.Second, 1); lo != 750*time.Millisecond || hi != 1250*time.Millisecond {
		t.Errorf("jitter range %v..%v", lo, hi)
	}
}

func TestHandlerFuncs(t *testing.T) {
	h := HandlerFuncs{ActFunc: func(_ context.Context, r ActRequest) (ActReply, error) {
		return ActReply{Action: sims.Action{Index: len(r.Obs)}}, nil
	}}
	nc, _ := serve(t, h, Limits{})
	c, _ := NewClient(nc)
	if a, err := c.Act(context.Background(), "s", "u", []float64{1, 2, 3}, 0, true); err != nil || a.Index != 3 {
		t.Fatalf("%+v %v", a, err)
	}
	if err := c.End(context.Background(), "s", 0, true); !errors.Is(err, ErrInternal) {
		t.Fatalf("nil EndFunc: %v", err)
	}
}

func TestReplyOrigin(t *testing.T) {
	for _, c := range []struct{ reply, want string }{
		{"_INBOX.abcdefghijklmnopqrstuv.xyz123", "_INBOX.abcdefghijklmnopqrstuv"}, // nats.go's default
		{"_INBOX.abcdefghijklmnopqrstuv", "_INBOX"},                               // old request style
		{"app.gw1.abcdefghijklmnopqrstuv.tok", "app.gw1.abcdefghijklmnopqrstuv"},  // custom inbox prefix
		{"_R_.a1b2c3.d4e5f6", "_R_.a1b2c3"},                                       // service import
		{"_R_.a1b2c3.d4e5f6.node.T", "_R_.a1b2c3"},                                // tracked service import
		{"reply", "reply"},
		{"", ""},
	} {
		if got := ReplyOrigin(c.reply); got != c.want {
			t.Errorf("ReplyOrigin(%q) = %q, want %q", c.reply, got, c.want)
		}
	}
}

// TestServerCountsErrorsAndNoReply: every error reply is reported with its
// code, decoding failures included; requests without a reply subject are
// reported, acts among them not handled, and nothing is logged per request.
func TestServerCountsErrorsAndNoReply(t *testing.T) {
	s := runServer(t, 0)
	var (
		mu      sync.Mutex
		errs    = map[string]int{}
		noReply = map[string]int{}
		logs    bytes.Buffer
	)
	h := &testHandler{}
	srv, err := Serve(context.Background(), connect(t, s), h, ServerConfig{ObsDim: 3, Logger: zerolog.New(&syncWriter{w: &logs, mu: &mu}),
		OnErrorReply: func(op string, code Code) { mu.Lock(); errs[op+" "+string(code)]++; mu.Unlock() },
		OnNoReply:    func(op string) { mu.Lock(); noReply[op]++; mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	nc := connect(t, s)
	for _, r := range []struct{ subj, body string }{
		{"dprl.v1.act", `{`}, {"dprl.v1.act", `{"session":"x","obs":[1]}`}, {"dprl.v1.act", `{"session":"limit","obs":[1,2,3]}`},
		{"dprl.v1.act", `{"session":"fail","obs":[1,2,3]}`}, {"dprl.v1.end", `{"session":"x"}`}, {"dprl.v1.end", `{"session":"panic","reward":1,"terminal":true}`},
	} {
		if _, err := nc.Request(r.subj, []byte(r.body), 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 500; i++ {
		nc.Publish("dprl.v1.act", []byte(`{"session":"n","obs":[1,2,3]}`))
		nc.Publish("dprl.v1.end", []byte(`{"session":"n","reward":1,"terminal":true}`))
	}
	nc.Flush()
	_ = testutil.Wait(5*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if noReply["act"] == 500 && noReply["end"] == 500 {
			return nil
		}
		return fmt.Errorf("no-reply counts %v", noReply)
	})
	mu.Lock()
	defer mu.Unlock()
	want := map[string]int{"act bad_request": 1, "act obs_dim": 1, "act step_limit": 1, "act internal": 1, "end missing_field": 1, "end internal": 1}
	if fmt.Sprint(errs) != fmt.Sprint(want) {
		t.Errorf("error replies %v, want %v", errs, want)
	}
	if noReply["act"] != 500 || noReply["end"] != 500 {
		t.Errorf("requests without reply %v, want 500 each", noReply)
	}
	if n := h.acts.Load(); n != 2 {
		t.Errorf("%d acts handled, want 2 (acts without a reply subject are not)", n)
	}
	h.mu.Lock()
	nEnds := len(h.ends)
	h.mu.Unlock()
	if n := nEnds; n != 500 {
		t.Errorf("%d ends handled, want 500 (ends without a reply subject are)", n)
	}
	// The handler failure and the panic are logged (2 lines), nothing per
	// request without a reply.
	if n := bytes.Count(logs.Bytes(), []byte("\n")); n != 2 {
		t.Errorf("%d log lines, want 2:\n%s", n, logs.String())
	}
}

type syncWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
