package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func TestSessionToken(t *testing.T) {
	for _, tc := range []struct {
		id     string
		hashed bool
	}{
		{"s1", false},
		{"user-42_session-7", false},
		{strings.Repeat("a", 64), false},
		{strings.Repeat("a", 65), true},
		{"a.b", true},
		{"a b", true},
		{"*", true},
		{">", true},
		{"é", true},
		{"", true},
	} {
		tok := SessionToken(tc.id)
		if tc.hashed != (tok != tc.id) || !validToken(tok) {
			t.Errorf("SessionToken(%q) = %q", tc.id, tok)
		}
		if !tokenMatches(tok, tc.id) {
			t.Errorf("tokenMatches(%q, %q) = false", tok, tc.id)
		}
		if tokenMatches(tok+"x", tc.id) || tokenMatches("h"+strings.Repeat("0", 32), tc.id) {
			t.Errorf("tokenMatches accepts another token for %q", tc.id)
		}
	}
	if n := testing.AllocsPerRun(100, func() { tokenMatches(SessionToken("a.b"), "a.b") }); n > 2 {
		t.Errorf("%v allocations to hash and match an id", n) // SessionToken allocates its string, tokenMatches nothing
	}
	if n := testing.AllocsPerRun(100, func() { tokenMatches("ab", "ab") }); n != 0 {
		t.Errorf("tokenMatches allocates %v times", n)
	}
}

// TestPartitionMappingsMatchServer checks that SessionPartition is the
// partition nats-server's mapping sends a token to, for 300 tokens.
func TestPartitionMappingsMatchServer(t *testing.T) {
	const n = 7
	s, err := StartEmbedded(EmbeddedOptions{Port: -1, Partitions: n})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	nc := connect(t, s)
	ch := make(chan *nats.Msg, 512)
	if _, err := nc.ChanSubscribe(ProbeReceipt("", "*"), ch); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.ChanSubscribe("dprl.v1.p.*.act.*", ch); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	seen := map[int]bool{}
	for k := range 300 {
		tok := SessionToken(fmt.Sprintf("session-%d.x", k))
		want := SessionPartition(tok, n)
		seen[want] = true
		for _, subj := range []string{ProbeSubject("", tok), "dprl.v1.act." + tok} {
			if err := nc.Publish(subj, nil); err != nil {
				t.Fatal(err)
			}
			select {
			case m := <-ch:
				got, err := ProbePartition("", m.Subject)
				if err != nil || got != want || !strings.HasSuffix(m.Subject, "."+tok) {
					t.Fatalf("%s arrived on %s (%v): want partition %d", subj, m.Subject, err, want)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: nothing arrived", subj)
			}
		}
	}
	if len(seen) != n {
		t.Errorf("300 tokens fell in %d of %d partitions", len(seen), n)
	}
	if _, err := StartEmbedded(EmbeddedOptions{Port: -1, Partitions: MaxPartitions + 1}); err == nil {
		t.Error("too many partitions accepted")
	}
}

// TestServePartitions serves only added partitions, refuses requests whose
// subject does not fit their session, and stops serving a removed
// partition.
func TestServePartitions(t *testing.T) {
	const n = 4
	s, err := StartEmbedded(EmbeddedOptions{Port: -1, Partitions: n})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	nc := connect(t, s)
	srv, err := Serve(context.Background(), nc, &testHandler{}, ServerConfig{ObsDim: 2, Partitions: n})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	cl, err := NewClient(connect(t, s), WithTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	// Two sessions in different partitions.
	a, b := "sess-a", ""
	pa := SessionPartition(SessionToken(a), n)
	for k := 0; b == ""; k++ {
		if id := fmt.Sprintf("sess-%d", k); SessionPartition(SessionToken(id), n) != pa {
			b = id
		}
	}
	ctx := context.Background()
	obs := []float64{0, 0}
	if _, err := cl.Act(ctx, a, "", obs, 0, true); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("act before any partition is served: %v, want no responders", err)
	}
	if err := srv.AddPartition(pa); err != nil {
		t.Fatal(err)
	}
	if err := srv.AddPartition(n); err == nil {
		t.Error("partition n accepted")
	}
	if got := srv.ServedPartitions(); len(got) != 1 || got[0] != pa {
		t.Errorf("served %v, want [%d]", got, pa)
	}
	if _, err := cl.Act(ctx, a, "", obs, 0, true); err != nil {
		t.Fatalf("act in a served partition: %v", err)
	}
	if _, err := cl.EndDetail(ctx, a, 1, true); err != nil {
		t.Fatalf("end in a served partition: %v", err)
	}
	if _, err := cl.Act(ctx, b, "", obs, 0, true); !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("act in another partition: %v, want no responders", err)
	}
	// Past the mapping: a token that is not the session's, and a token on
	// another partition's subject.
	body, _ := AppendActRequest(nil, ActRequest{Session: a, Obs: obs})
	for _, subj := range []string{
		fmt.Sprintf("dprl.v1.p.%d.act.%s", pa, SessionToken(b)),
		fmt.Sprintf("dprl.v1.p.%d.act.other", pa),
	} {
		m, err := nc.Request(subj, body, time.Second)
		if err != nil {
			t.Fatalf("%s: %v", subj, err)
		}
		if _, err := DecodeActReply(m.Data); !errors.Is(err, &Error{Code: CodeBadRequest}) {
			t.Errorf("%s: %v, want bad_request", subj, err)
		}
	}
	if err := srv.RemovePartition(pa); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Act(ctx, a, "", obs, 0, true); !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("act after the partition was removed: %v, want no responders", err)
	}
}

// TestSessionSubjectsUnpartitioned: a single server serves both forms and
// checks a session subject's token.
func TestSessionSubjectsUnpartitioned(t *testing.T) {
	s := runServer(t, 0)
	nc := connect(t, s)
	srv, err := Serve(context.Background(), nc, &testHandler{}, ServerConfig{ObsDim: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	body, _ := AppendActRequest(nil, ActRequest{Session: "a.b", Obs: []float64{0, 0}})
	for subj, want := range map[string]Code{
		"dprl.v1.act":                        "",
		"dprl.v1.act." + SessionToken("a.b"): "",
		"dprl.v1.act.ab":                     CodeBadRequest,
	} {
		m, err := nc.Request(subj, body, time.Second)
		if err != nil {
			t.Fatalf("%s: %v", subj, err)
		}
		_, err = DecodeActReply(m.Data)
		if (want == "" && err != nil) || (want != "" && !errors.Is(err, &Error{Code: want})) {
			t.Errorf("%s: %v, want %q", subj, err, want)
		}
	}
}
