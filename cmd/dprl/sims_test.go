package main

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"dprl/sims"
)

// simsStep is one step of "dprl sims rollout --json" as printed.
type simsStep struct {
	Obs        []float64 `json:"obs"`
	Action     any       `json:"action"` // an integer (discrete) or an array (box)
	Reward     float64   `json:"reward"`
	NextObs    []float64 `json:"next_obs"`
	Terminated bool      `json:"terminated"`
	Truncated  bool      `json:"truncated"`
}

func decodeSteps(t *testing.T, out string) []simsStep {
	t.Helper()
	var steps []simsStep
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&steps); err != nil {
		t.Fatalf("decoding %q: %v", out, err)
	}
	return steps
}

func TestSimsList(t *testing.T) {
	code, out, _ := runCLI(t, "sims", "list", "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var rows []sims.EnvInfo
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	byName := map[string]sims.EnvInfo{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	want := map[string]sims.EnvInfo{
		"cartpole":    {ObsDim: 4, Action: sims.SpaceInfo{Kind: "discrete", N: 2}, MaxSteps: 500},
		"acrobot":     {ObsDim: 6, Action: sims.SpaceInfo{Kind: "discrete", N: 3}, MaxSteps: 500},
		"pendulum":    {ObsDim: 3, Action: sims.SpaceInfo{Kind: "box", Dim: 1, Low: []float64{-2}, High: []float64{2}}, MaxSteps: 200},
		"mountaincar": {ObsDim: 2, Action: sims.SpaceInfo{Kind: "discrete", N: 3}, MaxSteps: 200},
		"riverswim":   {ObsDim: 6, Action: sims.SpaceInfo{Kind: "discrete", N: 2}, MaxSteps: 20},
		"chain":       {ObsDim: 20, Action: sims.SpaceInfo{Kind: "discrete", N: 2}, MaxSteps: 200},
	}
	for name, w := range want {
		got, ok := byName[name]
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		if got.ObsDim != w.ObsDim || got.MaxSteps != w.MaxSteps || !reflect.DeepEqual(got.Action, w.Action) || got.Description == "" {
			t.Errorf("%s: %+v, want %+v", name, got, w)
		}
	}
	code, out, _ = runCLI(t, "sims", "list")
	if code != 0 || !strings.Contains(out, "cartpole") || !strings.Contains(out, "box(1)") {
		t.Fatalf("text list: exit %d\n%s", code, out)
	}
}

func TestSimsRollout(t *testing.T) {
	t.Run("cartpole-scripted-from-state", func(t *testing.T) {
		code, out, errs := runCLI(t, "sims", "rollout", "--env", "cartpole", "--seed", "3",
			"--init-state", "[0, 0, 0, 0]", "--actions", "1,0,1", "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		steps := decodeSteps(t, out)
		if len(steps) != 3 {
			t.Fatalf("%d steps, want 3", len(steps))
		}
		if !reflect.DeepEqual(steps[0].Obs, []float64{0, 0, 0, 0}) || steps[0].Action != float64(1) {
			t.Fatalf("first step %+v", steps[0])
		}
		// Hand-computed first step (see sims TestHandComputedSteps).
		if v := steps[0].NextObs[1]; math.Abs(v-0.02*4400.0/451.0) > 1e-15 {
			t.Errorf("x_dot after one push = %v", v)
		}
		for i := 1; i < len(steps); i++ {
			if !reflect.DeepEqual(steps[i].Obs, steps[i-1].NextObs) {
				t.Errorf("step %d obs does not continue from the previous next_obs", i)
			}
		}
	})
	t.Run("stops-at-termination", func(t *testing.T) {
		code, out, _ := runCLI(t, "sims", "rollout", "--env", "mountaincar", "--seed", "1",
			"--init-state", "[0.49, 0.05]", "--actions", "2,2,2,2", "--json")
		if code != 0 {
			t.Fatal(code)
		}
		steps := decodeSteps(t, out)
		if len(steps) != 1 || !steps[0].Terminated || steps[0].Reward != -1 {
			t.Fatalf("steps %+v", steps)
		}
	})
	t.Run("random-policy-truncates", func(t *testing.T) {
		code, out, _ := runCLI(t, "sims", "rollout", "--env", "riverswim", "--seed", "9", "--policy", "random", "--json")
		if code != 0 {
			t.Fatal(code)
		}
		steps := decodeSteps(t, out)
		if len(steps) != 20 || !steps[19].Truncated || steps[18].Truncated {
			t.Fatalf("%d steps, last %+v", len(steps), steps[len(steps)-1])
		}
		// Same seed, same rollout.
		_, out2, _ := runCLI(t, "sims", "rollout", "--env", "riverswim", "--seed", "9", "--policy", "random", "--json")
		if out2 != out {
			t.Error("same seed gave a different rollout")
		}
	})
	t.Run("steps-limit-and-box-actions", func(t *testing.T) {
		code, out, _ := runCLI(t, "sims", "rollout", "--env", "pendulum", "--seed", "1",
			"--init-state", "[0, 0]", "--actions", "2,-2,1.7", "--steps", "2", "--json")
		if code != 0 {
			t.Fatal(code)
		}
		steps := decodeSteps(t, out)
		if len(steps) != 2 || !reflect.DeepEqual(steps[1].Action, []any{-2.0}) {
			t.Fatalf("steps %+v", steps)
		}
		if math.Abs(steps[0].Reward+0.004) > 1e-15 || math.Abs(steps[0].NextObs[2]-0.3) > 1e-15 {
			t.Errorf("first pendulum step %+v", steps[0])
		}
	})
	t.Run("random-seed-printed", func(t *testing.T) {
		code, out, _ := runCLI(t, "sims", "rollout", "--env", "chain", "--policy", "random", "--steps", "3")
		if code != 0 || !strings.HasPrefix(out, "seed: ") || !strings.Contains(out, "NEXT OBS") {
			t.Fatalf("exit %d\n%s", code, out)
		}
	})
	t.Run("non-finite-state-fails", func(t *testing.T) {
		code, _, errs := runCLI(t, "sims", "rollout", "--env", "cartpole", "--seed", "1",
			"--init-state", "[0, 0, 0, 1e300]", "--actions", "1", "--json")
		if code != 1 || !strings.Contains(errs, "finite") {
			t.Fatalf("exit %d: %s", code, errs)
		}
	})
}

func TestSimsRolloutUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown-env", []string{"--env", "cartpol", "--actions", "1"}, "valid: cartpole, acrobot"},
		{"no-env", []string{"--actions", "1"}, "--env is required"},
		{"both", []string{"--env", "cartpole", "--actions", "1", "--policy", "random"}, "not both"},
		{"neither", []string{"--env", "cartpole"}, "--actions or --policy"},
		{"bad-policy", []string{"--env", "cartpole", "--policy", "greedy"}, "want random"},
		{"action-out-of-range", []string{"--env", "cartpole", "--actions", "0,2"}, "step 1"},
		{"action-negative", []string{"--env", "acrobot", "--actions", "-1"}, "outside [0, 3)"},
		{"action-not-integer", []string{"--env", "cartpole", "--actions", "0.5"}, "not an integer"},
		{"box-action-out-of-bounds", []string{"--env", "pendulum", "--actions", "2.5"}, "outside [-2, 2]"},
		{"box-action-wrong-dim", []string{"--env", "pendulum", "--actions", "1:2"}, "want 1"},
		{"box-action-nan", []string{"--env", "pendulum", "--actions", "NaN"}, "not a finite number"},
		{"empty-actions", []string{"--env", "cartpole", "--actions", ""}, "empty"},
		{"state-wrong-length", []string{"--env", "cartpole", "--init-state", "[0, 0]", "--actions", "1"}, "want 4 components"},
		{"state-nan", []string{"--env", "pendulum", "--init-state", "[NaN, 0]", "--actions", "1"}, "NaN"},
		{"state-inf", []string{"--env", "pendulum", "--init-state", "[1e999, 0]", "--actions", "1"}, "+Inf"},
		{"state-not-array", []string{"--env", "pendulum", "--init-state", "0,0", "--actions", "1"}, "JSON array"},
		{"state-garbage", []string{"--env", "pendulum", "--init-state", "[a, 0]", "--actions", "1"}, "not a number"},
		{"state-bad-index", []string{"--env", "riverswim", "--init-state", "[6]", "--actions", "1"}, "not an integer in [0, 6)"},
		{"steps-zero", []string{"--env", "cartpole", "--policy", "random", "--steps", "0"}, "at least 1"},
		{"unknown-flag", []string{"--env", "cartpole", "--frobnicate"}, "unknown flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, append([]string{"sims", "rollout", "--seed", "1", "--json"}, tc.args...)...)
			if code != 2 {
				t.Fatalf("exit %d, want 2 (stderr %q)", code, errs)
			}
			if !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Errorf("stderr %q, want one line containing %q", errs, tc.want)
			}
			if out != "" {
				t.Errorf("stdout %q on a usage error", out)
			}
		})
	}
	if code, _, _ := runCLI(t, "sims"); code != 2 {
		t.Errorf("dprl sims without subcommand: exit %d", code)
	}
	if code, _, _ := runCLI(t, "sims", "bogus"); code != 2 {
		t.Errorf("dprl sims bogus: exit %d", code)
	}
}

