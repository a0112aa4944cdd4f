package flagsrc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func newSet() (*pflag.FlagSet, *int, *float64, *string) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	k := fs.Int("K", 32, "")
	z := fs.Float64("z", 1, "")
	env := fs.String("env", "", "")
	fs.String("config", "", "")
	return fs, k, z, env
}

func TestApplyPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.json")
	if err := os.WriteFile(file, []byte(`{"K": 8, "z": 2.5, "env": "cartpole"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fs, k, z, env := newSet()
	if err := fs.Parse([]string{"--K", "4"}); err != nil {
		t.Fatal(err)
	}
	if err := Apply(fs, file, []string{"DPRL_Z=3", "OTHER=1"}, "DPRL_", "config"); err != nil {
		t.Fatal(err)
	}
	if *k != 4 || *z != 3 || *env != "cartpole" {
		t.Fatalf("K %d z %v env %q: want the command line's 4, the environment's 3, the file's cartpole", *k, *z, *env)
	}
}

func TestApplyProblems(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.json")
	if err := os.WriteFile(file, []byte(`{"K": "x", "bogus": 1, "config": "y"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fs, _, _, _ := newSet()
	err := Apply(fs, file, []string{"DPRL_Z=abc"}, "DPRL_", "config")
	var e *Error
	if !errors.As(err, &e) || len(e.Problems) != 4 {
		t.Fatalf("Apply = %v, want 4 problems", err)
	}
	for _, want := range []string{`unknown key "bogus"`, `unknown key "config"`, `DPRL_Z="abc"`, `K = "x"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %s", err, want)
		}
	}
	if err := os.WriteFile(file, []byte(`[1]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Apply(fs, file, nil, "DPRL_"); !errors.As(err, &e) || !strings.Contains(err.Error(), "not a JSON object") {
		t.Fatalf("array config: %v", err)
	}
	// A key given twice is refused, not last-wins.
	if err := os.WriteFile(file, []byte(`{"K": 1, "K": 100}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Apply(fs, file, nil, "DPRL_"); !errors.As(err, &e) || !strings.Contains(err.Error(), `duplicate key "K"`) {
		t.Fatalf("duplicate key: %v", err)
	}
	if err := Apply(fs, filepath.Join(dir, "missing.json"), nil, "DPRL_"); err == nil || errors.As(err, &e) {
		t.Fatalf("missing file: %v, want a plain error", err)
	}
}
