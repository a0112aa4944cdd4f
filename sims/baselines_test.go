package sims

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestBaselinesRecSys checks the reference policies of the recommendation
// simulator: the best constant policy is the highest-quality topic, far above
// the uniform policy (whose return is what RecSim's interest evolution gives
// a random recommender), and every number is reproducible from the seed.
func TestBaselinesRecSys(t *testing.T) {
	cfg := BaselineConfig{Env: "recsys", Episodes: 300, Seed: 11}
	r, err := Baselines(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Constants) != 20 || r.Uniform.Policy != "uniform" || r.Scope != BaselineScope {
		t.Fatalf("result %+v", r)
	}
	if r.BestConstant.Action != 19 {
		t.Errorf("best constant %v (%.1f), want topic 19, the highest quality", r.BestConstant.Action, r.BestConstant.Mean)
	}
	// The uniform policy's return is ~152 (std ~11), topic 19's ~400 (std
	// ~350): far apart at 300 episodes.
	if u, b := r.Uniform, r.BestConstant; !(u.Mean > 130 && u.Mean < 175 && b.Mean > 2*u.Mean) {
		t.Errorf("uniform %.1f, best constant %.1f", u.Mean, b.Mean)
	}
	for _, c := range r.Constants {
		if c.Mean > r.BestConstant.Mean {
			t.Errorf("constant %v has %.1f > best %.1f", c.Action, c.Mean, r.BestConstant.Mean)
		}
		if want := c.Std / math.Sqrt(300); math.Abs(c.StdErr-want) > 1e-12 {
			t.Errorf("constant %v std err %v, want %v", c.Action, c.StdErr, want)
		}
	}
	again, err := Baselines(cfg)
	if err != nil || !reflect.DeepEqual(r, again) {
		t.Errorf("not reproducible from the seed: %v", err)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil || !strings.Contains(buf.String(), "best: constant 19") {
		t.Errorf("text %q: %v", buf.String(), err)
	}
}

// TestBaselinesCommonUsers checks that every policy meets the same users:
// episode i resets the environment from PCG(seed, 2i), so a constant
// policy's episode is the one a hand-written loop on that generator runs.
func TestBaselinesCommonUsers(t *testing.T) {
	info, _ := Lookup("cartpole")
	r, err := Baselines(BaselineConfig{Env: "cartpole", Episodes: 7, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	env := info.New()
	obs := make([]float64, 4)
	var sum float64
	for i := range 7 {
		env.Reset(rand.New(rand.NewPCG(5, 2*uint64(i))), obs)
		for {
			rew, term, trunc := env.Step(Action{Index: 1}, obs)
			sum += rew
			if term || trunc {
				break
			}
		}
	}
	if got := r.Constants[1].Mean; got != sum/7 {
		t.Errorf("constant 1: %v, want %v", got, sum/7)
	}
}

func TestBaselinesBoxGrid(t *testing.T) {
	r, err := Baselines(BaselineConfig{Env: "pendulum", Episodes: 2, Seed: 1, Grid: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got [][]float64
	for _, c := range r.Constants {
		got = append(got, c.Action.([]float64))
	}
	if want := [][]float64{{-2}, {0}, {2}}; !reflect.DeepEqual(got, want) {
		t.Errorf("grid %v, want %v", got, want)
	}
	acts, err := constantActions(Space{Kind: Box, Low: []float64{0, -1}, High: []float64{1, 1}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	var vecs [][]float64
	for _, a := range acts {
		vecs = append(vecs, a.Vec)
	}
	if want := [][]float64{{0, -1}, {0, 1}, {1, -1}, {1, 1}}; !reflect.DeepEqual(vecs, want) {
		t.Errorf("2-d grid %v, want %v", vecs, want)
	}
}

func TestBaselinesErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  BaselineConfig
		want string
	}{
		{"unknown env", BaselineConfig{Env: "nope", Episodes: 1}, "unknown environment"},
		{"no episodes", BaselineConfig{Env: "pendulum", Episodes: 0}, "0 episodes"},
		{"grid of one", BaselineConfig{Env: "pendulum", Episodes: 1, Grid: 1}, "grid 1"},
		{"grid too large", BaselineConfig{Env: "pendulum", Episodes: 1, Grid: MaxBaselineConstants + 1}, "more than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Baselines(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
	_, err := baselines("nan", func() Env { return nanEnv{} }, BaselineConfig{Episodes: 1})
	if nf := (*NonFiniteError)(nil); !errors.As(err, &nf) {
		t.Errorf("non-finite reward: error %v, want a *NonFiniteError", err)
	}
}

// nanEnv is a one-step environment whose reward is NaN.
type nanEnv struct{}

func (nanEnv) ObservationSpace() Space {
	return Space{Kind: Box, Low: []float64{0}, High: []float64{1}}
}
func (nanEnv) ActionSpace() Space                           { return Space{Kind: Discrete, N: 2} }
func (nanEnv) MaxSteps() int                                { return 1 }
func (nanEnv) Reset(*rand.Rand, []float64)                  {}
func (nanEnv) Step(Action, []float64) (float64, bool, bool) { return math.NaN(), true, false }

// TestBaselinesBandit: on the one-step bandit, each policy's episodes are
// single sessions, and the sampled returns agree with the exact expected
// clicks of Bandit.Baselines (exact click probabilities averaged over
// users) within five standard errors.
func TestBaselinesBandit(t *testing.T) {
	r, err := Baselines(BaselineConfig{Env: "bandit", Episodes: 4000, Seed: 21})
	if err != nil {
		t.Fatal(err)
	}
	exact := mustBandit().(*Bandit).Baselines(200000, rand.New(rand.NewPCG(3, 4)))
	if len(r.Constants) != len(exact.ArmMeans) {
		t.Fatalf("%d constant policies, want one per item (%d)", len(r.Constants), len(exact.ArmMeans))
	}
	near := func(name string, b BaselineReturn, want float64) {
		if b.Mean < 0 || b.Mean > 1 || !(b.StdErr > 0) || math.Abs(b.Mean-want) > 5*b.StdErr {
			t.Errorf("%s: %.4f ± %.4f, want the exact %.4f", name, b.Mean, b.StdErr, want)
		}
	}
	near("uniform", r.Uniform, exact.Uniform)
	for a, c := range r.Constants {
		near(c.Name(), c, exact.ArmMeans[a])
	}
	if got := r.BestConstant.Action.(int); exact.ArmMeans[got] < exact.BestFixed-0.02 {
		t.Errorf("best constant %d (exact %.4f), far below the best fixed arm %d (%.4f)", got, exact.ArmMeans[got], exact.BestArm, exact.BestFixed)
	}
}
