package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dprl/agent/service"
	"dprl/internal/testutil"
	"dprl/ledger"

	"github.com/spf13/pflag"
)

// TestAgentLimitFlags: the admission limits and the reward bound reach the
// agent's configuration, and bad values are refused.
func TestAgentLimitFlags(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runCLI(t, "agent", "--data", dir, "--env", "pendulum", "--check-config")
	if code != 0 || !strings.Contains(out, "rewards clipped to [-16.27") {
		t.Errorf("pendulum's reward bound: %d %q %q", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "agent", "--data", dir, "--obs-dim", "3", "--actions", "2", "--reward-high", "5", "--check-config")
	if code != 0 || !strings.Contains(out, "rewards clipped to [-1e+06, 5]") {
		t.Errorf("--reward-high: %d %q %q", code, out, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--reward-low", "2", "--reward-high", "1"}, "reward bound"},
		{[]string{"--max-sessions-per-user", "0"}, "per user"},
		{[]string{"--max-sessions-per-connection", "0"}, "per connection"},
		{[]string{"--session-memory-mib", "0"}, "--session-memory-mib"},
		{[]string{"--max-queued-per-user", "0"}, "queued"},
		{[]string{"--max-session-lifetime", "0s"}, "lifetime"},
	} {
		args := append([]string{"agent", "--data", dir, "--env", "cartpole", "--check-config"}, c.args...)
		if code, _, stderr := runCLI(t, args...); code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d %q, want a usage error naming %q", c.args, code, stderr, c.want)
		}
	}
}

// TestAgentRefusesNonEmptyDataWithoutInit: a --data directory that holds
// files but no ledger (a mistyped path) is refused, naming --init, before
// anything is written there; the same directory with --check-config is
// still only checked.
func TestAgentRefusesNonEmptyDataWithoutInit(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a ledger"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "agent", "--data", dir, "--env", "cartpole", "--nats-listen", "127.0.0.1:0")
	if code != exitUsage || !strings.Contains(stderr, "--init") || !strings.Contains(stderr, "holds files but no ledger") {
		t.Fatalf("agent on a non-empty directory: exit %d, %q; want %d naming --init", code, stderr, exitUsage)
	}
	names, err := os.ReadDir(dir)
	if err != nil || len(names) != 1 {
		t.Fatalf("the refused directory now holds %v (%v), want only notes.txt", names, err)
	}
}

// TestVersion: dprl version and --version name the build.
func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "version", "--json")
	var b struct{ Version, Go string }
	if code != 0 || json.Unmarshal([]byte(out), &b) != nil || b.Version == "" || !strings.HasPrefix(b.Go, "go") {
		t.Fatalf("version --json: %d %q", code, out)
	}
	if code, out, _ := runCLI(t, "--version"); code != 0 || !strings.HasPrefix(out, "dprl version "+b.Version) {
		t.Fatalf("--version: %d %q", code, out)
	}
}

