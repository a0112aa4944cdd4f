package stream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"dprl/internal/testutil"
)

func TestEmbeddedLogsThroughZerolog(t *testing.T) {
	var buf testutil.LockedBuffer
	s, err := StartEmbedded(EmbeddedOptions{Port: -1, Logger: zerolog.New(&buf)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if !strings.Contains(buf.String(), `"component":"nats-server"`) || !strings.Contains(buf.String(), "ready") {
		t.Fatalf("server log not routed: %s", buf.String())
	}
	if !strings.HasPrefix(s.ClientURL(), "nats://127.0.0.1:") {
		t.Fatalf("not on loopback: %s", s.ClientURL())
	}
}

// TestEmbeddedBannerAtDebug: at the info level the server's start banner
// and shutdown notices are not logged (they are at debug level); its other
// notices, warnings and errors are.
func TestEmbeddedBannerAtDebug(t *testing.T) {
	var buf testutil.LockedBuffer
	log := zerolog.New(&buf).Level(zerolog.InfoLevel)
	s, err := StartEmbedded(EmbeddedOptions{Port: -1, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	s.Shutdown()
	s.WaitForShutdown()
	if got := buf.String(); got != "" {
		t.Errorf("start and stop logged at info:\n%s", got)
	}
	n := natsLogger{l: log}
	n.Noticef("Slow Consumer Detected: MaxPending of %d Exceeded", 10)
	n.Warnf("warned")
	n.Errorf("failed")
	for _, want := range []string{`"level":"info","message":"Slow Consumer Detected: MaxPending of 10 Exceeded"`, `"level":"warn","message":"warned"`, `"level":"error","message":"failed"`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, buf.String())
		}
	}
	var debug testutil.LockedBuffer
	natsLogger{l: zerolog.New(&debug).Level(zerolog.DebugLevel)}.Noticef("  Version:  %s", "2")
	if !strings.Contains(debug.String(), `"level":"debug","message":"  Version:  2"`) {
		t.Errorf("the banner at debug level: %q", debug.String())
	}
}

func TestMaxPayload(t *testing.T) {
	s := runServer(t, 512)
	c, _ := NewClient(connect(t, s))
	_, err := c.Act(context.Background(), "s", "u", make([]float64, 300), 0, true)
	if !errors.Is(err, nats.ErrMaxPayload) {
		t.Fatalf("payload over server MaxPayload: %v", err)
	}
}

func TestServerLogsPanics(t *testing.T) {
	var buf testutil.LockedBuffer
	s := runServer(t, 0)
	nc := connect(t, s)
	srv, err := Serve(context.Background(), nc, &testHandler{}, ServerConfig{ObsDim: 1, Logger: zerolog.New(&buf)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	m, err := connect(t, s).Request("dprl.v1.act", []byte(`{"session":"panic","user":"secret-user","obs":[1]}`), 5*time.Second)
	if err != nil || !strings.Contains(string(m.Data), `"internal"`) {
		t.Fatalf("%v", err)
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		if !strings.Contains(buf.String(), "handler panicked") {
			return errors.New("panic not logged")
		}
		return nil
	})
	if strings.Contains(buf.String(), "secret-user") {
		t.Fatal("user id logged")
	}
}

func TestConnectOptionErrors(t *testing.T) {
	dir := t.TempDir()
	for name, opt := range map[string]Option{
		"nkey missing file": WithNKey(dir + "/nope.nk"),
		"empty creds":       WithCredentials(""),
		"key without cert":  WithTLS("", "", "key.pem"),
	} {
		if _, err := Connect("nats://127.0.0.1:1", opt); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A server that is not there: the error names the cause.
	if _, err := Connect("nats://127.0.0.1:1", WithReconnect(0, time.Millisecond, time.Millisecond)); !errors.Is(err, nats.ErrNoServers) {
		t.Errorf("no server: %v", err)
	}
}

// TestEmbeddedListenTaken: a taken port is StartEmbedded's error, at once
// (not after ReadyTimeout), naming the address and the cause; the server's
// own fatal line is not logged before it (the caller reports the error).
func TestEmbeddedListenTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	start := time.Now()
	var logs testutil.LockedBuffer
	s, err := StartEmbedded(EmbeddedOptions{Host: "127.0.0.1", Port: port, ReadyTimeout: 20 * time.Second, Logger: zerolog.New(&logs)})
	if strings.Contains(logs.String(), "fatal") || strings.Contains(logs.String(), "Error listening") {
		t.Errorf("the server's fatal line was logged: %s", logs.String())
	}
	took := time.Since(start)
	if err == nil {
		s.Shutdown()
		t.Fatal("started on a taken port")
	}
	var le *ListenError
	want := fmt.Sprintf("embedded NATS cannot listen on 127.0.0.1:%d: address already in use", port)
	if !errors.As(err, &le) || !errors.Is(err, syscall.EADDRINUSE) || err.Error() != want {
		t.Errorf("error %q (%T), want %q, a *ListenError wrapping EADDRINUSE", err, err, want)
	}
	if took > 10*time.Second {
		t.Errorf("reported after %v: waited for the ready timeout", took)
	}
}

// TestEmbeddedClusterOptionErrors: JetStream without a store directory, a
// cluster without a name and a route that is not a nats-route URL are
// refused before the server starts.
func TestEmbeddedClusterOptionErrors(t *testing.T) {
	for _, o := range []EmbeddedOptions{
		{Port: -1, JetStream: &JetStreamOptions{}},
		{Port: -1, Cluster: &ClusterOptions{Port: -1}},
		{Port: -1, Cluster: &ClusterOptions{Name: "c", Port: -1, Routes: []string{"127.0.0.1:6222"}}},
		{Port: -1, Cluster: &ClusterOptions{Name: "c", Port: -1, Routes: []string{"nats://127.0.0.1:6222"}}},
	} {
		s, err := StartEmbedded(o)
		if err == nil {
			s.Shutdown()
			t.Errorf("%+v %+v %+v: started", o, o.JetStream, o.Cluster)
		}
	}
	// A single JetStream server with file storage starts and has JetStream.
	s, err := StartEmbedded(EmbeddedOptions{Port: -1, JetStream: &JetStreamOptions{StoreDir: t.TempDir(), SyncAlways: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if !s.JetStreamEnabled() {
		t.Fatal("JetStream not enabled")
	}
}
