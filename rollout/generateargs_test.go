package rollout

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/internal/fielderr"
)

// TestGenerateArgs: the settings of a generated log are checked in order,
// each error naming its fields.
func TestGenerateArgs(t *testing.T) {
	dir := t.TempDir()
	exists := filepath.Join(dir, "a.jsonl")
	if err := os.WriteFile(exists, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "b.jsonl")
	ok := GenerateArgs{Env: "chain", Behavior: "random", Episodes: 2, Out: out}
	with := func(f func(*GenerateArgs)) GenerateArgs { a := ok; f(&a); return a }
	none := func(string) bool { return false }
	cases := []struct {
		name string
		args GenerateArgs
		set  func(string) bool
		want string
	}{
		{"no env", with(func(a *GenerateArgs) { a.Env = "" }), none, "{Env} is required"},
		{"continuous", with(func(a *GenerateArgs) { a.Env = "pendulum" }), none, "{Env} pendulum has continuous actions"},
		{"no behavior", with(func(a *GenerateArgs) { a.Behavior = "" }), none, "{Behavior} is required"},
		{"no episodes", with(func(a *GenerateArgs) { a.Episodes = 0 }), none, "{Episodes} 0: want at least 1"},
		{"no out", with(func(a *GenerateArgs) { a.Out = "" }), none, "{Out} is required"},
		{"max steps", ok, func(f string) bool { return f == "MaxSteps" }, "{MaxSteps} 0: want at least 1"},
		{"bad behavior", with(func(a *GenerateArgs) { a.Behavior = "x" }), none, "{Behavior}: policies: bad policy spec"},
		{"missing reference", with(func(a *GenerateArgs) { a.Behavior, a.Policy = "greedy", filepath.Join(dir, "none") }), none, "{Policy}: "},
		{"exists", with(func(a *GenerateArgs) { a.Out = exists }), none, "{Out} " + exists + " exists"},
	}
	for _, c := range cases {
		_, err := c.args.Config(c.set)
		if got := fielderr.Rename(err, func(f string) string { return "{" + f + "}" }); err == nil || !strings.HasPrefix(got.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	cfg, err := with(func(a *GenerateArgs) { a.Out, a.Force = exists, true }).Config(none)
	if err != nil || cfg.Env == nil || cfg.Behavior == nil || cfg.EnvName != "chain" || cfg.Episodes != 2 {
		t.Errorf("Config: %+v, %v", cfg, err)
	}
}
