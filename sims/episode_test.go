package sims

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func TestEpisodeTruncatesAndChainsObservations(t *testing.T) {
	for _, tc := range []struct {
		name      string
		limit     int
		wantSteps int
		wantTrunc bool // the last step carries the environment's truncation
	}{
		{"environment-limit", 100, RiverSwimHorizon, true},
		{"shorter-limit", 5, 5, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := mustRiverSwim(0.6)
			rng := rand.New(rand.NewPCG(1, 2))
			steps, err := Episode(env, rng, Uniform(rng, env.ActionSpace()), tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(steps) != tc.wantSteps {
				t.Fatalf("%d steps, want %d", len(steps), tc.wantSteps)
			}
			for i, st := range steps {
				if st.Terminated || st.Truncated != (i == len(steps)-1 && tc.wantTrunc) {
					t.Errorf("step %d: terminated %v truncated %v", i, st.Terminated, st.Truncated)
				}
				if math.Abs(st.LogP-math.Log(0.5)) > 1e-15 {
					t.Errorf("step %d: logp %v, want log 1/2", i, st.LogP)
				}
				if i > 0 && &st.Obs[0] != &steps[i-1].NextObs[0] {
					t.Errorf("step %d: obs is not the previous step's next_obs", i)
				}
			}
		})
	}
}

