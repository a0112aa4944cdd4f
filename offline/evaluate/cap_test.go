package evaluate_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"dprl/ledger"
	"dprl/offline/budget"
	"dprl/offline/evaluate"
	"dprl/rollout"
	"dprl/sims"
)

// chainLog writes a log of n chain episodes under the random behaviour.
func chainLog(t *testing.T, n int) string {
	t.Helper()
	env, err := sims.New("chain")
	if err != nil {
		t.Fatal(err)
	}
	beh, err := rollout.ParseBehavior("random", "", "chain", env)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "chain.jsonl")
	if _, err := rollout.GenerateFile(rollout.GenerateConfig{Env: env, EnvName: "chain", Behavior: beh, BehaviorName: "random", Episodes: n, Seed: 1}, path, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

// runChain runs one private evaluation of the chain log, charged to led
// with the cap (capEps, capDelta); deltaGiven says --dataset-delta was
// given. It returns the error as the command line explains it.
func runChain(t *testing.T, data, led string, method evaluate.Method, delta, capDelta float64, deltaGiven bool) error {
	t.Helper()
	c := evaluate.Config{Data: data, Env: "chain", Target: "uniform", Features: "tabular", Method: method,
		Epsilon: 1, Delta: delta, EpsilonGiven: true, DeltaGiven: true, Iters: 20, StepSize: 0.5, Clip: 1, Batch: 10,
		Gamma: 0.9, Ridge: 1e-6, Grid: 10, RewardLow: math.NaN(), RewardHigh: math.NaN(), Seed: 1, Seeded: true}
	m, opt, err := evaluate.New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg, err := budget.Config{Ledger: led, Cap: ledger.Cap{Epsilon: 10, Delta: capDelta}, DeltaGiven: deltaGiven}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = budget.Run(context.Background(), cfg, budget.Input{Path: data, Reader: opt}, m)
	return budget.Explain(err)
}

// TestDPLSWAfterGPOPENamesTheRemedy replays docs/offline.md's chain block on a
// ledger whose dataset stored the default cap (10, 1e-5) with a gpope run:
// a dp-lsw run that gives another --dataset-delta is refused for the cap
// mismatch (not for its delta against a cap it was not told about), one
// that spends the whole stored delta is refused as over the budget with the
// remedies (a smaller --delta, or dprl ledger set-cap), and one with a
// smaller delta is charged. A first dp-lsw run that would use its cap's
// whole delta names --dataset-delta. The stored cap is never raised.
func TestDPLSWAfterGPOPENamesTheRemedy(t *testing.T) {
	data := chainLog(t, 100)
	led := filepath.Join(t.TempDir(), "led")
	if err := runChain(t, data, led, evaluate.GPOPE, 1e-5, 1e-5, false); err != nil {
		t.Fatalf("gpope: %v", err)
	}
	tests := []struct {
		name       string
		led        string
		delta      float64
		capDelta   float64
		deltaGiven bool
		is         error
		want       []string
	}{
		{"another --dataset-delta", led, 1e-5, 1e-4, true, ledger.ErrCapMismatch,
			[]string{"cap (epsilon 10, delta 1e-05)", "given: epsilon 10, delta 0.0001", "leave out --dataset-epsilon/--dataset-delta", "dprl ledger set-cap --data " + led}},
		{"the stored cap's whole delta", led, 1e-5, 1e-5, false, ledger.ErrBudgetExceeded,
			[]string{"dp-lsw spends its Delta 1e-05", "cap's delta 1e-05", "below 1e-05", "dprl ledger set-cap --data " + led}},
		{"a first run's whole delta", filepath.Join(t.TempDir(), "fresh"), 1e-5, 1e-5, false, ledger.ErrBudgetExceeded,
			[]string{"dp-lsw spends its Delta 1e-05", "first run", "--dataset-delta 1e-05"}},
		{"a smaller delta", led, 1e-6, 1e-5, false, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := runChain(t, data, tt.led, evaluate.DPLSW, tt.delta, tt.capDelta, tt.deltaGiven)
			if tt.is == nil {
				if err != nil {
					t.Fatalf("dp-lsw: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.is) {
				t.Fatalf("dp-lsw: %v, want %v", err, tt.is)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("dp-lsw: %v\nwant %q in it", err, w)
				}
			}
		})
	}
	s, err := ledger.Open(led, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Datasets(func(_ string, d ledger.DatasetState) error {
		if c := d.Units[ledger.UnitTrajectory].Cap; c != (ledger.Cap{Epsilon: 10, Delta: 1e-5}) {
			t.Errorf("stored cap %+v, want the first run's (10, 1e-05)", c)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
