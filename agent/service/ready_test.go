package service

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"dprl/internal/testutil"
	"dprl/stream"
)

// readyz returns /readyz's status code and body.
func readyz(addr string) (int, string, error) {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// TestReadinessFollowsNATS kills the NATS server under a running agent:
// /readyz turns 503 and names the cause, the disconnect is logged and the
// dprl_nats_connected gauge drops to 0; a server back on the same port
// brings all three back. (Before, /readyz stayed 200 and nothing was logged.)
func TestReadinessFollowsNATS(t *testing.T) {
	ns, err := stream.StartEmbedded(stream.EmbeddedOptions{Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	var logs testutil.LockedBuffer
	svc, err := StartService(context.Background(), ServiceConfig{Agent: cartpoleConfig(4), DataDir: t.TempDir(), NATS: ns.ClientURL(),
		HTTPAddr: "127.0.0.1:0", Logger: zerolog.New(&logs)})
	if err != nil {
		ns.Shutdown()
		t.Fatal(err)
	}
	defer svc.Close()
	if code, body, err := readyz(svc.OpsAddr()); err != nil || code != http.StatusOK {
		t.Fatalf("/readyz with NATS up: %d %q %v", code, body, err)
	}
	gauge := func() string {
		for _, l := range strings.Split(httpGet(t, "http://"+svc.OpsAddr()+"/metrics"), "\n") {
			if strings.HasPrefix(l, "dprl_nats_connected ") {
				return strings.TrimPrefix(l, "dprl_nats_connected ")
			}
		}
		return "absent"
	}
	if g := gauge(); g != "1" {
		t.Fatalf("dprl_nats_connected = %s with NATS up, want 1", g)
	}

	ns.Shutdown()
	ns.WaitForShutdown()
	testutil.EventuallyTrue(t, 5*time.Second, "/readyz 503 after the NATS server stopped", func() bool {
		code, body, err := readyz(svc.OpsAddr())
		return err == nil && code == http.StatusServiceUnavailable && strings.Contains(body, "NATS connection is down")
	})
	testutil.EventuallyTrue(t, 5*time.Second, "the disconnect logged and the gauge at 0", func() bool {
		return strings.Contains(logs.String(), "nats: disconnected") && gauge() == "0"
	})

	ns2, err := stream.StartEmbedded(stream.EmbeddedOptions{Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer ns2.Shutdown()
	testutil.EventuallyTrue(t, 20*time.Second, "/readyz 200 after the server came back", func() bool {
		code, _, err := readyz(svc.OpsAddr())
		return err == nil && code == http.StatusOK
	})
	testutil.EventuallyTrue(t, 5*time.Second, "the reconnect logged and the gauge at 1", func() bool {
		return strings.Contains(logs.String(), "nats: reconnected") && gauge() == "1"
	})
}
