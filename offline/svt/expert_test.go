package svt

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/policy"
	"dprl/sessionlog"
	"dprl/sims"
)

// randomSnapshot returns a snapshot of a random discrete policy.
func randomSnapshot(t *testing.T, obsDim, nAct int, seed uint64) *policy.Snapshot {
	t.Helper()
	spec := policy.Spec{ObsDim: obsDim, Kind: policy.ActionDiscrete, NumActions: nAct}
	cfg := policy.DefaultControlConfig()
	cfg.PPO.Hidden = []int{8}
	n, err := policy.NumSnapshotParams(spec, cfg.PPO.Hidden)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	theta := make([]float64, n)
	for i := range theta {
		theta[i] = rng.NormFloat64()
	}
	s, err := policy.NewSnapshot(spec, cfg, 1, theta)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSmoothedExpert(t *testing.T) {
	for _, nAct := range []int{2, 3} {
		const pMin = 0.02
		e, err := NewSmoothedExpert("e0", randomSnapshot(t, 4, nAct, 1), pMin)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(2, 3))
		obs := make([]float64, 4)
		for range 50 {
			for i := range obs {
				obs[i] = rng.NormFloat64()
			}
			g := e.Greedy(obs)
			var sum float64
			for a := range nAct {
				p := e.Prob(obs, a)
				sum += p
				want := pMin
				if a == g {
					want = 1 - float64(nAct-1)*pMin
				}
				if p != want {
					t.Errorf("|A|=%d: P(%d) = %v, want %v (greedy %d)", nAct, a, p, want, g)
				}
			}
			if math.Abs(sum-1) > 1e-12 {
				t.Errorf("|A|=%d: probabilities sum to %v", nAct, sum)
			}
		}
		// Sample follows Prob.
		const n = 100000
		counts := make([]int, nAct)
		for range n {
			a, p := e.Sample(rng, obs)
			if p != e.Prob(obs, a) {
				t.Fatalf("Sample returned prob %v for action %d, Prob says %v", p, a, e.Prob(obs, a))
			}
			counts[a]++
		}
		for a := range nAct {
			p := e.Prob(obs, a)
			if se := math.Sqrt(p * (1 - p) / n); math.Abs(float64(counts[a])/n-p) > 5*se {
				t.Errorf("|A|=%d: action %d sampled %.4f, want %.4f", nAct, a, float64(counts[a])/n, p)
			}
		}
	}
	if _, err := NewSmoothedExpert("e0", randomSnapshot(t, 4, 3, 1), 0.4); err == nil {
		t.Error("p_min 0.4 > 1/3 accepted")
	}
	if _, err := NewSmoothedExpert("e0", randomSnapshot(t, 4, 2, 1), 0); err == nil {
		t.Error("p_min 0 accepted")
	}
	cont := randomSnapshot(t, 4, 2, 1)
	cont.Spec = policy.Spec{ObsDim: 4, Kind: policy.ActionContinuous, ActionDim: 1}
	if _, err := NewSmoothedExpert("e0", cont, 0.02); !errors.Is(err, ErrExpertMismatch) {
		t.Errorf("continuous snapshot: %v", err)
	}
}

func TestCheckID(t *testing.T) {
	for _, id := range []string{"e0", "expert_17", "A.b-c"} {
		if err := CheckID(id); err != nil {
			t.Errorf("%q: %v", id, err)
		}
	}
	for _, id := range []string{"", ".hidden", "a/b", "..", "a b", "é", strings.Repeat("x", 129)} {
		if err := CheckID(id); err == nil {
			t.Errorf("%q accepted", id)
		}
	}
}

