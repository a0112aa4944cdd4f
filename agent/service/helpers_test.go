package service

// Test fixtures shared with the agent package's tests: copies, because the
// agent's internal tests and these cannot share a file (the agent's tests
// cannot import agent/service, whose tests need the agent's fixtures).

import (
	"context"
	"dprl/agent"
	"dprl/offline/qlearn"
	"dprl/policy/sac"
	"dprl/profile"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"dprl/ledger"
	"dprl/policy"
	"dprl/sessionlog"
	"dprl/sims"

	"github.com/prometheus/client_golang/prometheus"
)

func cartpoleConfig(K int) agent.Config {
	pc := policy.DefaultControlConfig()
	pc.DP.UsersPerUpdate = K
	cfg := agent.DefaultConfig(policy.Spec{ObsDim: 4, Kind: policy.ActionDiscrete, NumActions: 2}, pc)
	cfg.Seed = 7
	cfg.Workers = 2
	return cfg
}

func openStore(t testing.TB, dir string) *ledger.Store {
	t.Helper()
	s, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func startAgent(t *testing.T, cfg agent.Config, dir string) (*agent.Agent, *ledger.Store, func()) {
	t.Helper()
	store := openStore(t, dir)
	a, err := agent.New(cfg, store, agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	return a, store, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		store.Close()
	}
}

// playEpisode runs one cartpole episode of at most maxSteps through the agent.
func playEpisode(t *testing.T, a *agent.Agent, id, user string, rng *rand.Rand, maxSteps int) (float64, agent.EndResult) {
	t.Helper()
	env := sims.NewCartPole()
	obs := make([]float64, 4)
	env.Reset(rng, obs)
	var ret, reward float64
	first := true
	for step := 0; step < maxSteps; step++ {
		res, err := a.Act(id, user, obs, reward, !first)
		if err != nil {
			t.Fatalf("act %s step %d: %v", id, step, err)
		}
		first = false
		r, term, trunc := env.Step(res.Action, obs)
		ret += r
		if term || trunc || step == maxSteps-1 {
			end, err := a.End(id, user, r, term)
			if err != nil {
				t.Fatalf("end %s: %v", id, err)
			}
			return ret, end
		}
		reward = r
	}
	return ret, agent.EndResult{}
}

// loggedSessions reads every session of the one session log file in dir.
func loggedSessions(t *testing.T, dir string, spec sessionlog.Spec) []sessionlog.Session {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "sessions-*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("session log files %v, want one", files)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := sessionlog.NewReader(f, sessionlog.ReaderOptions{Spec: spec})
	var ss []sessionlog.Session
	for {
		s, err := r.Next()
		if err == io.EOF {
			return ss
		}
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
	}
}

var obs4 = []float64{0.01, -0.02, 0.03, 0.04}

// hugeReward is finite and accepted on the wire, but a few of them overflow
// a return to +Inf: the session's local update is then non-finite.
const hugeReward = math.MaxFloat64 / 2

// bandedConfig is cartpoleConfig(K) with bandmf noise of band bands and a
// cap of k updates per user.
func bandedConfig(K, band, k int) agent.Config {
	cfg := cartpoleConfig(K)
	cfg.Policy.DP.Noise, cfg.Policy.DP.Band = policy.NoiseBandedSqrt, band
	cfg.MaxUpdatesPerUser = k
	return cfg
}

// lastEntry returns the ledger's last entry.
func lastEntry(t *testing.T, s *ledger.Store) ledger.Entry {
	t.Helper()
	var last ledger.Entry
	if err := s.Entries(func(e ledger.Entry) error { last = e; return nil }); err != nil {
		t.Fatal(err)
	}
	return last
}

// metricValue reads a counter or gauge.
func metricValue(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	if d.Counter != nil {
		return d.Counter.GetValue()
	}
	return d.Gauge.GetValue()
}

// sacSnapshot returns the actor snapshot of a small SAC agent for obsDim
// observations and the action box [low, high] (trained for a few updates
// on random transitions, so that its parameters are not the
// initialisation's), as dprl offline primorl --out writes one.
func sacSnapshot(t testing.TB, obsDim int, low, high []float64) []byte {
	t.Helper()
	return sacSnapshotWith(t, obsDim, low, high, privateProv)
}

// sacSnapshotWith is sacSnapshot with the provenance p.
func sacSnapshotWith(t testing.TB, obsDim int, low, high []float64, p ledger.Provenance) []byte {
	t.Helper()
	cfg := sac.DefaultConfig()
	cfg.Hidden, cfg.Batch = []int{8, 8}, 4
	rng := rand.New(rand.NewPCG(11, 12))
	a, err := sac.New(cfg, obsDim, low, high, rng)
	if err != nil {
		t.Fatal(err)
	}
	ad := len(low)
	b := sac.Batch{S: make([]float64, 4*obsDim), A: make([]float64, 4*ad), R: make([]float64, 4), S2: make([]float64, 4*obsDim), Terminated: make([]float64, 4)}
	for range 5 {
		for i := range b.S {
			b.S[i], b.S2[i] = rng.NormFloat64(), rng.NormFloat64()
		}
		for i := range b.A {
			b.A[i] = low[i%ad] + (high[i%ad]-low[i%ad])*rng.Float64()
		}
		for i := range b.R {
			b.R[i] = rng.NormFloat64()
		}
		a.Update(b, rng)
	}
	snap, err := a.MarshalActor(p)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// pendulumFixed is the configuration of an agent serving a SAC actor for
// Pendulum (3 observation values, one action in [-2, 2]).
func pendulumFixed(t testing.TB) agent.Config {
	t.Helper()
	spec, pc, err := profile.AgentDefaults("pendulum")
	if err != nil {
		t.Fatal(err)
	}
	f, err := agent.ParseFixedPolicy(sacSnapshot(t, 3, []float64{-2}, []float64{2}), "test.snap")
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.DefaultConfig(spec, pc)
	cfg.Fixed, cfg.Seed = f, 3
	return cfg
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// qSnapshot returns a small BCQ policy for CartPole's spaces (4
// observation values, 2 actions), as dprl offline learn --out writes one,
// after a few plain steps on random transitions so that its parameters
// are not the initialisation's.
func qSnapshot(t testing.TB) []byte { return qSnapshotWith(t, privateProv) }

// qSnapshotWith is qSnapshot with the provenance p.
func qSnapshotWith(t testing.TB, p ledger.Provenance) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 8))
	cfg := qlearn.DefaultConfig()
	cfg.Algo, cfg.Hidden, cfg.Batch = qlearn.BCQ, []int{8}, 16
	l, err := qlearn.New(cfg, 4, 2, rng)
	if err != nil {
		t.Fatal(err)
	}
	d := &qlearn.Data{ObsDim: 4, NumActions: 2, Start: []int{0, 32}}
	for range 32 {
		for range 4 {
			d.Obs, d.Next = append(d.Obs, rng.NormFloat64()), append(d.Next, rng.NormFloat64())
		}
		d.Actions, d.Rewards, d.Terminal = append(d.Actions, rng.IntN(2)), append(d.Rewards, 1), append(d.Terminal, false)
	}
	for range 20 {
		l.Step(d, rng)
	}
	snap := l.Snapshot()
	snap.Env = "cartpole"
	snap.SetProvenance(p)
	b, err := snap.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