// TestAgentDataDirInUse: a second agent (or ledger command) on a data
// directory another process holds says the directory is in use, not that
// its store is corrupt, and exits 1; that comes before a port the first
// agent holds.
func TestAgentDataDirInUse(t *testing.T) {
	dir := t.TempDir()
	holdLedgerInChild(t, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	want := "data directory " + dir + " is in use by another process (pid "
	for _, args := range [][]string{
		{"agent", "--data", dir, "--env", "cartpole", "--nats-listen", "127.0.0.1:0"},
		{"agent", "--data", dir, "--env", "cartpole", "--nats-listen", ln.Addr().String()},
		{"ledger", "show", "--data", dir},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 1 || !strings.Contains(stderr, want) || strings.Contains(stderr, "corrupt") {
			t.Errorf("%v: exit %d, %q; want 1 and %q", args, code, stderr, want)
		}
	}
}

// holdLedgerInChild runs this test binary as a child process that opens
// the ledger in dir (TestHoldLedgerChild) and holds it until the test ends.
func holdLedgerInChild(t *testing.T, dir string) {
	t.Helper()
	if c := testutil.StartChild(t, "TestHoldLedgerChild", "DPRL_TEST_HOLD_LEDGER="+dir); c.Line != "held" {
		t.Fatalf("child: %q", c.Line)
	}
}

// TestHoldLedgerChild is the child of holdLedgerInChild: it opens the
// ledger in $DPRL_TEST_HOLD_LEDGER, says "held" and holds it until its
// stdin closes. Without the variable it does nothing.
func TestHoldLedgerChild(t *testing.T) {
	dir := os.Getenv("DPRL_TEST_HOLD_LEDGER")
	if dir == "" {
		t.Skip("the child of holdLedgerInChild")
	}
	s, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("held")
	bufio.NewReader(os.Stdin).ReadString('\n')
	s.Close()
}

// TestAgentAddressTaken: dprl agent on a taken --nats-listen or --http
// address names it, the reason and the flag, exits 1, and leaves an empty
// --data directory empty.
func TestAgentAddressTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--nats-listen", taken}, "embedded NATS cannot listen on " + taken + ": address already in use; pick another --nats-listen"},
		{[]string{"--nats-listen", "127.0.0.1:0", "--http", taken}, "the ops HTTP server cannot listen on " + taken + ": address already in use; pick another --http"},
	} {
		dir := t.TempDir()
		start := time.Now()
		code, _, stderr := runCLI(t, append([]string{"agent", "--data", dir, "--env", "cartpole"}, c.flags...)...)
		if took := time.Since(start); code != 1 || !strings.Contains(stderr, c.want) || took > 4*time.Second {
			t.Errorf("%v: exit %d after %v, %q; want 1 and %q", c.flags, code, took, stderr, c.want)
		}
		if names, err := os.ReadDir(dir); err != nil || len(names) != 0 {
			t.Errorf("%v: --data now holds %v (%v), want it empty", c.flags, names, err)
		}
	}
}

