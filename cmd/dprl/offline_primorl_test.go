package main

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/internal/testutil"
	"dprl/ledger"
	"dprl/offline/primorl"
	"dprl/policy/sac"
	"dprl/sessionlog"
	"dprl/sims"
)

// pendulumLog writes n random-torque Pendulum episodes of 50 steps as a
// session log and returns its path.
func pendulumLog(t *testing.T, dir string, n int) string {
	t.Helper()
	return pendulumLogSeed(t, dir, n, 1)
}

// pendulumLogSeed is pendulumLog with the episodes' seed.
func pendulumLogSeed(t *testing.T, dir string, n int, seed uint64) string {
	t.Helper()
	path := filepath.Join(dir, "pendulum.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := sessionlog.NewWriter(f)
	rng := rand.New(rand.NewPCG(seed, 2))
	env := sims.NewPendulum()
	for i := range n {
		obs := make([]float64, 3)
		env.Reset(rng, obs)
		s := sessionlog.Session{Session: "p" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)}
		for range 50 {
			a := sims.Action{Vec: []float64{4*rng.Float64() - 2}}
			next := append([]float64(nil), obs...)
			r, _, _ := env.Step(a, next)
			s.Steps = append(s.Steps, sessionlog.Step{Obs: obs, Action: a, Reward: r, LogP: -1.3862943611198906})
			obs = next
		}
		s.FinalObs = obs
		if err := w.Write(&s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOfflinePriMORL runs a small private PriMORL, checks the printed and
// charged guarantee (the ledger entry names q, z, T and the PLD
// accountant), that a run over the dataset's cap is refused without an
// entry, the non-private ablation's label, and the usage errors.
func TestOfflinePriMORL(t *testing.T) {
	dir := t.TempDir()
	data := pendulumLog(t, dir, 40)
	led := filepath.Join(dir, "ledger")
	small := []string{"--batch", "8", "--rounds", "20", "--sac-steps", "300", "--sac-hidden", "8", "--model-hidden", "8,8", "--eval-episodes", "1"}
	snap := filepath.Join(dir, "policy.snap")
	code, out, stderr := runCLI(t, append([]string{"offline", "primorl", "--data", data, "--env", "pendulum", "--epsilon", "4", "--delta", "1e-5",
		"--ledger", led, "--seed", "7", "--out", snap, "--json", "--log-level", "disabled"}, small...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r primorl.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if !r.Private || r.Epsilon > 4 || r.Epsilon < 3.99 || r.Q != 0.2 || r.Rounds != 20 || r.N != 40 || !(r.Z > 0) || !r.Seeded || r.Accountant != "pld" || !(r.RDPEpsilon >= r.Epsilon) {
		t.Fatalf("result %+v", r)
	}
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	a, err := sac.LoadActor(b)
	if err != nil || a.ObsDim() != 3 || a.ActDim() != 1 || r.Out != snap {
		t.Fatalf("released policy: %v (out %q)", err, r.Out)
	}
	// The snapshot records the run's charge: its provenance.
	if p, ok := a.Provenance(); !ok || p != (ledger.Provenance{Private: true, Epsilon: r.Epsilon, Delta: r.Delta, Unit: ledger.UnitTrajectory, LedgerSeq: r.LedgerSeq}) || r.LedgerSeq == 0 {
		t.Fatalf("released policy's provenance %+v (recorded %v), run %+v", p, ok, r)
	}
	// An existing --out is refused before anything is charged.
	if code, _, stderr := runCLI(t, append([]string{"offline", "primorl", "--data", data, "--epsilon", "1", "--ledger", led, "--out", snap}, small...)...); code != 2 || !strings.Contains(stderr, "--out") {
		t.Fatalf("existing --out: exit %d (%s)", code, stderr)
	}
	s, err := ledger.Open(led, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var entries []ledger.Entry
	err = s.Entries(func(e ledger.Entry) error { entries = append(entries, e); return nil })
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("%d entries, want 1", len(entries))
	}
	e := entries[0]
	if e.Unit != ledger.UnitTrajectory || e.Method != "pld" || len(e.Events) != 1 || e.Events[0].Q != 0.2 || e.Events[0].Z != r.Z ||
		e.Events[0].Steps != 20 || e.Epsilon != r.Epsilon || !strings.Contains(e.Mechanism, "primorl") || !e.Seeded {
		t.Fatalf("ledger entry %+v", e)
	}
	// Over the dataset's cap: refused before anything is written.
	fresh := filepath.Join(dir, "fresh")
	code, _, stderr = runCLI(t, append([]string{"offline", "primorl", "--data", data, "--env", "pendulum", "--epsilon", "12",
		"--dataset-epsilon", "10", "--ledger", fresh, "--log-level", "disabled"}, small...)...)
	if code == 0 || !strings.Contains(stderr, "budget exceeded") || ledgerEntries(t, fresh) != 0 {
		t.Fatalf("over the cap: exit %d (%s), %d entries", code, stderr, ledgerEntries(t, fresh))
	}
	// The ablation is labelled and not charged.
	npSnap := filepath.Join(dir, "np.snap")
	code, out, stderr = runCLI(t, append([]string{"offline", "primorl", "--data", data, "--env", "pendulum", "--non-private",
		"--ledger", fresh, "--seed", "1", "--log-level", "disabled", "--out", npSnap}, small...)...)
	if code != 0 || !strings.Contains(out, "NOT differentially private") || ledgerEntries(t, fresh) != 0 {
		t.Fatalf("non-private: exit %d (%s), output %q", code, stderr, out)
	}
	// Its snapshot records that it is not private.
	if b, err := os.ReadFile(npSnap); err != nil {
		t.Fatal(err)
	} else if a, err := sac.LoadActor(b); err != nil {
		t.Fatal(err)
	} else if p, ok := a.Provenance(); !ok || p != (ledger.Provenance{}) {
		t.Fatalf("non-private snapshot's provenance %+v (recorded %v), want NOT private", p, ok)
	}
	for _, args := range [][]string{
		{"--env", "cartpole"},               // no public scales (discrete)
		{"--clip-mode", "sideways"},         // unknown mode
		{"--non-private", "--epsilon", "3"}, // no epsilon without noise
		{"--rounds", "0"},                   // range
		{"--batch", "100"},                  // q > 1 for n = 40
	} {
		full := append([]string{"offline", "primorl", "--data", data, "--ledger", filepath.Join(dir, "u"), "--log-level", "disabled"}, args...)
		if code, _, stderr := runCLI(t, full...); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, stderr)
		}
	}
}

// TestOfflinePriMORLPublicAndMOPO: early stopping on a public log stops
// before T but charges T; the private log, or a malformed one, is refused as
// public before anything is charged; the MOPO baseline is labelled and not
// charged; the flags that do not combine are usage errors.
func TestOfflinePriMORLPublicAndMOPO(t *testing.T) {
	dir := t.TempDir()
	data := pendulumLog(t, dir, 40)
	pdir := filepath.Join(dir, "p")
	if err := os.Mkdir(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	pub := pendulumLogSeed(t, pdir, 4, 9) // other episodes than the private log's
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"session\":\"x\",\"steps\":[{\"obs\":[1,0],\"action\":[0],\"reward\":0}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	led := filepath.Join(dir, "ledger")
	small := []string{"--batch", "8", "--sac-steps", "300", "--sac-hidden", "8", "--model-hidden", "8,8", "--eval-episodes", "1", "--log-level", "disabled"}
	code, out, stderr := runCLI(t, append([]string{"offline", "primorl", "--data", data, "--epsilon", "4", "--ledger", led, "--seed", "3",
		"--rounds", "300", "--public-data", pub, "--check-every", "1", "--patience", "2", "--json"}, small...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r primorl.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Rounds != 300 || !(r.RoundsRun >= 2 && r.RoundsRun < 300) || r.PublicData != pub {
		t.Fatalf("rounds %d, run %d, public %q: want an early stop of 300 rounds", r.Rounds, r.RoundsRun, r.PublicData)
	}
	s, err := ledger.Open(led, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var charged int
	err = s.Entries(func(e ledger.Entry) error { charged += e.Events[0].Steps; return nil })
	s.Close()
	if err != nil || charged != 300 {
		t.Fatalf("charged %d rounds (%v), want 300", charged, err)
	}
	fresh := filepath.Join(dir, "fresh")
	for _, args := range [][]string{
		{"--epsilon", "4", "--public-data", data},                      // the private log itself
		{"--epsilon", "4", "--public-data", bad},                       // malformed
		{"--mopo", "--public-data", pub},                               // MOPO has no rounds
		{"--mopo", "--epsilon", "3"},                                   // no epsilon without noise
		{"--epsilon", "4", "--mopo-epochs", "2"},                       // MOPO's flags without --mopo
		{"--epsilon", "4", "--check-every", "0", "--public-data", pub}, // range
	} {
		full := append(append([]string{"offline", "primorl", "--data", data, "--ledger", fresh}, small...), args...)
		if code, _, stderr := runCLI(t, full...); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, stderr)
		}
	}
	if n := ledgerEntries(t, fresh); n != 0 {
		t.Fatalf("refused runs left %d entries", n)
	}
	fig := filepath.Join(dir, "curve.png")
	code, out, stderr = runCLI(t, append([]string{"offline", "primorl", "--data", data, "--mopo", "--mopo-epochs", "1", "--ledger", fresh, "--seed", "1", "--plot", fig}, small...)...)
	if code != 0 || !strings.Contains(out, "mopo on pendulum: NOT differentially private") || ledgerEntries(t, fresh) != 0 {
		t.Fatalf("mopo: exit %d (%s), output %q", code, stderr, out)
	}
	if st, err := os.Stat(fig); err != nil || st.Size() < 1000 {
		t.Fatalf("--plot: %v", err)
	}
	if code, _, stderr := runCLI(t, "offline", "primorl", "--data", data, "--epsilon", "1", "--ledger", fresh, "--plot", "curve.bmp"); code != 2 || !strings.Contains(stderr, "--plot") || ledgerEntries(t, fresh) != 0 {
		t.Fatalf("--plot curve.bmp: exit %d (%s)", code, stderr)
	}
	// dprl plot primorl: the summary table and the figure.
	res := filepath.Join(dir, "r.json")
	code, out, stderr = runCLI(t, append([]string{"offline", "primorl", "--data", data, "--epsilon", "3", "--ledger", filepath.Join(dir, "l3"), "--seed", "1", "--rounds", "5", "--json"}, small...)...)
	if code != 0 || os.WriteFile(res, []byte(out), 0o644) != nil {
		t.Fatalf("exit %d (%s)", code, stderr)
	}
	fig4 := filepath.Join(dir, "fig4.png")
	code, out, stderr = runCLI(t, "plot", "primorl", "--out", fig4, res)
	if code != 0 || !strings.Contains(out, "epsilon 3 ") || !strings.Contains(out, "1 run:") {
		t.Fatalf("plot primorl: exit %d (%s), output %q", code, stderr, out)
	}
	if code, _, _ := runCLI(t, "plot", "primorl", data); code != 2 {
		t.Fatalf("plot primorl on a session log: exit %d, want 2", code)
	}
}

// publicCopies writes, in dir, copies of the log at src that hold its
// records: an exact copy, a subset, an id-renamed copy, a copy without
// behaviour probabilities and a reformatted copy (keys reordered, numbers
// spelt by encoding/json, spaces, CRLF).
func publicCopies(t *testing.T, dir, src string) map[string]string {
	t.Helper()
	ss := mustReadSessions(t, src)
	write := func(name string, ss []sessionlog.Session) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		w := sessionlog.NewWriter(f)
		for i := range ss {
			if err := w.Write(&ss[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	out := map[string]string{"copy": write("copy.jsonl", ss), "subset": write("subset.jsonl", ss[3:7])}
	renamed := make([]sessionlog.Session, len(ss))
	noProb := make([]sessionlog.Session, len(ss))
	for i, s := range ss {
		r := s
		r.Session, r.User, r.Expert = "renamed-"+s.Session, "u", "e"
		renamed[i] = r
		n := s
		n.Steps = make([]sessionlog.Step, len(s.Steps))
		for j, st := range s.Steps {
			st.NoProb = true
			n.Steps[j] = st
		}
		noProb[i] = n
	}
	out["renamed"], out["stripped"] = write("renamed.jsonl", renamed), write("stripped.jsonl", noProb)
	out["reformatted"] = testutil.ReformatLog(t, src, filepath.Join(dir, "reformatted.jsonl"), " , ")
	return out
}

// TestOfflinePriMORLPublicCopies: a copy of the private log, a subset of it,
// or an id-renamed, probability-stripped or reformatted copy is refused as
// --public-data before anything is charged, on the dataset's first run (the
// records are the run's own input) as after it (the ledger holds them).
func TestOfflinePriMORLPublicCopies(t *testing.T) {
	dir := t.TempDir()
	data := pendulumLog(t, dir, 40)
	cdir := filepath.Join(dir, "copies")
	if err := os.Mkdir(cdir, 0o755); err != nil {
		t.Fatal(err)
	}
	copies := publicCopies(t, cdir, data)
	led := filepath.Join(dir, "ledger")
	small := []string{"--batch", "8", "--rounds", "3", "--sac-steps", "50", "--sac-hidden", "8", "--model-hidden", "8,8", "--eval-episodes", "1", "--log-level", "disabled"}
	refused := func(when string, entries uint64) {
		t.Helper()
		for name, pub := range copies {
			full := append([]string{"offline", "primorl", "--data", data, "--env", "pendulum", "--epsilon", "4", "--ledger", led, "--seed", "1",
				"--public-data", pub, "--check-every", "1"}, small...)
			code, _, stderr := runCLI(t, full...)
			if code == 0 || !strings.Contains(stderr, "declared public holds private records") {
				t.Errorf("%s, the %s as --public-data: exit %d (%s), want a refusal", when, name, code, stderr)
			}
			if n := ledgerEntries(t, led); n != entries {
				t.Fatalf("%s, the %s as --public-data: %d ledger entries, want %d", when, name, n, entries)
			}
		}
	}
	refused("first run", 0)
	code, _, stderr := runCLI(t, append([]string{"offline", "primorl", "--data", data, "--env", "pendulum", "--epsilon", "4", "--ledger", led, "--seed", "1"}, small...)...)
	if code != 0 || ledgerEntries(t, led) != 1 {
		t.Fatalf("a private run: exit %d (%s)", code, stderr)
	}
	refused("after a run", 1)
}

// TestOfflinePriMORLSavedModel: --save-model writes the released model
// with the run's provenance; --model trains the policy in it again without
// reading a log or charging anything, and with the same seed and policy
// settings gives the very same policy (its return to the bit) under the
// model's guarantee. The model's settings and a log do not combine with
// --model, another environment's model and a damaged file are refused.
func TestOfflinePriMORLSavedModel(t *testing.T) {
	dir := t.TempDir()
	data := pendulumLog(t, dir, 40)
	led := filepath.Join(dir, "ledger")
	model := filepath.Join(dir, "model.bin")
	policyArgs := []string{"--sac-steps", "300", "--sac-hidden", "8", "--eval-episodes", "1", "--seed", "7", "--json", "--log-level", "disabled"}
	code, out, stderr := runCLI(t, append([]string{"offline", "primorl", "--data", data, "--epsilon", "4", "--ledger", led, "--save-model", model,
		"--batch", "8", "--rounds", "20", "--model-hidden", "8,8"}, policyArgs...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var first primorl.Result
	if err := json.Unmarshal([]byte(out), &first); err != nil {
		t.Fatal(err)
	}
	if first.SavedModel != model || first.LedgerSeq != 1 {
		t.Fatalf("first run %+v", first)
	}
	snap := filepath.Join(dir, "again.snap")
	code, out, stderr = runCLI(t, append([]string{"offline", "primorl", "--model", model, "--out", snap}, policyArgs...)...)
	if code != 0 {
		t.Fatalf("--model: exit %d: %s", code, stderr)
	}
	var again primorl.Result
	if err := json.Unmarshal([]byte(out), &again); err != nil {
		t.Fatal(err)
	}
	if again.Return != first.Return || again.ModelError != first.ModelError || !again.Private || again.Epsilon != first.Epsilon ||
		again.Delta != first.Delta || again.LedgerSeq != first.LedgerSeq || again.Model != model || again.Warning != "" {
		t.Fatalf("in the saved model: %+v\nfirst run: %+v", again, first)
	}
	if n := ledgerEntries(t, led); n != 1 {
		t.Errorf("%d ledger entries after training in the saved model, want the first run's 1", n)
	}
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := sac.LoadActor(b); err != nil {
		t.Fatal(err)
	} else if p, ok := a.Provenance(); !ok || p != (ledger.Provenance{Private: true, Epsilon: first.Epsilon, Delta: first.Delta, Unit: ledger.UnitTrajectory, LedgerSeq: 1}) {
		t.Fatalf("the policy's provenance %+v, want the model's", p)
	}
	code, out, _ = runCLI(t, "offline", "primorl", "--model", model, "--sac-steps", "300", "--sac-hidden", "8", "--eval-episodes", "1", "--log-level", "disabled")
	if code != 0 || !strings.Contains(out, "a policy trained in the released model") || !strings.Contains(out, "nothing charged") {
		t.Errorf("text output: exit %d, %q", code, out)
	}
	// Without --env, the file's environment and its per-task settings: a
	// Balance model trains with Balance's defaults unless given (--select
	// 0 keeps the test fast and, without a rating to choose by, makes one
	// policy, not Balance's two).
	e, err := primorl.NewEnsemble(primorl.DefaultModelConfig(), 6, 6)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := primorl.MarshalModel("cartpole-balance", e, make([]float64, e.NumParams()), ledger.Provenance{})
	if err != nil {
		t.Fatal(err)
	}
	cpModel := filepath.Join(dir, "balance.bin")
	if err := os.WriteFile(cpModel, cb, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = runCLI(t, "offline", "primorl", "--model", cpModel, "--sac-steps", "50", "--sac-hidden", "8", "--eval-episodes", "1", "--select", "0", "--json")
	var cp primorl.Result
	if code != 0 || json.Unmarshal([]byte(out), &cp) != nil || cp.Env != "cartpole-balance" || cp.Private || cp.Warning != primorl.NotPrivateModel ||
		cp.Branch != 0.5 || !cp.PublicReward || cp.SelectedSteps != 0 || cp.PolicyRatings != nil {
		t.Errorf("a Balance model without --env: exit %d (%s), %+v", code, stderr, cp)
	}
	bad := filepath.Join(dir, "bad.bin")
	mb, _ := os.ReadFile(model)
	mb[len(mb)/2] ^= 1
	if err := os.WriteFile(bad, mb, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--model", model, "--data", data},
		{"--model", model, "--epsilon", "3"},
		{"--model", model, "--rounds", "5"},
		{"--model", model, "--model-hidden", "4"},
		{"--model", model, "--env", "cartpole-balance"},
		{"--model", bad},
		{"--model", filepath.Join(dir, "missing.bin")},
	} {
		code, _, stderr := runCLI(t, append([]string{"offline", "primorl", "--log-level", "disabled"}, args...)...)
		if code != 2 || !strings.Contains(stderr, "--model") {
			t.Errorf("%v: exit %d (%s), want 2 naming --model", args, code, stderr)
		}
	}
}
