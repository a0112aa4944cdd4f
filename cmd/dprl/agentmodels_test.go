package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dprl/agent/service"
	"dprl/internal/testutil"

	"github.com/spf13/pflag"
)

// TestAgentModelsCheckConfig: the multi-policy example checks out, one
// line per model and the composed bound; --model adds to a config file's
// models and DPRL_MODELS; each bad entry is a usage error naming it.
func TestAgentModelsCheckConfig(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runCLI(t, "agent", "--config", "../../examples/agent-models.json", "--data", dir, "--check-config")
	for _, want := range []string{"configuration OK: 3 models", "model cartpole (subjects dprl.cartpole.v1.*): obs dim 4, 2 actions, K = 8",
		"model pendulum (subjects dprl.pendulum.v1.*)", "model recommender (subjects dprl.recommender.v1.*): obs dim 16, 4 actions, K = 64", "a user of every model: epsilon at most"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("agent-models.json: exit %d, %q lacks %q (%s)", code, out, want, stderr)
		}
	}
	t.Setenv("DPRL_MODELS", `[{"name": "fromenv", "env-spec": "acrobot"}]`)
	code, out, stderr = runCLI(t, "agent", "--data", dir, "--K", "4", "--model", "a:env-spec=cartpole", "--model", "b:obs-dim=3,actions=2,K=16", "--check-config")
	if code != 0 || !strings.Contains(out, "3 models") || !strings.Contains(out, "model a (subjects dprl.a.v1.*): obs dim 4, 2 actions, K = 4") ||
		!strings.Contains(out, "model b (subjects dprl.b.v1.*): obs dim 3, 2 actions, K = 16") || !strings.Contains(out, "model fromenv") {
		t.Errorf("--model with DPRL_MODELS: exit %d %q %q", code, out, stderr)
	}
	t.Setenv("DPRL_MODELS", "") // adds none
	for _, c := range []struct {
		models []string
		want   string
	}{
		{[]string{"a:env-spec=cartpole", "a:env-spec=acrobot"}, `model "a": given twice (entries 1 and 2)`},
		{[]string{"a:env-spec=cartpole", "B:env-spec=cartpole"}, `model entry 2: model name "B"`},
		{[]string{"a:env-spec=nosuchenv"}, `model "a": `},
		{[]string{"a:env-spec=cartpole,z=0"}, `model "a": --z 0: want > 0`},
		{[]string{"a:env-spec=cartpole,nats=nats://x"}, `model "a": key "nats" is the process's`},
		{[]string{"a:env-spec=cartpole,K"}, `model "a": "K" is not key=value`},
	} {
		args := []string{"agent", "--data", dir, "--check-config"}
		for _, m := range c.models {
			args = append(args, "--model", m)
		}
		if code, _, stderr := runCLI(t, args...); code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d %q, want a usage error naming %q", c.models, code, stderr, c.want)
		}
	}
}

// TestAgentModelsServe runs dprl agent with two models until it prints its
// startup lines (each model's per-session and per-user epsilon and the
// composed bound), stops it, and checks each model's ledger directory; a
// model directory holding files but no ledger is a usage error naming it.
func TestAgentModelsServe(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--log-level", "disabled", "agent", "--data", dir, "--nats-listen", "", "--model", "cartpole:env-spec=cartpole", "--model", "tiny:obs-dim=3,actions=2,max-updates-per-user=2"}
	var stderr testutil.LockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() { done <- run(ctx, args, strings.NewReader(""), &strings.Builder{}, &stderr) }()
	err := testutil.Wait(20*time.Second, func() error {
		if !strings.Contains(stderr.String(), "a user of every model") {
			return fmt.Errorf("stderr %q", stderr.String())
		}
		return nil
	})
	cancel()
	if code := <-done; err != nil || code != 0 {
		t.Fatalf("agent: exit %d, %v", code, err)
	}
	for _, want := range []string{"serving 2 models", "model cartpole on dprl.cartpole.v1.*; per-session epsilon", "model cartpole: per-user epsilon at most",
		"model tiny: per-user epsilon at most", "(at most 2 updates per user)"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("startup lines lack %q:\n%s", want, stderr.String())
		}
	}
	for _, m := range []string{"cartpole", "tiny"} {
		if v, err := os.ReadDir(filepath.Join(dir, "models", m)); err != nil || len(v) == 0 {
			t.Errorf("model %s's ledger directory: %v %v", m, v, err)
		}
	}
	stray := filepath.Join(dir, "models", "third")
	os.MkdirAll(stray, 0o700)
	os.WriteFile(filepath.Join(stray, "notes.txt"), nil, 0o600)
	code, _, msg := runCLI(t, append(args[2:], "--model", "third:env-spec=acrobot")...)
	if code != exitUsage || !strings.Contains(msg, `model "third"'s directory `+stray+" holds files but no ledger") || !strings.Contains(msg, "--init") {
		t.Errorf("a stray model directory: exit %d %q", code, msg)
	}
}

// TestModelKeysAreFlags: every key a model entry takes is a flag of dprl
// agent, and sets the same setting as the flag does.
func TestModelKeysAreFlags(t *testing.T) {
	values := map[string]string{"string": "x", "int": "3", "int64": "5", "uint64": "9", "float64": "0.5", "duration": "3s", "bool": "true"}
	for _, key := range service.ModelKeys() {
		var top, byFlag service.Settings
		fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
		registerAgentSettings(fs, &top)
		f := fs.Lookup(key)
		if f == nil {
			t.Errorf("model key %q is not a flag of dprl agent", key)
			continue
		}
		v, ok := values[f.Value.Type()]
		if !ok {
			t.Fatalf("flag --%s of type %s", key, f.Value.Type())
		}
		fs2 := pflag.NewFlagSet("agent", pflag.ContinueOnError)
		registerAgentSettings(fs2, &byFlag)
		if err := fs2.Set(key, v); err != nil {
			t.Fatal(err)
		}
		byModel, err := top.ForModel(service.ModelEntry{Name: "m", Values: map[string]string{key: v}})
		if err != nil {
			t.Fatalf("key %s = %s: %v", key, v, err)
		}
		byModel.DataDir = byFlag.DataDir // the model's own: DataDir/models/NAME
		byModel.Explicit, byFlag.Explicit = nil, nil
		if a, b := fmt.Sprintf("%+v", byModel), fmt.Sprintf("%+v", byFlag); a != b {
			t.Errorf("key %s = %s sets\n%s\nthe flag\n%s", key, v, a, b)
		}
	}
}
