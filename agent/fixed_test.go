package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dprl/agent/internal/agenttest"
	"dprl/policy"
	"dprl/policy/sac"
	"dprl/profile"
)

// pendulumFixed is the configuration of an agent serving a SAC actor for
// Pendulum (3 observation values, one action in [-2, 2]).
func pendulumFixed(t testing.TB) Config {
	t.Helper()
	spec, pc, err := profile.AgentDefaults("pendulum")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseFixedPolicy(agenttest.SACSnapshot(t, 3, []float64{-2}, []float64{2}, agenttest.PrivateProvenance()), "test.snap")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig(spec, pc)
	cfg.Fixed, cfg.Seed = f, 3
	return cfg
}

// TestFixedPolicyLimits: a fixed policy's sessions obey the admission and
// size limits (a user's open sessions, the step limit, the idle timeout)
// as a learning agent's do.
func TestFixedPolicyLimits(t *testing.T) {
	cfg := pendulumFixed(t)
	cfg.MaxSessionsPerUser, cfg.MaxStepsPerSession, cfg.IdleTimeout = 2, 3, MinTimeout
	a, _, stop := startAgent(t, cfg, t.TempDir())
	defer stop()
	obs := []float64{1, 0, 0}
	for _, id := range []string{"a", "b"} {
		if _, err := a.Act(id, "u", obs, 0, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Act("c", "u", obs, 0, false); !errors.Is(err, ErrSessionLimit) {
		t.Errorf("third session of a user with a limit of 2: %v, want ErrSessionLimit", err)
	}
	for step := 1; step < 3; step++ {
		if _, err := a.Act("a", "u", obs, -1, true); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Act("a", "u", obs, -1, true); !errors.Is(err, ErrStepLimit) {
		t.Errorf("fourth step with a limit of 3: %v, want ErrStepLimit", err)
	}
	waitFor(t, func() bool { return a.table.open.Load() == 0 }) // "b" idles out
	if _, err := a.End("b", "u", 0, true); !errors.Is(err, ErrUnknownSession) {
		t.Errorf("end of an idle session: %v, want ErrUnknownSession", err)
	}
	if a.mem.Load() != 0 {
		t.Errorf("%d bytes still charged", a.mem.Load())
	}
}

// TestFixedPolicyRefused: a fixed policy that cannot serve the spec is
// refused by Config.Validate: discrete actions, other dimensions.
func TestFixedPolicyRefused(t *testing.T) {
	cfg := pendulumFixed(t)
	for _, c := range []struct {
		name string
		spec policy.Spec
		want string
	}{
		{"discrete", policy.Spec{ObsDim: 3, Kind: policy.ActionDiscrete, NumActions: 2}, "continuous actions"},
		{"obs", policy.Spec{ObsDim: 4, Kind: policy.ActionContinuous, ActionDim: 1}, "3 observation values and 1 action values, the spec 4 and 1"},
		{"actions", policy.Spec{ObsDim: 3, Kind: policy.ActionContinuous, ActionDim: 2}, "the spec 3 and 2"},
	} {
		c2 := cfg
		c2.Spec = c.spec
		if err := c2.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// TestLoadFixedPolicy: the library's loader reads a snapshot file, names
// it and its CRC-32C, and refuses a missing or corrupt one with errors
// that wrap the cause.
func TestLoadFixedPolicy(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "policy.snap")
	snap := agenttest.SACSnapshot(t, 3, []float64{-2}, []float64{2}, agenttest.PrivateProvenance())
	if err := os.WriteFile(good, snap, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := LoadFixedPolicy(good)
	if err != nil || f.Source != good || f.Actor.ObsDim() != 3 || f.Actor.ActDim() != 1 || !strings.HasPrefix(f.ID(), "sac-actor crc32c:") {
		t.Fatalf("LoadFixedPolicy: %+v %v", f, err)
	}
	if _, err := LoadFixedPolicy(filepath.Join(dir, "nope")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := ParseFixedPolicy(snap[:len(snap)-1], "cut"); !errors.Is(err, sac.ErrSnapshot) || !strings.Contains(err.Error(), "cut") ||
		!strings.Contains(err.Error(), "a Q-network policy (JSON, dprl.qlearn.v2") || !strings.Contains(err.Error(), "or a SAC actor") {
		t.Errorf("truncated snapshot: %v", err)
	}
	g, err := ParseFixedPolicy(append([]byte(nil), snap...), "copy")
	if err != nil || g.CRC != f.CRC {
		t.Errorf("the same bytes: CRC %08x, want %08x (%v)", g.CRC, f.CRC, err)
	}
}

// waitFor polls cond for up to 5 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not reached in 5 s")
}

// TestFixedActAllocatesNothing: serving a step of an open session from a
// fixed policy allocates nothing (the actor's sampling, the session's
// appends within its capacity, the metrics).
func TestFixedActAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops serving contexts at random")
	}
	a, _, stop := startAgent(t, pendulumFixed(t), t.TempDir())
	defer stop()
	obs := []float64{0.5, -0.5, 0.1}
	if _, err := a.Act("s", "u", obs, 0, false); err != nil {
		t.Fatal(err)
	}
	for range 300 { // the session's storage grows to 512 steps
		if _, err := a.Act("s", "u", obs, -1, true); err != nil {
			t.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := a.Act("s", "u", obs, -1, true); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a fixed policy's act allocates %v times", n)
	}
}
