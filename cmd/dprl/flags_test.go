package main

import (
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"dprl/policy"
	"dprl/profile"
	"dprl/sims"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestAgentEnvFlag: dprl agent takes the simulator as --env, as demo,
// replay and train do; the old --env-spec still works from the command
// line, the environment (DPRL_ENV_SPEC) and the config file, each with a
// deprecation warning, and is not shown in the help.
func TestAgentEnvFlag(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "agent.json")
	if err := os.WriteFile(cfg, []byte(`{"env-spec": "pendulum"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		args    []string
		environ string
		warn    string
	}{
		{"--env", []string{"--env", "pendulum"}, "", ""},
		{"--env-spec", []string{"--env-spec", "pendulum"}, "", "--env-spec is deprecated: use --env"},
		{"DPRL_ENV_SPEC", nil, "pendulum", "DPRL_ENV_SPEC is deprecated: use DPRL_ENV"},
		{"config key", []string{"--config", cfg}, "", `key "env-spec" is deprecated: use "env"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.environ != "" {
				t.Setenv("DPRL_ENV_SPEC", c.environ)
			}
			args := append([]string{"agent", "--data", dir, "--check-config"}, c.args...)
			code, out, stderr := runCLI(t, args...)
			if code != 0 || !strings.Contains(out, "rewards clipped to [-16.27") {
				t.Fatalf("exit %d, %q %q: want pendulum's configuration", code, out, stderr)
			}
			if (c.warn == "") != (stderr == "") || !strings.Contains(stderr, c.warn) {
				t.Errorf("stderr %q, want the warning %q", stderr, c.warn)
			}
		})
	}
	if code, _, stderr := runCLI(t, "agent", "--data", dir, "--env", "cartpole", "--env-spec", "pendulum", "--check-config"); code != exitUsage || !strings.Contains(stderr, "give only --env") {
		t.Errorf("--env and --env-spec: exit %d %q, want a usage error", code, stderr)
	}
	for _, ex := range []string{"agent.json", "agent-secure.json"} { // the examples use the new name
		if b, err := os.ReadFile(filepath.Join("..", "..", "examples", ex)); err != nil || strings.Contains(string(b), "env-spec") {
			t.Errorf("examples/%s uses env-spec (%v)", ex, err)
		}
	}
	code, out, _ := runCLI(t, "agent", "--help")
	if code != 0 || strings.Contains(out, "--env-spec ") || !strings.Contains(out, "--env string") {
		t.Errorf("agent --help shows --env-spec or lacks --env:\n%s", out)
	}
}

// visibleFlags calls fn with every command of the dprl tree and each of
// its visible flags (inherited ones included).
func visibleFlags(fn func(cmd *cobra.Command, f *pflag.Flag)) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.InheritedFlags().VisitAll(func(f *pflag.Flag) {}) // merges the persistent flags
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				fn(c, f)
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd(&app{stdout: io.Discard, stderr: io.Discard}))
}

// TestFlagNamesMeanOneThing: a step-size flag means the same in every
// command: --lr the local Adam rate, --server-lr the server step eta
// (dprl demo's server step was --lr, dprl train's local rate).
func TestFlagNamesMeanOneThing(t *testing.T) {
	means := map[string]string{"lr": "local Adam", "server-lr": "server step size eta", "epsilon": "epsilon"}
	visibleFlags(func(c *cobra.Command, f *pflag.Flag) {
		if want, ok := means[f.Name]; ok && !strings.Contains(f.Usage, want) {
			t.Errorf("%s --%s: %q does not say %q", c.CommandPath(), f.Name, f.Usage, want)
		}
	})
	code, _, stderr := runCLI(t, "demo", "--lr", "0.5", "--z", "0")
	if code != exitUsage || !strings.Contains(stderr, "--lr is deprecated: use --server-lr") {
		t.Errorf("demo --lr: exit %d %q, want the deprecation warning (and --z 0's usage error)", code, stderr)
	}
}

