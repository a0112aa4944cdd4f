package agent

import (
	"testing"

	"dprl/agent/internal/agenttest"
	"dprl/profile"
)

// TestFixedQActAllocatesNothing: serving a step from a Q-network policy
// allocates nothing.
func TestFixedQActAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops serving contexts at random")
	}
	spec, pc, err := profile.AgentDefaults("cartpole")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseFixedPolicy(agenttest.QSnapshot(t, agenttest.PrivateProvenance()), "q.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig(spec, pc)
	cfg.Fixed = f
	a, _, stop := startAgent(t, cfg, t.TempDir())
	defer stop()
	obs := []float64{0.1, -0.2, 0.03, 0.4}
	if _, err := a.Act("s", "u", obs, 0, false); err != nil {
		t.Fatal(err)
	}
	for range 300 {
		if _, err := a.Act("s", "u", obs, 1, true); err != nil {
			t.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := a.Act("s", "u", obs, 1, true); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a Q-network policy's act allocates %v times", n)
	}
}