func TestLoadExperts(t *testing.T) {
	dir := t.TempDir()
	for i, id := range []string{"e0", "e1"} {
		if err := WriteExpert(dir, id, randomSnapshot(t, 4, 2, uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteExpert(dir, "three", randomSnapshot(t, 4, 3, 9)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.snap"), []byte("not a snapshot"), 0o600); err != nil {
		t.Fatal(err)
	}
	ex, err := LoadExperts(dir, []string{"e0", "e1"}, 4, 2, 0.02)
	if err != nil || len(ex) != 2 || ex[1].ID != "e1" {
		t.Fatalf("LoadExperts: %v", err)
	}
	cases := []struct {
		name   string
		ids    []string
		obsDim int
		nAct   int
		is     error
		text   string
	}{
		{"missing", []string{"e0", "e9", "e8"}, 4, 2, ErrUnknownExpert, "2 expert id(s) of the log have no .snap file"},
		{"obs dim", []string{"e0"}, 6, 2, ErrExpertMismatch, "obs_dim 4 in the snapshot != 6 in the log"},
		{"too few actions", []string{"e0"}, 4, 3, ErrExpertMismatch, "2 actions in the snapshot, the log uses action 2"},
		{"mixed action counts", []string{"e0", "three"}, 4, 2, ErrExpertMismatch, "3 actions"},
		{"corrupt", []string{"bad"}, 4, 2, policy.ErrCorruptSnapshot, "bad"},
		{"bad id", []string{"../e0"}, 4, 2, nil, "expert id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadExperts(dir, c.ids, c.obsDim, c.nAct, 0.02)
			if err == nil || (c.is != nil && !errors.Is(err, c.is)) || !strings.Contains(err.Error(), c.text) {
				t.Errorf("err %v, want %v containing %q", err, c.is, c.text)
			}
		})
	}
}

func TestPaperVariations(t *testing.T) {
	v, err := PaperVariations("cartpole", 1500, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[3]int]bool{}
	lo, hi := sims.CartPoleParams{Gravity: 100, ForceMag: 100, CartMass: 100}, sims.CartPoleParams{}
	for j, x := range v[:1000] {
		if seen[x.Cell] {
			t.Fatalf("cell %v repeated within the first 1000", x.Cell)
		}
		seen[x.Cell] = true
		p := x.CartPole
		if p == nil || x.Acrobot != nil || p.PoleMass != 0.1 || p.HalfPoleLength != 0.5 {
			t.Fatalf("variation %d: %+v", j, x)
		}
		lo.Gravity, hi.Gravity = min(lo.Gravity, p.Gravity), max(hi.Gravity, p.Gravity)
		lo.ForceMag, hi.ForceMag = min(lo.ForceMag, p.ForceMag), max(hi.ForceMag, p.ForceMag)
		lo.CartMass, hi.CartMass = min(lo.CartMass, p.CartMass), max(hi.CartMass, p.CartMass)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if !near(lo.Gravity, 8.75) || !near(hi.Gravity, 11) || !near(lo.ForceMag, 9) || !near(hi.ForceMag, 11.25) || !near(lo.CartMass, 0.8) || !near(hi.CartMass, 1.25) {
		t.Errorf("ranges %+v .. %+v, want the paper's", lo, hi)
	}
	if v[1000].Cell != v[0].Cell {
		t.Error("cells are not cycled after 1000")
	}
	a, err := PaperVariations("acrobot", 3, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range a {
		p := x.Acrobot
		if p == nil || p.Link1Length != p.Link2Length || p.Link1Length < 0.8 || p.Link1Length > 1.2 || p.Link1Mass < 0.9 || p.Link2Mass > 1.1 {
			t.Errorf("acrobot variation %+v", p)
		}
		if _, err := x.NewEnv(); err != nil {
			t.Error(err)
		}
	}
	if _, err := PaperVariations("pendulum", 3, rand.New(rand.NewPCG(1, 2))); err == nil {
		t.Error("pendulum accepted")
	}
}

// smallGen is a quick generation configuration (one PPO update per expert).
func smallGen(env string, workers int) GenConfig {
	cfg := policy.DefaultControlConfig()
	cfg.PPO.Hidden = []int{8}
	cfg.DP = policy.DPConfig{Mode: policy.ModePPO, UsersPerUpdate: 8}
	return GenConfig{Env: env, Experts: 4, Trajectories: 2, PMin: 0.02, Train: cfg, Users: 8, Workers: workers}
}

func TestGenerate(t *testing.T) {
	var logs [2][]byte
	for i, workers := range []int{1, 3} {
		dir := t.TempDir()
		var buf bytes.Buffer
		w := sessionlog.NewWriter(&buf)
		cfg := smallGen("cartpole", workers)
		res, err := Generate(context.Background(), cfg, dir, w, rand.New(rand.NewPCG(7, 7)), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		logs[i] = buf.Bytes()
		if res.Sessions != 8 || len(res.Experts) != 4 {
			t.Fatalf("%+v", res)
		}
		// The log reads back and every step matches its smoothed expert.
		rd := sessionlog.NewReader(bytes.NewReader(buf.Bytes()), sessionlog.ReaderOptions{})
		ex, err := LoadExperts(dir, []string{"e0", "e1", "e2", "e3"}, 4, 2, 0.02)
		if err != nil {
			t.Fatal(err)
		}
		var steps int
		for k := 0; ; k++ {
			s, err := rd.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := ex[k/2].ID; s.Expert != want {
				t.Fatalf("session %d by %q, want %q (expert order)", k, s.Expert, want)
			}
			if err := CheckBehaviour(&s, ex[k/2]); err != nil {
				t.Fatal(err)
			}
			other, err := LoadExperts(dir, []string{s.Expert}, 4, 2, 0.05)
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckBehaviour(&s, other[0]); !errors.Is(err, ErrExpertMismatch) {
				t.Errorf("log at p_min 0.02 checked against p_min 0.05: %v", err)
			}
			// A step without a behaviour probability cannot be checked.
			last := &s.Steps[len(s.Steps)-1]
			last.LogP, last.NoProb = math.NaN(), true
			if err := CheckBehaviour(&s, ex[k/2]); !errors.Is(err, ErrExpertMismatch) || !strings.Contains(err.Error(), "no behaviour probability") {
				t.Errorf("step without a probability: %v", err)
			}
			steps += len(s.Steps)
		}
		if steps != res.Steps {
			t.Errorf("logged %d steps, result says %d", steps, res.Steps)
		}
	}
	if !bytes.Equal(logs[0], logs[1]) {
		t.Error("the log depends on the number of workers")
	}
}

func TestGenerateBases(t *testing.T) {
	cfg := smallGen("acrobot", 2)
	cfg.Bases, cfg.FineTuneUsers = 2, 8
	var buf bytes.Buffer
	res, err := Generate(context.Background(), cfg, t.TempDir(), sessionlog.NewWriter(&buf), rand.New(rand.NewPCG(1, 1)), nil)
	if err != nil {
		t.Fatal(err)
	}
	for j, e := range res.Experts {
		if e.Base != j%2 || e.TrainUsers != 8 || e.Variation.Acrobot == nil {
			t.Errorf("expert %d: %+v", j, e)
		}
	}
	bad := smallGen("cartpole", 1)
	bad.Experts, bad.PMin, bad.Train.DP.Mode = 0, 0, policy.ModeDP
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "experts M = 0") || !strings.Contains(err.Error(), "p_min") || !strings.Contains(err.Error(), "ppo") {
		t.Errorf("Validate: %v", err)
	}
}
