package primorl

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTimingLabelled: a run's wall-clock times are not part of the release
// (a round's time grows with the sampled trajectories' lengths): the text
// and the JSON carry them only under the operational label.
func TestTimingLabelled(t *testing.T) {
	r := Result{Env: "pendulum", Method: "primorl", Private: true, Epsilon: 5, Delta: 1e-5, Accountant: "pld",
		Timing: Timing{Note: TimingNote, ModelSeconds: 1.52, SACSeconds: 3}}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.Contains(line, "1.5 s") && !strings.Contains(line, "NOT covered by the guarantee") {
			t.Errorf("timing printed without its label: %q", line)
		}
	}
	j, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["model_seconds"]; ok {
		t.Error("model_seconds at the top level of the result, beside the guarantee")
	}
	if tm, ok := m["timing"].(map[string]any); !ok || tm["note"] != TimingNote {
		t.Errorf("timing %v: want the operational note", m["timing"])
	}
}

// TestBatchBound: a private run's expected batch is at most
// noise.MaxPoissonBatch, where the exact noise's rounding condition holds
// but for a probability the guarantee's delta absorbs (docs/privacy.md,
// section 2); a non-private run has no such bound.
func TestBatchBound(t *testing.T) {
	c := DefaultConfig()
	c.Data, c.Batch = "d.jsonl", 1<<14+1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "expected batch is at most 16384") {
		t.Errorf("batch 2^14+1: %v", err)
	}
	c.Batch = 1 << 14
	if err := c.Validate(); err != nil && strings.Contains(err.Error(), "expected batch") {
		t.Errorf("batch 2^14: %v", err)
	}
}

// TestReadResultRefusesRepeatedKeys: a result whose key repeats (its last
// value would win) is refused.
func TestReadResultRefusesRepeatedKeys(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(p, []byte(`{"env":"pendulum","score":900,"epsilon":5,"epsilon":0.5}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadResult(p); err == nil || !strings.Contains(err.Error(), "duplicate key") {
		t.Errorf("ReadResult: %v, want a duplicate key error", err)
	}
}

// TestScoreDefined: the text defines the score where it differs from the
// return (Pendulum's normalisation) and omits it where it is the return.
func TestScoreDefined(t *testing.T) {
	for _, c := range []struct {
		r    Result
		want string
	}{
		{Result{Env: "pendulum", Return: -150, Score: 900}, "(score 900.0 = 1000 (return + 1500) / 1500"},
		{Result{Env: "cartpole-balance", Return: 583, Score: 583}, "583.0 ± 0.0\n"},
	} {
		var b strings.Builder
		if err := c.r.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("%s: %q, want %q", c.r.Env, b.String(), c.want)
		}
	}
}

// TestSummariesDefineScore: the summary of dprl plot primorl says what its
// score is before printing it (it printed "score 878.1" undefined), and
// "1 run", not "1 runs".
func TestSummariesDefineScore(t *testing.T) {
	var b strings.Builder
	ss := Summarize([]Result{{Env: "pendulum", Return: -150, Score: 900}, {Env: "pendulum", Private: true, Epsilon: 5, Return: -300, Score: 800}})
	if err := ss.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "score: the released policy's mean return on the simulator, on Pendulum normalised to 1000 (return + 1500) / 1500 (the PriMORL paper's)\n" +
		"no privacy       1 run: score 900.0"
	if !strings.HasPrefix(b.String(), want) {
		t.Errorf("summary %q, want it to start %q", b.String(), want)
	}
}

// TestTrainPolicies: with Policies > 1 the candidates train concurrently
// (each on its own ensemble scratch: run it with -race), the one with the
// best rated point is released, and the run repeats exactly from its seed.
func TestTrainPolicies(t *testing.T) {
	c := DefaultConfig()
	c.ModelFile, c.Seed, c.Seeded = "m.model", 3, true
	c.SACSteps, c.SACHidden, c.Select, c.Policies = 600, []int{8}, 1, 3
	c.Model.Hidden = []int{8}
	m, _, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEnsemble(c.Model, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float64, e.NumParams())
	e.Init(p, rand.New(rand.NewPCG(1, 2)))
	run := func() trainedPolicy {
		tp, err := m.trainPolicy(context.Background(), e, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		return tp
	}
	a, b := run(), run()
	if len(a.ratings) != 3 {
		t.Fatalf("ratings %v, want 3", a.ratings)
	}
	best := math.Inf(-1)
	for _, pt := range a.curve {
		best = max(best, *pt.Select)
	}
	if best != slices.Max(a.ratings) {
		t.Fatalf("the released policy's best rating %v, want the candidates' best %v", best, slices.Max(a.ratings))
	}
	if !slices.Equal(a.agent.ActorParams(), b.agent.ActorParams()) || !slices.Equal(a.ratings, b.ratings) {
		t.Fatal("two runs from one seed released different policies")
	}
	c.Policies = 2
	c.Select = 0
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "Select > 0") {
		t.Fatalf("policies without select: %v", err)
	}
}
