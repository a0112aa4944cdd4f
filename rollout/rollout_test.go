package rollout

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"dprl/offline/policies"
	"dprl/policy"
	"dprl/sessionlog"
	"dprl/sims"
)

// advance is the chain's built-in controller as a behaviour: action 1
// with probability 1.
func advance(int, []float64) (sims.Action, float64, error) { return sims.Action{Index: 1}, 0, nil }

// roundTrip writes s as a record and returns the line and the record read back.
func roundTrip(t *testing.T, s sessionlog.Session) (string, sessionlog.Session) {
	t.Helper()
	var buf bytes.Buffer
	w := sessionlog.NewWriter(&buf)
	if err := w.Write(&s); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	line := buf.String()
	got, err := sessionlog.NewReader(&buf, sessionlog.ReaderOptions{}).Next()
	if err != nil {
		t.Fatal(err)
	}
	return line, got
}

// TestFinalObsRule: a terminating episode is written without final_obs; an
// episode truncated by the environment's step limit or by a shorter limit is
// written with final_obs, the observation after its last step.
func TestFinalObsRule(t *testing.T) {
	chain, _ := sims.New("chain")
	river, _ := sims.New("riverswim")
	cartpole, _ := sims.New("cartpole")
	// random is a fresh seeded uniform behaviour, so that two runs match.
	random := func(env sims.Env) func() sims.Behavior {
		return func() sims.Behavior { return sims.Uniform(rand.New(rand.NewPCG(2, 2)), env.ActionSpace()) }
	}
	for _, tc := range []struct {
		name      string
		env       sims.Env
		beh       func() sims.Behavior
		limit     int
		terminal  bool
		wantSteps int // 0: not checked
	}{
		{"terminates", chain, func() sims.Behavior { return advance }, chain.MaxSteps(), true, 0},
		{"truncated-by-environment", river, random(river), 1000, false, river.MaxSteps()},
		{"truncated-by-limit", cartpole, random(cartpole), 2, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps, err := sims.Episode(tc.env, rand.New(rand.NewPCG(1, 1)), tc.beh(), tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			s := Session("x", steps)
			if again, err := Episode(tc.env, rand.New(rand.NewPCG(1, 1)), tc.beh(), tc.limit, "x"); err != nil || !reflect.DeepEqual(again, s) {
				t.Errorf("Episode differs from Session of sims.Episode: %v", err)
			}
			if tc.wantSteps > 0 && len(s.Steps) != tc.wantSteps {
				t.Errorf("%d steps, want %d", len(s.Steps), tc.wantSteps)
			}
			line, back := roundTrip(t, s)
			if s.Terminal != tc.terminal || back.Terminal != tc.terminal {
				t.Fatalf("terminal %v (read back %v), want %v", s.Terminal, back.Terminal, tc.terminal)
			}
			if tc.terminal {
				if s.FinalObs != nil || strings.Contains(line, "final_obs") {
					t.Errorf("terminal session has final_obs: %s", line)
				}
				return
			}
			last := steps[len(steps)-1].NextObs
			if !strings.Contains(line, `"final_obs":`) || !reflect.DeepEqual(s.FinalObs, last) || !reflect.DeepEqual(back.FinalObs, last) {
				t.Errorf("truncated session: final_obs %v, read back %v, want %v", s.FinalObs, back.FinalObs, last)
			}
		})
	}
	// A step that both terminates and reaches the step limit is terminal.
	s := Session("y", sims.Steps{{Obs: []float64{0}, NextObs: []float64{1}, Terminated: true, Truncated: true}})
	if !s.Terminal || s.FinalObs != nil {
		t.Errorf("terminated and truncated: terminal %v final_obs %v", s.Terminal, s.FinalObs)
	}
	s = Session("z", sims.Steps{{Obs: []float64{0}, NextObs: []float64{1}}, {Obs: []float64{1}, NextObs: []float64{2}, Truncated: true}})
	if s.Terminal || !reflect.DeepEqual(s.FinalObs, []float64{2}) || !reflect.DeepEqual(s.Steps[1].Obs, []float64{1}) {
		t.Errorf("truncated: %+v", s)
	}
}