// TestAgentCheckConfigRefuses: --check-config refuses, naming the flag, a
// value outside its range, --env with --obs-dim, a bad address and a
// missing or malformed file, and creates nothing. (Before: --env
// cartpole --obs-dim 3, --K 100000000000, --nats bogus://x, --http
// not-an-addr and --tls-cert /nonexistent all passed.)
func TestAgentCheckConfigRefuses(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not PEM\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	for _, c := range []struct {
		args []string
		env  string // NAME=VALUE, or ""
		want string
	}{
		{[]string{"--obs-dim", "3"}, "", "--env cartpole and --obs-dim/--actions both given"},
		{[]string{"--K", "100000000000"}, "", "--K 100000000000: want 1 to 32768"},
		{[]string{"--K", "1000", "--session-memory-mib", "1"}, "", "do not fit the session memory budget --session-memory-mib of 1 MiB"},
		{[]string{"--z", "0"}, "", "--z 0: want > 0"},
		{[]string{"--K", "0"}, "", "--K 0: want > 0"},
		{[]string{"--session-epsilon", "0"}, "", "--session-epsilon 0: want > 0"},
		{nil, "DPRL_Z=0", "--z 0: want > 0"},
		{[]string{"--max-open-sessions", "0"}, "", "--max-open-sessions 0: open sessions, want 1 to 16777216"},
		{[]string{"--max-steps", "100000000"}, "", "--max-steps 100000000: steps per session, want 2 to 16777216"},
		{[]string{"--max-queued-per-user", "5000"}, "", "--max-queued-per-user 5000: queued sessions per user, want 1 to 1152"},
		{[]string{"--idle-timeout", "1ns"}, "", "--idle-timeout 1ns: idle timeout, want 50ms to 30 days"},
		{[]string{"--flush-timeout", "10000h"}, "", "--flush-timeout 10000h0m0s: flush timeout"},
		{[]string{"--reward-low", "1", "--reward-high", "1"}, "", "reward bound [--reward-low, --reward-high] = [1, 1]: want finite low < high"},
		{[]string{"--delta", "1"}, "", "--delta 1: want 0 < delta < 1"},
		{[]string{"--user-epsilon", "-1"}, "", "--user-epsilon -1: the user epsilon cap must be finite and >= 0"},
		{[]string{"--max-updates-per-user", "10000000000"}, "", "--max-updates-per-user 10000000000: want 0 (no cap) to 1048576"},
		{[]string{"--seed", "-1"}, "", `invalid argument "-1" for "--seed" flag`},
		{[]string{"--nats", "bogus://x"}, "", `--nats "bogus://x": want a nats://, tls://, ws:// or wss:// URL`},
		{[]string{"--http", "not-an-addr"}, "", `--http "not-an-addr": want HOST:PORT`},
		{[]string{"--nats-listen", "127.0.0.1:70000"}, "", `--nats-listen "127.0.0.1:70000": port "70000"`},
		{[]string{"--nats", "nats://127.0.0.1:4222", "--tls-cert", missing, "--tls-key", missing}, "", "--tls-cert/--tls-key: open " + missing},
		{[]string{"--nats", "nats://127.0.0.1:4222", "--tls-ca", junk}, "", "--tls-ca " + junk + ": " + junk + ": no PEM certificate"},
		{[]string{"--nats", "nats://127.0.0.1:4222", "--creds", missing}, "", "--creds " + missing + ": open "},
		{[]string{"--nats", "nats://127.0.0.1:4222", "--nkey", junk}, "", "--nkey " + junk},
		{[]string{"--nats-clients", missing}, "", "--nats-clients: stream: clients file: open " + missing},
		{[]string{"--nats-tls-cert", missing, "--nats-tls-key", missing}, "", "--nats-tls-*: stream: server TLS: open " + missing},
		{[]string{"--nats-max-conn", "10000000"}, "", "--nats-max-*: agent: nats: max connections 10000000"},
	} {
		if c.env != "" {
			name, value, _ := strings.Cut(c.env, "=")
			t.Setenv(name, value)
		}
		args := append([]string{"agent", "--data", data, "--env", "cartpole", "--check-config"}, c.args...)
		if code, _, stderr := runCLI(t, args...); code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v %s: exit %d %q, want %d and %q", c.args, c.env, code, stderr, exitUsage, c.want)
		}
		if c.env != "" {
			os.Unsetenv(strings.SplitN(c.env, "=", 2)[0])
		}
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--check-config created --data (%v)", err)
	}
}

// TestAgentFlagNamesComplete: every field service.Settings' errors may name
// is rendered as a flag dprl agent has (an unnamed field would print as
// nothing).
func TestAgentFlagNamesComplete(t *testing.T) {
	c := newAgentCmd(&app{})
	fl := registerAgentSettings(pflag.NewFlagSet("agent", pflag.ContinueOnError), new(service.Settings))
	for _, f := range service.SettingsFields {
		name := fl.Flag(f)
		if name == "" {
			t.Errorf("field %s: no flag", f)
			continue
		}
		if !strings.HasSuffix(name, "*") && c.Flags().Lookup(strings.TrimPrefix(name, "--")) == nil {
			t.Errorf("field %s: %s is not a flag of dprl agent", f, name)
		}
	}
}

// TestCheckConfigRefusesFileAsDirectory: --check-config refuses a plain
// file given as --log-sessions or --data (it accepted the file, and the
// agent failed only when it first wrote a session).
func TestCheckConfigRefusesFileAsDirectory(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--data", dir, "--log-sessions", file}, {"--data", file}} {
		code, _, stderr := runCLI(t, append([]string{"agent", "--env", "cartpole", "--check-config"}, args...)...)
		if code != exitUsage || !strings.Contains(stderr, file+" is a file: want a directory") || !strings.Contains(stderr, "--") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
}
