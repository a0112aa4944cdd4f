package stream

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// syncBuffer is a bytes.Buffer safe for the connection's callbacks.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestConnectionEventsCleanClose: closing a connection logs that it closed,
// not "disconnected; reconnecting" (every clean stop of the agent logged a
// reconnect that never comes); losing the server still logs the reconnect.
func TestConnectionEventsCleanClose(t *testing.T) {
	ns, err := StartEmbedded(EmbeddedOptions{Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown()
	var log syncBuffer
	nc, err := Connect(ns.ClientURL(), WithConnectionEvents(zerolog.New(&log), nil))
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(log.String(), "connection closed") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if s := log.String(); strings.Contains(s, "reconnecting") || !strings.Contains(s, "connection closed") {
		t.Errorf("a clean close logged %q", s)
	}

	var lost syncBuffer
	nc, err = Connect(ns.ClientURL(), WithConnectionEvents(zerolog.New(&lost), nil))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ns.Shutdown()
	deadline = time.Now().Add(5 * time.Second)
	for !strings.Contains(lost.String(), "reconnecting") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(lost.String(), "disconnected; reconnecting") {
		t.Errorf("losing the server logged %q", lost.String())
	}
}