// generateCase is a seeded run of Generate whose log the code before the
// rollout unification (cmd/dprl's generate loop) wrote; sha is the SHA-256
// of that log, or golden a file holding it.
type generateCase struct {
	env, behavior        string
	episodes, maxSteps   int
	sha, golden          string
	steps, terminated    int
	meanReturn, stdRetrn float64
}

func newConfig(t *testing.T, c generateCase) GenerateConfig {
	t.Helper()
	env, err := sims.New(c.env)
	if err != nil {
		t.Fatal(err)
	}
	dim := env.ObservationSpace().Dim()
	opt := policies.Options{NumActions: env.ActionSpace().N, ObsDim: dim}
	if ref, ok := policies.Builtin(c.env, dim); ok {
		opt.Reference = ref
	}
	beh, err := policies.Parse(c.behavior, opt)
	if err != nil {
		t.Fatal(err)
	}
	return GenerateConfig{Env: env, EnvName: c.env, Behavior: beh, BehaviorName: c.behavior, Episodes: c.episodes, MaxSteps: c.maxSteps, Seed: 7}
}

// TestGenerateUnchanged: Generate writes, byte for byte, the logs that
// dprl sims generate --seed 7 wrote before its loop moved here (terminal
// episodes, episodes truncated by --max-steps and by the environment).
func TestGenerateUnchanged(t *testing.T) {
	for _, c := range []generateCase{
		{env: "chain", behavior: "random", episodes: 10, maxSteps: 3, golden: "testdata/chain-random-seed7-max3.jsonl",
			steps: 28, terminated: 2, meanReturn: 0.2, stdRetrn: 0.4},
		{env: "chain", behavior: "epsilon-greedy:0.2", episodes: 50, sha: "2b808cf362633a04b6128b1f4c19f37f6243a15e7bca7a2599c6835f98ef87fb",
			steps: 674, terminated: 50, meanReturn: 1},
		{env: "mountaincar", behavior: "softmax:1", episodes: 20, maxSteps: 50, sha: "38f30e775a2fe5825cc9fe8dddd9f4e77fc033946bc14731b2cf851b0f521bc8",
			steps: 1000, meanReturn: -50},
		{env: "riverswim", behavior: "random", episodes: 10, sha: "4dee34c2dd84a7bd9ada074db6586ffa1ba56984459e468a79d92ff674693a77",
			steps: 200, meanReturn: 0.029000000000000005, stdRetrn: 0.012806248474865688},
	} {
		t.Run(c.env+"-"+c.behavior, func(t *testing.T) {
			var buf bytes.Buffer
			calls := 0
			res, err := Generate(newConfig(t, c), &buf, func(episodes, steps int) { calls++ })
			if err != nil {
				t.Fatal(err)
			}
			if c.golden != "" {
				want, err := os.ReadFile(c.golden)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(buf.Bytes(), want) {
					t.Errorf("log differs from %s:\n%s", c.golden, buf.String())
				}
			} else if sum := sha256.Sum256(buf.Bytes()); hex.EncodeToString(sum[:]) != c.sha {
				t.Errorf("log sha256 %x, want %s", sum, c.sha)
			}
			want := GenerateResult{Env: c.env, Behavior: c.behavior, Episodes: c.episodes, Steps: c.steps, Terminated: c.terminated,
				MeanReturn: c.meanReturn, StdReturn: c.stdRetrn, Seed: 7}
			if res != want || calls != c.episodes {
				t.Errorf("result %+v after %d progress calls, want %+v", res, calls, want)
			}
		})
	}
}

