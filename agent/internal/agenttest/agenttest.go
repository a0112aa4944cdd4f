// Package agenttest holds the fixtures the tests of package agent and of
// agent/service share: released snapshots for a fixed policy (a SAC actor,
// a Q-network policy) and their provenance, a ledger store, the sessions of
// a session log and a ledger's last entry. It imports neither package, so
// the internal tests of both can use it; fixtures built on the agent's own
// types (a Config, a running Agent) stay in each package's tests.
package agenttest

import (
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"dprl/ledger"
	"dprl/policy"
	"dprl/policy/qnet"
	"dprl/policy/sac"
	"dprl/sessionlog"
)

// PrivateProvenance is the provenance of a private offline run: (10,
// 1e-5)-DP per expert, charged by ledger entry 3.
func PrivateProvenance() ledger.Provenance {
	return ledger.Provenance{Private: true, Epsilon: 10, Delta: 1e-5, Unit: ledger.UnitExpert, LedgerSeq: 3}
}

// SACSnapshot is a small SAC actor for observations of obsDim values and
// actions in the box [low, high], trained a few steps on random data from
// a fixed seed, marshalled with the provenance p.
func SACSnapshot(tb testing.TB, obsDim int, low, high []float64, p ledger.Provenance) []byte {
	tb.Helper()
	cfg := sac.DefaultConfig()
	cfg.Hidden, cfg.Batch = []int{8, 8}, 4
	rng := rand.New(rand.NewPCG(11, 12))
	a, err := sac.New(cfg, obsDim, low, high, rng)
	if err != nil {
		tb.Fatal(err)
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
		tb.Fatal(err)
	}
	return snap
}

// QSnapshot is a small BCQ Q-network policy for CartPole (4 observation
// values, 2 actions, one hidden layer of 8), its Q-network and imitation
// network drawn from a fixed seed (a served policy's behaviour is all the
// agent's tests need, not its training), marshalled with the provenance p.
func QSnapshot(tb testing.TB, p ledger.Provenance) []byte {
	tb.Helper()
	rng := rand.New(rand.NewPCG(7, 8))
	n, err := policy.MLPParams(4, 8, 2)
	if err != nil {
		tb.Fatal(err)
	}
	draw := func() []float64 {
		w := make([]float64, n)
		for i := range w {
			w[i] = 0.3 * rng.NormFloat64()
		}
		return w
	}
	snap := qnet.Snapshot{Format: qnet.SnapshotFormat, Algo: qnet.BCQ, Env: "cartpole", ObsDim: 4, Actions: 2, Hidden: []int{8},
		Threshold: 0.3, Q: draw(), G: draw()}
	snap.SetProvenance(p)
	b, err := snap.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// OpenStore opens the ledger store in dir, failing the test on an error.
func OpenStore(tb testing.TB, dir string) *ledger.Store {
	tb.Helper()
	s, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// LoggedSessions reads the sessions of the one session-log file in dir.
func LoggedSessions(tb testing.TB, dir string, spec sessionlog.Spec) []sessionlog.Session {
	tb.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "sessions-*.jsonl"))
	if len(files) != 1 {
		tb.Fatalf("session log files %v, want one", files)
	}
	f, err := os.Open(files[0])
	if err != nil {
		tb.Fatal(err)
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
			tb.Fatal(err)
		}
		ss = append(ss, s)
	}
}

// LastEntry is the last entry of the ledger s.
func LastEntry(tb testing.TB, s *ledger.Store) ledger.Entry {
	tb.Helper()
	var last ledger.Entry
	if err := s.Entries(func(e ledger.Entry) error { last = e; return nil }); err != nil {
		tb.Fatal(err)
	}
	return last
}