// TestTrainEpsilonOneFlag: dprl train's target epsilon is --epsilon for
// every algorithm (dppg-loglinear's list was --eps, now its deprecated
// alias, hidden from the help); dppg takes one value.
func TestTrainEpsilonOneFlag(t *testing.T) {
	base := []string{"train", "--algo", "dppg-loglinear", "--env", "riverswim", "--episodes", "2", "--seeds", "1", "--region", "l2", "--seed", "1", "--json"}
	code, newOut, stderr := runCLI(t, append(base, "--epsilon", "5")...)
	if code != 0 || stderr != "" {
		t.Fatalf("--epsilon 5: exit %d %q", code, stderr)
	}
	code, oldOut, stderr := runCLI(t, append(base, "--eps", "5")...)
	secs := regexp.MustCompile(`"seconds": [0-9.e-]+`) // the only field that differs between runs
	if same := secs.ReplaceAllString(oldOut, "") == secs.ReplaceAllString(newOut, ""); code != 0 || !strings.Contains(stderr, "--eps is deprecated: use --epsilon") || !same {
		t.Errorf("--eps 5: exit %d %q; same result as --epsilon 5: %v", code, stderr, same)
	}
	code, _, stderr = runCLI(t, "train", "--algo", "dppg", "--epsilon", "1,5")
	if code != exitUsage || !strings.Contains(stderr, "--algo dppg takes one target epsilon") {
		t.Errorf("dppg --epsilon 1,5: exit %d %q", code, stderr)
	}
	if _, out, _ := runCLI(t, "train", "--help"); strings.Contains(out, "--eps ") || !strings.Contains(out, "--epsilon float64Slice") {
		t.Errorf("train --help: --eps shown or --epsilon missing")
	}
}

// parseDefaultsHelp reads profile.TrainDefaultsHelp's text back: the flags
// of every environment named in it (each line's over the first line's), and
// those of the first line alone under "".
func parseDefaultsHelp(t *testing.T, text string) map[string]map[string]string {
	t.Helper()
	var entries []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "      ") && len(entries) > 0 {
			entries[len(entries)-1] += line
		} else {
			entries = append(entries, line)
		}
	}
	flags := func(s string) map[string]string {
		m := map[string]string{}
		fields := strings.Fields(s)
		for i := 0; i < len(fields); i++ {
			name, v, ok := strings.Cut(strings.TrimPrefix(fields[i], "--"), "=")
			if !ok {
				v = "true"
				if i+1 < len(fields) && !strings.HasPrefix(fields[i+1], "--") {
					v, i = fields[i+1], i+1
				}
			}
			m[name] = v
		}
		return m
	}
	out := map[string]map[string]string{}
	for i, e := range entries {
		label, list, ok := strings.Cut(e, ":")
		if !ok {
			t.Fatalf("defaults line %q has no label", e)
		}
		if i == 0 {
			out[""] = flags(list)
			continue
		}
		for _, env := range strings.Split(strings.TrimSpace(label), ", ") {
			m := maps.Clone(out[""])
			maps.Copy(m, flags(list))
			out[env] = m
		}
	}
	return out
}

// TestTrainHelpDefaults: dprl train --help lists the defaults that depend
// on --env from the profiles (CartPole: K 8 with sqrt noise), its flags
// print no generic default, and the values listed are those a run uses:
// giving them all explicitly yields the same learner configuration as
// giving none, for every environment.
func TestTrainHelpDefaults(t *testing.T) {
	code, help, _ := runCLI(t, "train", "--help")
	text := profile.TrainDefaultsHelp(80)
	if code != 0 || !strings.Contains(help, text) || !strings.Contains(text, "cartpole: --K 8 --noise sqrt --server-lr 0.5") {
		t.Fatalf("train --help lacks the defaults by environment:\n%s", help)
	}
	for _, name := range profile.TrainFlagNames() {
		line := regexp.MustCompile(`(?m)^\s+--` + name + ` .*$`).FindString(help[strings.Index(help, "\nFlags:"):])
		if !strings.Contains(line, "default: by --env") || regexp.MustCompile(`\(default [^:]`).MatchString(line) {
			t.Errorf("--%s's help %q: want no generic default, and the pointer to the list", name, line)
		}
	}
	plan := func(args ...string) policy.Config {
		t.Helper()
		cmd, f := newTrainCommand(&app{})
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		spec, perr := trainSpec(cmd, f)
		p, err := spec.Plan()
		if perr != nil || err != nil {
			t.Fatalf("%v: %v %v", args, perr, err)
		}
		p.Config.PPO.ValueScale = max(p.Config.PPO.ValueScale, 1) // 0 means 1
		return p.Config
	}
	listed := parseDefaultsHelp(t, text)
	for _, env := range sims.Names() {
		flags, ok := listed[env]
		if !ok {
			flags = listed[""]
		}
		args := []string{"--env", env}
		for name, v := range flags {
			args = append(args, "--"+name+"="+v)
		}
		if got, want := plan(args...), plan("--env", env); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the listed defaults %v give\n%+v\nwant the default\n%+v", env, args, got, want)
		}
	}
}
