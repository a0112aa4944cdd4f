package service

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dprl/ledger"
)

// TestRun: Run announces the service, serves until its context ends and
// closes it, leaving the ledger; a data directory of other files is
// refused with ledger.ErrNotEmpty before anything is written.
func TestRun(t *testing.T) {
	data := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var out bytes.Buffer
	if err := Run(ctx, ServiceConfig{Agent: cartpoleConfig(2), DataDir: data, NATS: "embedded", NATSListen: "127.0.0.1:0"}, &out); err != nil {
		t.Fatal(err)
	}
	if out.Len() == 0 {
		t.Error("no announcement")
	}
	s, err := ledger.Open(data, ledger.Options{MustExist: true, ReadOnly: true})
	if err != nil {
		t.Fatalf("ledger after Run: %v", err)
	}
	s.Close()

	stray := t.TempDir()
	os.WriteFile(filepath.Join(stray, "notes.txt"), nil, 0o600)
	out.Reset()
	err = Run(context.Background(), ServiceConfig{Agent: cartpoleConfig(2), DataDir: stray, NATS: "embedded", NATSListen: "127.0.0.1:0"}, &out)
	if !errors.Is(err, ledger.ErrNotEmpty) || out.Len() != 0 || !strings.Contains(LedgerDirOf(err, "--data "+stray), stray) {
		t.Errorf("stray directory: %v, announcement %q", err, out.String())
	}
}
