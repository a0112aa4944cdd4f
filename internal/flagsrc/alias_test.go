package flagsrc

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// aliasSet is a flag set with --env, renamed from --env-spec, and --K.
func aliasSet(warn *bytes.Buffer) (*pflag.FlagSet, *string) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.SetOutput(new(bytes.Buffer))
	env := fs.String("env", "", "environment")
	fs.Int("K", 32, "")
	fs.String("config", "", "")
	Alias(fs, "env-spec", "env", warn)
	return fs, env
}

// TestAliasCommandLine: the deprecated name sets the new flag (which then
// counts as set), warns, is hidden from the help, and cannot be combined
// with the new name in either order.
func TestAliasCommandLine(t *testing.T) {
	var warn bytes.Buffer
	fs, env := aliasSet(&warn)
	if err := fs.Parse([]string{"--env-spec", "cartpole"}); err != nil {
		t.Fatal(err)
	}
	if *env != "cartpole" || !fs.Changed("env") {
		t.Errorf("--env-spec cartpole: env %q, changed %v", *env, fs.Changed("env"))
	}
	if got := warn.String(); got != "warning: --env-spec is deprecated: use --env\n" {
		t.Errorf("warning %q", got)
	}
	if u := fs.FlagUsages(); strings.Contains(u, "--env-spec string") || !strings.Contains(u, "(formerly --env-spec)") {
		t.Errorf("help:\n%s", u)
	}
	for _, args := range [][]string{{"--env", "a", "--env-spec", "b"}, {"--env-spec", "a", "--env", "b"}} {
		fs, _ := aliasSet(new(bytes.Buffer))
		if err := fs.Parse(args); err == nil || !strings.Contains(err.Error(), "--env-spec is the deprecated name of --env") {
			t.Errorf("%q: %v, want a refusal", args, err)
		}
	}
	fs, env = aliasSet(new(bytes.Buffer))
	if err := fs.Parse([]string{"--env", "a", "--env", "b"}); err != nil || *env != "b" {
		t.Errorf("--env twice: %v, %q", err, *env)
	}
}

// TestAliasApply: the deprecated variable and config key are read (with a
// warning) under the usual precedence; the command line's deprecated name
// wins over the new name's variable; both names in one source is a problem.
func TestAliasApply(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		file := filepath.Join(dir, "c.json")
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	cases := []struct {
		name, args, file string
		env              []string
		want, warn       string
	}{
		{"old key", "", `{"env-spec": "acrobot"}`, nil, "acrobot", `key "env-spec" is deprecated: use "env"`},
		{"old variable over new key", "", `{"env": "acrobot"}`, []string{"P_ENV_SPEC=pendulum"}, "pendulum", "P_ENV_SPEC is deprecated: use P_ENV"},
		{"new variable over old key", "", `{"env-spec": "acrobot"}`, []string{"P_ENV=pendulum"}, "pendulum", ""},
		{"old flag over new variable", "--env-spec=chain", `{}`, []string{"P_ENV=pendulum"}, "chain", "--env-spec is deprecated"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var warn bytes.Buffer
			fs, env := aliasSet(&warn)
			if err := fs.Parse(strings.Fields(c.args)); err != nil {
				t.Fatal(err)
			}
			if err := Apply(fs, write(c.file), c.env, "P_", "config"); err != nil {
				t.Fatal(err)
			}
			if *env != c.want || !strings.Contains(warn.String(), c.warn) || (c.warn == "") != (warn.Len() == 0) {
				t.Errorf("env %q (want %q), warnings %q (want %q)", *env, c.want, warn.String(), c.warn)
			}
		})
	}
	for _, c := range []struct {
		file string
		env  []string
		want string
	}{
		{`{"env": "a", "env-spec": "b"}`, nil, "env and env-spec both given"},
		{`{}`, []string{"P_ENV=a", "P_ENV_SPEC=b"}, "P_ENV and P_ENV_SPEC both given"},
	} {
		fs, _ := aliasSet(new(bytes.Buffer))
		var e *Error
		if err := Apply(fs, write(c.file), c.env, "P_", "config"); !errors.As(err, &e) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: %v, want a problem %q", c.file, c.env, err, c.want)
		}
	}
}
