package service

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"dprl/agent/internal/agenttest"
	"dprl/ledger"
)

// TestStartServiceAddressTaken: a taken embedded-NATS or ops address fails
// the start at once (not after the embedded server's 5 s ready timeout),
// naming the address, the system's reason and the setting to change, and
// before the ledger is opened: the data directory is not created.
func TestStartServiceAddressTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	for _, c := range []struct {
		name       string
		nats, http string
		want       string
	}{
		{"nats", taken, "", "embedded NATS cannot listen on " + taken + ": address already in use; pick another NATSListen"},
		{"http", "127.0.0.1:0", taken, "the ops HTTP server cannot listen on " + taken + ": address already in use; pick another HTTPAddr"},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			start := time.Now()
			svc, err := StartService(context.Background(), ServiceConfig{Agent: cartpoleConfig(4), DataDir: data, NATSListen: c.nats, HTTPAddr: c.http})
			took := time.Since(start)
			if err == nil {
				svc.Close()
				t.Fatal("started on a taken address")
			}
			if err.Error() != c.want || !errors.Is(err, syscall.EADDRINUSE) {
				t.Errorf("error %q, want %q wrapping EADDRINUSE", err, c.want)
			}
			if took > 4*time.Second {
				t.Errorf("reported after %v", took)
			}
			if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the data directory was created (%v): the ledger was opened before the address was bound", err)
			}
		})
	}
}

// TestStartServiceDataDirInUse: a data directory whose ledger is open
// elsewhere is refused with ledger.ErrLocked, before any address is bound
// (the other agent likely holds the same port).
func TestStartServiceDataDirInUse(t *testing.T) {
	dir := t.TempDir()
	store := agenttest.OpenStore(t, dir)
	defer store.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	svc, err := StartService(context.Background(), ServiceConfig{Agent: cartpoleConfig(4), DataDir: dir, NATSListen: ln.Addr().String()})
	if err == nil {
		svc.Close()
		t.Fatal("started on a data directory in use")
	}
	if !errors.Is(err, ledger.ErrLocked) || errors.Is(err, ledger.ErrCorrupt) || !strings.Contains(err.Error(), "data directory "+dir+" is in use") {
		t.Errorf("error %q, want ledger.ErrLocked naming %s", err, dir)
	}
}
