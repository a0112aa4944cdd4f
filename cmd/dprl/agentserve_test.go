package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"dprl/internal/testutil"
	"dprl/ledger"
	"dprl/policy/sac"
	"dprl/stream"
)

// writeSACSnapshot writes the actor snapshot of a small SAC agent for
// obsDim observations and actions in [low, high] (as dprl offline primorl
// --out writes one) to a file in a temporary directory.
func writeSACSnapshot(t *testing.T, obsDim int, low, high []float64) string {
	t.Helper()
	cfg := sac.DefaultConfig()
	cfg.Hidden = []int{8, 8}
	a, err := sac.New(cfg, obsDim, low, high, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "policy.snap")
	b, err := a.MarshalActor(ledger.Provenance{Private: true, Epsilon: 5, Delta: 1e-5, Unit: ledger.UnitTrajectory, LedgerSeq: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestAgentServePolicy runs dprl agent --serve-policy on Pendulum with a
// SAC actor snapshot: it says at start that it serves the snapshot and
// spends no budget, serves continuous actions inside the box over NATS,
// ends sessions as not learned from, writes them to --log-sessions, and
// leaves the ledger without an entry.
func TestAgentServePolicy(t *testing.T) {
	snap := writeSACSnapshot(t, 3, []float64{-2}, []float64{2})
	dir, logs := t.TempDir(), t.TempDir()
	args := []string{"--log-level", "disabled", "agent", "--data", dir, "--env", "pendulum", "--serve-policy", snap, "--nats-listen", "127.0.0.1:0", "--log-sessions", logs}
	var stderr testutil.LockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int)
	go func() { done <- run(ctx, args, strings.NewReader(""), &strings.Builder{}, &stderr) }()
	url := regexp.MustCompile(`serving on (nats://\S+) the fixed policy`)
	var natsURL string
	err := testutil.Wait(20*time.Second, func() error {
		m := url.FindStringSubmatch(stderr.String())
		if m == nil {
			return fmt.Errorf("stderr %q", stderr.String())
		}
		natsURL = m[1]
		return nil
	})
	if err != nil {
		cancel()
		t.Fatalf("agent did not start: %v (exit %d)", err, <-done)
	}
	if s := stderr.String(); !strings.Contains(s, snap) || !strings.Contains(s, "crc32c:") || !strings.Contains(s, "spends no privacy budget") || strings.Contains(s, "per-session epsilon") {
		t.Errorf("start lines: %q", s)
	}
	nc, err := stream.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := stream.NewClient(nc)
	if err != nil {
		t.Fatal(err)
	}
	for step := range 5 {
		act, err := c.Act(ctx, "s1", "alice", []float64{1, 0, float64(step)}, -0.5, step == 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(act.Vec) != 1 || !(act.Vec[0] >= -2 && act.Vec[0] <= 2) {
			t.Fatalf("step %d: action %+v, want one value in [-2, 2]", step, act)
		}
	}
	r, err := c.EndAs(ctx, "s1", "alice", -0.5, true)
	if err != nil || r.Used || !strings.Contains(r.Reason, "fixed policy") {
		t.Errorf("end: %+v %v, want not learned from", r, err)
	}
	nc.Close()
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("agent: exit %d: %s", code, stderr.String())
	}
	files, _ := filepath.Glob(filepath.Join(logs, "*"))
	if len(files) != 1 {
		t.Errorf("session log files %v, want one", files)
	} else if b, err := os.ReadFile(files[0]); err != nil || !strings.Contains(string(b), `"session":"s1"`) {
		t.Errorf("session log %q (%v)", b, err)
	}
	st, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if h, err := st.Head(); err != nil || h.Seq != 0 {
		t.Errorf("ledger head %+v (%v), want no entry", h, err)
	}
}

// TestAgentServePolicyRefused: a snapshot that cannot be served, or a
// learner flag with --serve-policy, is a usage error (exit 2) naming the
// flag at fault, found by --check-config as at start.
func TestAgentServePolicyRefused(t *testing.T) {
	snap := writeSACSnapshot(t, 3, []float64{-2}, []float64{2})
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	b[20] ^= 0xff
	corrupt := filepath.Join(t.TempDir(), "corrupt.snap")
	if err := os.WriteFile(corrupt, b, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"discrete env", []string{"--env", "cartpole", "--serve-policy", snap}, []string{"--serve-policy", "--env cartpole has 2 discrete actions"}},
		{"obs-dim mismatch", []string{"--obs-dim", "5", "--serve-policy", snap}, []string{"--serve-policy", "takes 3 observation values", "--obs-dim 5 has 5"}},
		{"corrupt", []string{"--env", "pendulum", "--serve-policy", corrupt}, []string{"--serve-policy", "bad actor snapshot"}},
		{"missing", []string{"--env", "pendulum", "--serve-policy", snap + ".nope"}, []string{"--serve-policy", "no such file"}},
		{"K", []string{"--env", "pendulum", "--serve-policy", snap, "--K", "8"}, []string{"--K: does not apply with --serve-policy"}},
		{"user-epsilon", []string{"--env", "pendulum", "--serve-policy", snap, "--user-epsilon", "2"}, []string{"--user-epsilon: does not apply"}},
	} {
		for _, check := range []bool{true, false} {
			args := append([]string{"agent", "--data", dir, "--nats-listen", "127.0.0.1:0"}, c.args...)
			if check {
				args = append(args, "--check-config")
			}
			code, _, stderr := runCLI(t, args...)
			for _, w := range c.want {
				if code != exitUsage || !strings.Contains(stderr, w) {
					t.Errorf("%s (check-config %v): exit %d %q, want %d saying %q", c.name, check, code, stderr, exitUsage, w)
				}
			}
		}
	}
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Errorf("refused starts left %v in --data", names)
	}
	code, out, stderr := runCLI(t, "agent", "--data", dir, "--env", "pendulum", "--serve-policy", snap, "--check-config")
	if code != 0 || !strings.Contains(out, "serving the fixed policy "+snap) || !strings.Contains(out, "spends no privacy budget") {
		t.Errorf("check-config: exit %d %q %q", code, out, stderr)
	}
}

