package service

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dprl/agent"
	"dprl/agent/internal/agenttest"
	"dprl/internal/testutil"
	"dprl/ledger/accountant"
	"dprl/policy"
)

// TestBandedConfigAndBound checks the agent's bandmf settings: a cap on
// updates per user is required; the per-user bound is the Gaussian
// mechanism of z / rho(k), rho(k) = sqrt(k) within rounding; the
// description names the pattern; Settings parse --noise and --band.
func TestBandedConfigAndBound(t *testing.T) {
	cfg := bandedConfig(8, 16, 0)
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "MaxUpdatesPerUser") {
		t.Fatalf("bandmf without a cap: %v", err)
	}
	cfg.MaxUpdatesPerUser = 10
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	rho, err := cfg.UserSensitivity()
	if err != nil || rho < math.Sqrt(10) || rho > math.Sqrt(10)*(1+2e-6) {
		t.Fatalf("sensitivity %v %v, want sqrt(10)", rho, err)
	}
	eps, ok, err := cfg.UserEpsilonBound()
	want, _ := accountant.GaussianEpsilon(cfg.Policy.DP.NoiseMultiplier/math.Sqrt(10), cfg.Delta)
	if err != nil || !ok || eps < want || eps > want*(1+1e-4) {
		t.Fatalf("user bound %v %v %v, want %v", eps, ok, err, want)
	}
	if d := cfg.Describe(); !strings.Contains(d, "bandmf noise (16 bands: a user's updates at least 16 apart, at most 10") {
		t.Fatalf("description %q", d)
	}
	tree := cartpoleConfig(8)
	tree.Policy.DP.Noise, tree.Policy.DP.Horizon = policy.NoiseTree, 8
	if err := tree.Validate(); err == nil || !strings.Contains(err.Error(), "in-process training only") {
		t.Fatalf("tree noise: %v", err)
	}
	base := Settings{DataDir: t.TempDir(), EnvSpec: "cartpole", Delta: 1e-5, MaxUpdatesPerUser: 10, SessionMemoryMiB: 1024,
		MaxOpenSessions: 100, MaxStepsPerSession: 100, MaxSessionsPerUser: 1, MaxSessionsPerConnection: 100, MaxQueuedPerUser: 1,
		IdleTimeout: time.Minute, FlushTimeout: time.Minute, MaxSessionLifetime: time.Hour, RewardLow: math.NaN(), RewardHigh: math.NaN(), NATS: "embedded"}
	for _, tc := range []struct {
		noise string
		band  int
		want  string // "" for valid
	}{
		{"bandmf", 32, ""},
		{"", 0, ""},
		{"independent", 0, ""},
		{"bandmf", 0, "Band 0"},
		{"independent", 4, "Band 4"},
		{"tree", 0, `Noise "tree"`},
	} {
		s := base
		s.Noise, s.Band = tc.noise, tc.band
		sc, err := s.ServiceConfig()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q %d: %v", tc.noise, tc.band, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q %d: %v, want %q", tc.noise, tc.band, err, tc.want)
		case tc.want == "" && tc.noise == "bandmf" && (sc.Agent.Policy.DP.Noise != policy.NoiseBandedSqrt || sc.Agent.Policy.DP.Band != tc.band):
			t.Errorf("%q %d: DP config %+v", tc.noise, tc.band, sc.Agent.Policy.DP)
		}
	}
}

// TestBandedRestoreStartsNewStream: an agent with bandmf noise releases,
// is backed up, releases more (published rows of its stream that the
// backup does not know), and is restored from the backup. The restored
// agent's next release must start a new noise stream (StreamStart its own
// version, fresh noise): continuing the old one would draw the rows after
// the backup's head a second time over the same last Band-1 means, whose
// first draws were published. The backup holds no noise record, the
// restored ledger verifies before and after, and the live ledger's stream
// goes on.
func TestBandedRestoreStartsNewStream(t *testing.T) {
	dir := t.TempDir()
	const band, k = 4, 2
	cfg := bandedConfig(2, band, k)
	a, store, stop := startAgent(t, cfg, dir)
	rng := rand.New(rand.NewPCG(3, 4))
	n := 0
	release := func(a *agent.Agent, v uint64) {
		t.Helper()
		for i := 0; i < 2; i++ {
			n++
			if _, end := playEpisode(t, a, fmt.Sprintf("s%d", n), fmt.Sprintf("u%d", n), rng, 16); !end.Used {
				t.Fatalf("s%d set aside: %s", n, end.Reason)
			}
		}
		testutil.EventuallyTrue(t, 20*time.Second, fmt.Sprintf("version %d", v), func() bool { return a.Version() >= v })
	}
	for v := uint64(1); v <= 3; v++ {
		release(a, v)
	}
	b := Backups{Dir: filepath.Join(t.TempDir(), "backups"), Every: time.Hour, Keep: 4}
	res, err := backupOnce(store, b, time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC))
	if err != nil || res == nil || res.Head.Version != 3 {
		t.Fatalf("backup: %+v %v", res, err)
	}
	// Published after the backup: rows 4 and 5 of the stream from version 1.
	release(a, 4)
	release(a, 5)
	if e := agenttest.LastEntry(t, store); e.Correlation == nil || e.Correlation.StreamStart != 1 {
		t.Fatalf("the live stream: %+v", e.Correlation)
	}
	stop()

	// Restore: the backup replaces the data directory.
	restored := filepath.Join(t.TempDir(), "restored")
	if err := os.Rename(res.Dir, restored); err != nil {
		t.Fatal(err)
	}
	a, store, stop = startAgent(t, cfg, restored)
	defer stop()
	if ns, err := store.NoiseState(); err != nil || ns.Version != 0 || len(ns.X) != 0 {
		t.Fatalf("the restored ledger holds a noise state: version %d, %d vectors, %v", ns.Version, len(ns.X), err)
	}
	release(a, 4)
	e := agenttest.LastEntry(t, store)
	if e.PolicyVersion != 4 || e.Correlation == nil || e.Correlation.StreamStart != 4 {
		t.Fatalf("the restored agent's release %d continues the stream of version %+v; want a new stream from version 4", e.PolicyVersion, e.Correlation)
	}
	release(a, 5)
	if e := agenttest.LastEntry(t, store); e.Correlation == nil || e.Correlation.StreamStart != 4 {
		t.Fatalf("the new stream does not go on: %+v", e.Correlation)
	}
	if ns, err := store.NoiseState(); err != nil || ns.StreamStart != 4 || ns.Version != 5 || len(ns.X) != 2 {
		t.Fatalf("the new stream's state: start %d version %d, %d vectors, %v", ns.StreamStart, ns.Version, len(ns.X), err)
	}
	if r, err := store.Verify(); err != nil || !r.OK() {
		t.Fatalf("verify after the restore: %+v %v", r, err)
	}
}
