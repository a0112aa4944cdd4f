package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"dprl/agent/internal/agenttest"
	"dprl/internal/testutil"
)

// TestReleaseLogLine: every release logs one info line with public
// figures only (the version, the release's per-session epsilon and delta,
// the per-session guarantee so far) and nothing that depends on the
// sessions (participants, returns, users).
func TestReleaseLogLine(t *testing.T) {
	var buf testutil.LockedBuffer
	store := agenttest.OpenStore(t, t.TempDir())
	cfg := cartpoleConfig(2)
	a, err := New(cfg, store, Options{Logger: zerolog.New(&buf).Level(zerolog.InfoLevel)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		<-done
		store.Close()
	}()
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 4 {
		playEpisode(t, a, fmt.Sprintf("s%d", i), fmt.Sprintf("u%d", i), rng, 20)
	}
	testutil.EventuallyTrue(t, 20*time.Second, "version 2", func() bool { return a.Version() == 2 })
	testutil.EventuallyTrue(t, 5*time.Second, "two release lines", func() bool { return strings.Count(buf.String(), "released policy version") == 2 })
	g := a.Guarantee()
	want := []string{"component", "delta", "delta_per_session", "epsilon_per_session", "level", "message", "release_epsilon", "version"}
	v := 0
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		msg, _ := m["message"].(string)
		if !strings.HasPrefix(msg, "released policy version") {
			continue
		}
		v++
		if keys := slices.Sorted(maps.Keys(m)); !slices.Equal(keys, want) {
			t.Errorf("release line fields %v, want %v", keys, want)
		}
		if m["level"] != "info" || m["version"] != float64(v) || m["release_epsilon"] != a.Epsilon() || m["delta"] != cfg.Delta || m["epsilon_per_session"] != g.Epsilon {
			t.Errorf("release line %d: %v (epsilon %v, guarantee %v)", v, m, a.Epsilon(), g.Epsilon)
		}
		if want := fmt.Sprintf("released policy version %d: (epsilon 4.378, delta 1e-05)-DP per session", v); msg != want {
			t.Errorf("message %q, want %q", msg, want)
		}
	}
}
