package main

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/rollout"
	"dprl/sessionlog"
)

func TestSimsGenerate(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "chain.jsonl")
	args := []string{"sims", "generate", "--env", "chain", "--behavior", "epsilon-greedy:0.2", "--episodes", "50", "--out", out, "--seed", "7", "--json"}
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res rollout.GenerateResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if res.Episodes != 50 || res.Steps < 50 || res.DatasetID == "" || res.Out != out {
		t.Errorf("summary %+v", res)
	}
	// The log reads back, every step carries the behaviour probability of
	// the chain's epsilon-greedy "advance" policy.
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := sessionlog.NewReader(f, sessionlog.ReaderOptions{Name: out})
	n, steps, ret := 0, 0, 0.0
	for {
		s, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		ret += s.Return()
		for _, st := range s.Steps {
			steps++
			want := 0.1
			if st.Action.Index == 1 {
				want = 0.9
			}
			if math.Abs(math.Exp(st.LogP)-want) > 1e-12 {
				t.Fatalf("session %s: prob %v for action %d", s.Session, math.Exp(st.LogP), st.Action.Index)
			}
		}
	}
	if n != 50 || steps != res.Steps || math.Abs(ret/50-res.MeanReturn) > 1e-12 {
		t.Errorf("read %d sessions %d steps mean %v; summary %+v", n, steps, ret/50, res)
	}
	// Same seed, same bytes.
	again := filepath.Join(dir, "again.jsonl")
	args[9] = again
	if code, _, stderr := runCLI(t, args...); code != 0 {
		t.Fatal(stderr)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(again)
	if string(a) != string(b) {
		t.Error("same seed, different logs")
	}
}

func TestSimsGenerateErrors(t *testing.T) {
	dir := t.TempDir()
	exists := filepath.Join(dir, "exists.jsonl")
	os.WriteFile(exists, nil, 0o600)
	out := filepath.Join(dir, "x.jsonl")
	cases := []struct {
		name string
		args []string
		err  string
	}{
		{"no env", []string{"--behavior", "random", "--episodes", "1", "--out", out}, "--env is required"},
		{"continuous", []string{"--env", "pendulum", "--behavior", "random", "--episodes", "1", "--out", out}, "continuous actions"},
		{"no behavior", []string{"--env", "chain", "--episodes", "1", "--out", out}, "--behavior is required"},
		{"bad behavior", []string{"--env", "chain", "--behavior", "bogus", "--episodes", "1", "--out", out}, "bad policy spec"},
		{"no reference", []string{"--env", "cartpole", "--behavior", "greedy", "--episodes", "1", "--out", out}, "needs a reference"},
		{"episodes", []string{"--env", "chain", "--behavior", "random", "--episodes", "0", "--out", out}, "--episodes 0"},
		{"exists", []string{"--env", "chain", "--behavior", "random", "--episodes", "1", "--out", exists}, "exists"},
		{"max steps", []string{"--env", "chain", "--behavior", "random", "--episodes", "1", "--out", out, "--max-steps", "0"}, "--max-steps 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append([]string{"sims", "generate"}, c.args...)...)
			if code != 2 || !strings.Contains(stderr, c.err) {
				t.Errorf("exit %d, stderr %q, want 2 and %q", code, stderr, c.err)
			}
		})
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused run wrote its output")
	}
}