func TestGenerateFile(t *testing.T) {
	dir := t.TempDir()
	c := generateCase{env: "chain", behavior: "random", episodes: 10, maxSteps: 3}
	path := filepath.Join(dir, "log.jsonl")
	res, err := GenerateFile(newConfig(t, c), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := sessionlog.DatasetID(path)
	if res.Out != path || res.DatasetID != id || id == "" {
		t.Errorf("result %+v, want out %s and dataset id %s", res, path, id)
	}
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	want := "wrote 10 episodes (28 steps, 2 terminated) of chain under random to " + path + "\nreturn: mean 0.2, std 0.4\ndataset id: " + id + "\nseed: 7\n"
	if text.String() != want {
		t.Errorf("text %q\nwant %q", text.String(), want)
	}

	// A log that cannot be created is an OutputError.
	var oe *OutputError
	if _, err := GenerateFile(newConfig(t, c), filepath.Join(dir, "missing", "log.jsonl"), nil); !errors.As(err, &oe) {
		t.Errorf("uncreatable log: %v, want an OutputError", err)
	}

	// An environment whose state leaves the finite range fails the run,
	// names the episode and step, and leaves no partial log.
	p := sims.DefaultCartPoleParams()
	p.ForceMag = math.MaxFloat64
	wild, err := sims.NewCartPoleWith(p)
	if err != nil {
		t.Fatal(err)
	}
	cfg := GenerateConfig{Env: wild, EnvName: "cartpole", Behavior: policies.Uniform{N: 2}, Episodes: 3}
	bad := filepath.Join(dir, "bad.jsonl")
	var nf *sims.NonFiniteError
	if _, err := GenerateFile(cfg, bad, nil); !errors.As(err, &nf) || err.Error() != "episode 0 step 0: the environment left the finite range" {
		t.Errorf("non-finite environment: %v", err)
	}
	if _, err := os.Stat(bad); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("partial log left behind: %v", err)
	}
}

func TestGenerateConfigValidate(t *testing.T) {
	pend, _ := sims.New("pendulum")
	chain, _ := sims.New("chain")
	for _, tc := range []struct {
		name string
		cfg  GenerateConfig
		want string
	}{
		{"no-env", GenerateConfig{Episodes: 1}, "no environment"},
		{"continuous", GenerateConfig{Env: pend, EnvName: "pendulum", Episodes: 1}, "continuous actions"},
		{"action-count", GenerateConfig{Env: chain, Behavior: policies.Uniform{N: 3}, Episodes: 1}, "2 actions"},
		{"episodes", GenerateConfig{Env: chain, Behavior: policies.Uniform{N: 2}}, "0 episodes"},
		{"max-steps", GenerateConfig{Env: chain, Behavior: policies.Uniform{N: 2}, Episodes: 1, MaxSteps: -1}, "max steps -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate: %v, want %q", err, tc.want)
			}
			if _, gerr := Generate(tc.cfg, io.Discard, nil); gerr == nil {
				t.Error("Generate ran an invalid config")
			}
		})
	}
}

func TestParseBehavior(t *testing.T) {
	chain, _ := sims.New("chain")
	cartpole, _ := sims.New("cartpole")
	// The chain's built-in controller is the reference of greedy.
	p, err := ParseBehavior("greedy", "", "chain", chain)
	if err != nil {
		t.Fatal(err)
	}
	probs := make([]float64, 2)
	if err := p.Probs(probs, make([]float64, chain.ObservationSpace().Dim())); err != nil || probs[1] != 1 {
		t.Errorf("chain greedy: probs %v, %v; want action 1 (advance)", probs, err)
	}
	// cartpole has no built-in controller.
	var re *ReferenceError
	if _, err := ParseBehavior("greedy", "", "cartpole", cartpole); err == nil || errors.As(err, &re) || !strings.Contains(err.Error(), "needs a reference") {
		t.Errorf("cartpole greedy without a reference: %v", err)
	}
	// A snapshot file is the reference; a missing one is a ReferenceError.
	spec := policy.Spec{ObsDim: 4, Kind: policy.ActionDiscrete, NumActions: 2}
	cfg := policy.DefaultControlConfig()
	n, _ := policy.NumSnapshotParams(spec, cfg.PPO.Hidden)
	snap, err := policy.NewSnapshot(spec, cfg, 1, make([]float64, n))
	if err != nil {
		t.Fatal(err)
	}
	b, err := policy.MarshalSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ref.snap")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if p, err := ParseBehavior("softmax:1", file, "cartpole", cartpole); err != nil || p.NumActions() != 2 {
		t.Errorf("cartpole softmax with a reference file: %v", err)
	}
	if _, err := ParseBehavior("greedy", file+".missing", "cartpole", cartpole); !errors.As(err, &re) || !strings.Contains(err.Error(), "ref.snap.missing") {
		t.Errorf("missing reference file: %v, want a ReferenceError", err)
	}
	if _, err := ParseBehavior("bogus", "", "chain", chain); err == nil || errors.As(err, &re) {
		t.Errorf("bad spec: %v, want an error that is not a ReferenceError", err)
	}
}