func TestScriptStopsAtTermination(t *testing.T) {
	steps, err := Script(NewMountainCar(), ScriptConfig{Seed: 1, InitState: []float64{0.49, 0.05},
		Actions: []Action{{Index: 2}, {Index: 2}, {Index: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 || !steps[0].Terminated || steps[0].Reward != -1 || steps[0].LogP != 0 {
		t.Fatalf("steps %+v, want one terminating step with reward -1 and logp 0", steps)
	}
	if !reflect.DeepEqual(steps[0].Obs, []float64{0.49, 0.05}) {
		t.Errorf("first obs %v, want the initial state", steps[0].Obs)
	}
}

func TestScriptSeededAndLimited(t *testing.T) {
	run := func(seed uint64, n int) Steps {
		steps, err := Script(mustChain(DefaultChainConfig()), ScriptConfig{Seed: seed, Steps: n})
		if err != nil {
			t.Fatal(err)
		}
		return steps
	}
	a, b, c := run(9, 0), run(9, 0), run(10, 0)
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed, different runs")
	}
	if reflect.DeepEqual(a, c) {
		t.Error("seeds 9 and 10 gave the same run")
	}
	if got := run(9, 3); len(got) != min(3, len(a)) || !reflect.DeepEqual(got, a[:len(got)]) {
		t.Errorf("Steps 3: %d steps, not the first steps of the unlimited run", len(got))
	}
}

func TestScriptErrors(t *testing.T) {
	var nf *NonFiniteError
	_, err := Script(NewCartPole(), ScriptConfig{Seed: 1, InitState: []float64{0, 0, 0, 1e300}, Actions: []Action{{Index: 1}}})
	if !errors.As(err, &nf) || nf.Step != 0 || allFinite(nf.NextObs) || err.Error() != "step 0: the environment left the finite range" {
		t.Errorf("extreme state: %v (%+v), want a NonFiniteError at step 0", err, nf)
	}
	for _, tc := range []struct {
		name string
		env  Env
		cfg  ScriptConfig
		want string
	}{
		{"no-state-setter", mustRecSys(), ScriptConfig{InitState: []float64{0}}, ErrNoStateSetter.Error()},
		{"bad-state", NewCartPole(), ScriptConfig{InitState: []float64{0, 0}}, "want 4 components"},
		{"empty-actions", NewCartPole(), ScriptConfig{Actions: []Action{}}, "empty action list"},
		{"bad-action", NewCartPole(), ScriptConfig{Actions: []Action{{Index: 0}, {Index: 2}}}, "action 1: space: bad action"},
		{"negative-steps", NewCartPole(), ScriptConfig{Steps: -1}, "step count -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Script(tc.env, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestRunBehaviourErrorAndLimit(t *testing.T) {
	env := NewCartPole()
	obs := make([]float64, 4)
	env.Reset(rand.New(rand.NewPCG(1, 1)), obs)
	boom := errors.New("boom")
	beh := func(t int, _ []float64) (Action, float64, error) {
		if t == 2 {
			return Action{}, 0, boom
		}
		return Action{Index: t % 2}, 0, nil
	}
	steps, err := Run(env, obs, beh, 10)
	if !errors.Is(err, boom) || err.Error() != "step 2: behaviour: boom" || len(steps) != 2 {
		t.Errorf("%d steps, error %v; want 2 and step 2: behaviour: boom", len(steps), err)
	}
	if _, err := Run(env, obs, beh, 0); err == nil {
		t.Error("limit 0 accepted")
	}
}

func TestUniform(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	counts := make([]int, 3)
	beh := Uniform(rng, Space{Kind: Discrete, N: 3})
	for range 3000 {
		a, logp, err := beh(0, nil)
		if err != nil || logp != -math.Log(3) {
			t.Fatalf("logp %v, err %v", logp, err)
		}
		counts[a.Index]++
	}
	for i, c := range counts {
		if c < 900 || c > 1100 { // 1000 ± 4.7 sd
			t.Errorf("action %d drawn %d times of 3000", i, c)
		}
	}
	box := Space{Kind: Box, Low: []float64{-2, 0}, High: []float64{2, 0.5}}
	beh = Uniform(rng, box)
	for range 1000 {
		a, logp, _ := beh(0, nil)
		if a.Vec[0] < -2 || a.Vec[0] > 2 || a.Vec[1] < 0 || a.Vec[1] > 0.5 || math.Abs(logp+math.Log(2)) > 1e-15 {
			t.Fatalf("action %v logp %v, want within the box and log-density -log 2", a.Vec, logp)
		}
	}
}

func TestStepsEncoding(t *testing.T) {
	steps := Steps{
		{Obs: []float64{0, 1}, Action: Action{Index: 1}, LogP: -0.5, Reward: 1, NextObs: []float64{1, 2}},
		{Obs: []float64{1, 2}, Action: Action{Vec: []float64{0.5}}, Reward: -1.5, NextObs: []float64{2, 3}, Terminated: true},
	}
	b, err := json.Marshal(steps)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"obs":[0,1],"action":1,"reward":1,"next_obs":[1,2],"terminated":false,"truncated":false},` +
		`{"obs":[1,2],"action":[0.5],"reward":-1.5,"next_obs":[2,3],"terminated":true,"truncated":false}]`
	if string(b) != want {
		t.Errorf("JSON %s\nwant %s", b, want)
	}
	var buf bytes.Buffer
	if err := steps.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "STEP  OBS    ACTION  REWARD  NEXT OBS  TERMINATED  TRUNCATED") ||
		strings.Join(strings.Fields(lines[2]), " ") != "1 [1 2] [0.5] -1.5 [2 3] true false" {
		t.Errorf("text:\n%s", buf.String())
	}
}

func TestList(t *testing.T) {
	rows := List()
	if len(rows) != len(Names()) {
		t.Fatalf("%d rows for %d environments", len(rows), len(Names()))
	}
	byName := map[string]EnvInfo{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	if got := byName["pendulum"]; got.Action.String() != "box(1) [-2]..[2]" || got.ObsDim != 3 || got.MaxSteps != 200 {
		t.Errorf("pendulum %+v", got)
	}
	if got := byName["cartpole"]; got.Action.String() != "discrete(2)" || got.ObsDim != 4 || got.MaxSteps != 500 {
		t.Errorf("cartpole %+v", got)
	}
	b, _ := json.Marshal(byName["cartpole"].Action)
	if string(b) != `{"kind":"discrete","n":2}` {
		t.Errorf("cartpole action JSON %s", b)
	}
	var buf bytes.Buffer
	if err := rows.WriteText(&buf); err != nil || !strings.HasPrefix(buf.String(), "NAME ") || strings.Count(buf.String(), "\n") != len(rows)+1 {
		t.Errorf("text listing (%v):\n%s", err, buf.String())
	}
}

func TestParseState(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []float64
		err  string
	}{
		{"[0.1, 0, -0.2]", []float64{0.1, 0, -0.2}, ""},
		{" [ ] ", []float64{}, ""},
		{"0,0", nil, `--init-state "0,0": want a JSON array of numbers such as [0.1, 0, -0.2]`},
		{"[a, 0]", nil, `--init-state: component 0: "a" is not a number`},
		{"[0, NaN]", nil, "--init-state: component 1 is NaN, want a finite number"},
		{"[1e999]", nil, "--init-state: component 0 is +Inf, want a finite number"},
		{"[-Inf]", nil, "component 0 is -Inf"},
	} {
		got, err := ParseState("--init-state", tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