// TestSimsBaselines: dprl sims baselines prints the uniform and every
// constant policy's return (recsys: the best constant is topic 19, far above
// uniform), in text on the one-step bandit, and rejects bad invocations as
// usage errors.
func TestSimsBaselines(t *testing.T) {
	code, out, _ := runCLI(t, "sims", "baselines", "--env", "recsys", "--episodes", "100", "--seed", "3", "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var r sims.BaselineResult
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatal(err)
	}
	if r.Env != "recsys" || r.Episodes != 100 || r.Seed != 3 || len(r.Constants) != 20 || r.BestConstant.Action != float64(19) {
		t.Errorf("result %+v", r)
	}
	if !(r.BestConstant.Mean > 2*r.Uniform.Mean) {
		t.Errorf("best constant %.1f, uniform %.1f", r.BestConstant.Mean, r.Uniform.Mean)
	}
	code, out, _ = runCLI(t, "sims", "baselines", "--env", "bandit", "--episodes", "50", "--seed", "1")
	if code != 0 || !strings.Contains(out, "bandit: mean return over 50 episodes per policy, seed 1 (simulation only)") || strings.Count(out, "constant ") != 11 {
		t.Errorf("bandit: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"--env", "nope"}, {}, {"--env", "recsys", "--episodes", "0"}, {"--env", "pendulum", "--grid", "1"}} {
		if code, _, _ := runCLI(t, append([]string{"sims", "baselines"}, args...)...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}
