package policies

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/policy"
)

// writeSnapshot saves a discrete snapshot with random weights and returns
// its path.
func writeSnapshot(t *testing.T, obsDim, actions int) string {
	t.Helper()
	cfg := policy.DefaultControlConfig()
	cfg.PPO.Hidden = []int{4}
	spec := policy.Spec{ObsDim: obsDim, Kind: policy.ActionDiscrete, NumActions: actions}
	n, err := policy.NumSnapshotParams(spec, cfg.PPO.Hidden)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	theta := make([]float64, n)
	for i := range theta {
		theta[i] = rng.NormFloat64()
	}
	s, err := policy.NewSnapshot(spec, cfg, 3, theta)
	if err != nil {
		t.Fatal(err)
	}
	b, err := policy.MarshalSnapshot(s)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pol.snap")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestParse(t *testing.T) {
	snap := writeSnapshot(t, 2, 3)
	pump, _ := Builtin("mountaincar", 2)
	adv, _ := Builtin("chain", 4)
	obsMC := []float64{-0.5, 0.01} // velocity >= 0: pump pushes right
	obsChain := []float64{0, 1, 0, 0}
	cases := []struct {
		name string
		spec string
		o    Options
		obs  []float64
		want []float64 // nil: only check it is a distribution
		err  string
	}{
		{"uniform", "uniform", Options{NumActions: 3}, obsMC, []float64{1. / 3, 1. / 3, 1. / 3}, ""},
		{"random alias", "random", Options{NumActions: 2}, obsChain, []float64{0.5, 0.5}, ""},
		{"eps-greedy chain", "epsilon-greedy:0.2", Options{NumActions: 2, Reference: adv}, obsChain, []float64{0.1, 0.9}, ""},
		{"greedy pump", "greedy", Options{NumActions: 3, Reference: pump}, obsMC, []float64{0, 0, 1}, ""},
		{"eps-greedy pump", "epsilon-greedy:0.3", Options{NumActions: 3, Reference: pump}, []float64{-0.5, -0.01}, []float64{0.8, 0.1, 0.1}, ""},
		{"softmax ref", "softmax:1", Options{NumActions: 2, Reference: adv}, obsChain, []float64{1 / (1 + math.E), math.E / (1 + math.E)}, ""},
		{"snapshot", "snapshot:" + snap, Options{NumActions: 3, ObsDim: 2}, obsMC, nil, ""},
		{"snapshot greedy", "greedy:" + snap, Options{NumActions: 3, ObsDim: 2}, obsMC, nil, ""},
		{"snapshot softmax", "softmax:" + snap + ":0.5", Options{NumActions: 3, ObsDim: 2}, obsMC, nil, ""},
		{"snapshot eps", "epsilon-greedy:" + snap + ":0.1", Options{NumActions: 3}, obsMC, nil, ""},
		{"no reference", "greedy", Options{NumActions: 3}, nil, nil, "needs a reference"},
		{"bad eps", "epsilon-greedy:1.5", Options{NumActions: 2, Reference: adv}, nil, nil, "epsilon 1.5"},
		{"bad temp", "softmax:0", Options{NumActions: 2, Reference: adv}, nil, nil, "temperature 0"},
		{"not a number", "softmax:hot", Options{NumActions: 2, Reference: adv}, nil, nil, "not a number"},
		{"unknown", "boltzmann:2", Options{NumActions: 2}, nil, nil, "want uniform"},
		{"action count", "snapshot:" + snap, Options{NumActions: 2}, nil, nil, "has 3 actions, the data has 2"},
		{"obs dim", "greedy:" + snap, Options{NumActions: 3, ObsDim: 5}, nil, nil, "length 2, the data has 5"},
		{"missing file", "snapshot:/nonexistent/x.snap", Options{NumActions: 3}, nil, nil, "no such file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse(c.spec, c.o)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, ErrSpec) {
					t.Fatalf("err %v, want ErrSpec containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			probs := make([]float64, p.NumActions())
			if err := p.Probs(probs, c.obs); err != nil {
				t.Fatal(err)
			}
			var sum float64
			for a, v := range probs {
				sum += v
				if c.want != nil && math.Abs(v-c.want[a]) > 1e-12 {
					t.Errorf("pi(%d) = %v, want %v", a, v, c.want[a])
				}
			}
			if math.Abs(sum-1) > 1e-12 {
				t.Errorf("probabilities sum to %v", sum)
			}
		})
	}
}

func TestSnapshotObsChecked(t *testing.T) {
	p, err := Parse("greedy:"+writeSnapshot(t, 2, 3), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Probs(make([]float64, 3), []float64{1, 2, 3}); err == nil {
		t.Error("wrong observation length accepted")
	}
	if err := p.Probs(make([]float64, 3), []float64{1, math.NaN()}); err == nil {
		t.Error("NaN observation accepted")
	}
}

func TestSample(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	probs := []float64{0.2, 0, 0.5, 0.3}
	counts := make([]int, len(probs))
	const n = 100000
	for range n {
		counts[Sample(rng, probs)]++
	}
	for a, p := range probs {
		// 5 standard deviations of a binomial proportion.
		if got := float64(counts[a]) / n; math.Abs(got-p) > 5*math.Sqrt(p*(1-p)/n)+1e-12 {
			t.Errorf("action %d: frequency %v, want %v", a, got, p)
		}
	}
	if counts[1] != 0 {
		t.Error("zero-probability action sampled")
	}
}

// TestSnapshotScorerServesAverage: a snapshot that holds a served average
// (format 2) is scored by the average, not by its last iterate.
func TestSnapshotScorerServesAverage(t *testing.T) {
	b, err := os.ReadFile(writeSnapshot(t, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	s, err := policy.UnmarshalSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := NewSnapshotScorer(s)
	if err != nil {
		t.Fatal(err)
	}
	s.AverageDecay, s.Average = 0.9, make([]float64, len(s.Theta)) // all zero: uniform logits
	avg, err := NewSnapshotScorer(s)
	if err != nil {
		t.Fatal(err)
	}
	obs := []float64{0.5, -1}
	lp, la := make([]float64, 3), make([]float64, 3)
	if err := plain.Scores(lp, obs); err != nil {
		t.Fatal(err)
	}
	if err := avg.Scores(la, obs); err != nil {
		t.Fatal(err)
	}
	if la[0] != 0 || la[1] != 0 || la[2] != 0 || lp[0] == 0 {
		t.Errorf("scores %v with the zero average, %v without", la, lp)
	}
}