// TestAgentServeNonPrivate: dprl agent --serve-policy refuses a snapshot
// that records it is NOT private (primorl --non-private) unless
// --serve-non-private is given, and --check-config then says it is NOT
// private; the flag is refused with a private snapshot. (Before: the
// non-private snapshot was accepted as "a DP release".)
func TestAgentServeNonPrivate(t *testing.T) {
	cfg := sac.DefaultConfig()
	cfg.Hidden = []int{8, 8}
	a, err := sac.New(cfg, 3, []float64{-2}, []float64{2}, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := a.MarshalActor(ledger.Provenance{})
	if err != nil {
		t.Fatal(err)
	}
	np := filepath.Join(t.TempDir(), "np.snap")
	if err := os.WriteFile(np, b, 0o600); err != nil {
		t.Fatal(err)
	}
	private := writeSACSnapshot(t, 3, []float64{-2}, []float64{2})
	args := func(snap string, extra ...string) []string {
		return append([]string{"agent", "--data", t.TempDir(), "--env", "pendulum", "--serve-policy", snap, "--check-config"}, extra...)
	}
	if code, _, stderr := runCLI(t, args(np)...); code != 2 || !strings.Contains(stderr, "NOT private") || !strings.Contains(stderr, "--serve-non-private") {
		t.Errorf("non-private snapshot without the flag: exit %d, %s", code, stderr)
	}
	if code, out, stderr := runCLI(t, args(np, "--serve-non-private")...); code != 0 || !strings.Contains(out, "NOT private") || strings.Contains(out, "post-processing") {
		t.Errorf("non-private snapshot with the flag: exit %d, %s %s", code, out, stderr)
	}
	if code, out, stderr := runCLI(t, args(private)...); code != 0 || !strings.Contains(out, "(epsilon 5, delta 1e-05)-DP per trajectory (ledger entry 2)") {
		t.Errorf("private snapshot: exit %d, %s %s", code, out, stderr)
	}
	if code, _, stderr := runCLI(t, args(private, "--serve-non-private")...); code != 2 || !strings.Contains(stderr, "--serve-non-private") {
		t.Errorf("the flag with a private snapshot: exit %d, %s", code, stderr)
	}
}
