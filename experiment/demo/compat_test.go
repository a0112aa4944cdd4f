package demo

import (
	"os"
	"path/filepath"
	"testing"

	"dprl/agent"
	"dprl/internal/testutil"
	"dprl/ledger"
)

// TestResumesEarlierLedger resumes an agent from the data directory an
// earlier version's dprl demo wrote (ledger/testdata/compat, see its
// README): the upgraded agent must accept the stored policy spec, decode
// the stored snapshot of the last release and serve it.
func TestResumesEarlierLedger(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agent")
	testutil.MustCopyTree(t, "../../ledger/testdata/compat/2026-11-25/agent", dir)
	for _, f := range []string{"user.key", "ledger.heads"} {
		if err := os.Chmod(filepath.Join(dir, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{Env: "cartpole", Users: 120, Concurrency: 16, Returning: 0.2, Seed: 7, Pace: PaceLockstep, EvalEvery: 1, EvalEpisodes: 10, Z: 1, K: 32}
	ac := agentConfigOf(t, cfg)
	store, err := ledger.Open(dir, ledger.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	a, err := agent.New(ac, store, agent.Options{})
	if err != nil {
		t.Fatalf("resume from the earlier ledger: %v", err)
	}
	if a.Version() != 3 {
		t.Fatalf("serving version %d, want 3", a.Version())
	}
	res, err := a.Act("s1", "u1", make([]float64, ac.Spec.ObsDim), 0, false)
	if err != nil || res.Version != 3 {
		t.Fatalf("act: %+v %v", res, err)
	}
}
