package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"dprl/offline/svt"
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
	// A model's key is env too; env-spec, its deprecated name, still works,
	// but not beside env.
	code, out, stderr := runCLI(t, "agent", "--data", dir, "--model", "a:env=pendulum", "--model", "b:env-spec=acrobot", "--check-config")
	if code != 0 || !strings.Contains(out, "model a (subjects dprl.a.v1.*): obs dim 3") || !strings.Contains(out, "model b (subjects dprl.b.v1.*): obs dim 6") {
		t.Errorf("--model a:env=pendulum b:env-spec=acrobot: exit %d %q %q", code, out, stderr)
	}
	if code, _, stderr := runCLI(t, "agent", "--data", dir, "--model", "a:env=pendulum,env-spec=acrobot", "--check-config"); code != exitUsage || !strings.Contains(stderr, `"env-spec" is the deprecated name of "env"`) {
		t.Errorf("a model with env and env-spec: exit %d %q", code, stderr)
	}
	// dprl report names the agent's simulator the same way.
	if code, _, stderr := runCLI(t, "report", "--env-spec", "cartpole"); code != exitUsage || !strings.Contains(stderr, "--env-spec is deprecated: use --env") {
		t.Errorf("report --env-spec: exit %d %q", code, stderr)
	}
	for _, ex := range []string{"agent.json", "agent-secure.json", "agent-models.json"} { // the examples use the new name
		if b, err := os.ReadFile(filepath.Join("..", "..", "examples", ex)); err != nil || strings.Contains(string(b), "env-spec") {
			t.Errorf("examples/%s uses env-spec (%v)", ex, err)
		}
	}
	code, out, _ = runCLI(t, "agent", "--help")
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
// on --env from the profiles (CartPole: whole episodes per user), its flags
// print no generic default, and the values listed are those a run uses:
// giving them all explicitly yields the same learner configuration as
// giving none, for every environment.
func TestTrainHelpDefaults(t *testing.T) {
	code, help, _ := runCLI(t, "train", "--help")
	text := profile.TrainDefaultsHelp(80)
	if code != 0 || !strings.Contains(help, text) || !strings.Contains(text, "cartpole: --steps-per-user 500") {
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
		spec, perr := f.Train(f.fl.FieldChanged)
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

// TestOfflineSVTForce: offline svt refuses an existing output without
// --force, as sims generate and ledger snapshot do, before anything is
// charged or written; with --force it replaces it.
func TestOfflineSVTForce(t *testing.T) {
	data, experts := svtFixture(t, 3, "0.02")
	snap, err := os.ReadFile(svt.ExpertPath(experts, "e0"))
	for i := 0; err == nil && i < 200; i++ { // a roster whose counts can reach the threshold 182
		err = os.WriteFile(svt.ExpertPath(experts, fmt.Sprintf("x%d", i)), snap, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	st, led := filepath.Join(dir, "s.jsonl"), filepath.Join(dir, "ledger")
	args := []string{"offline", "svt", "--data", data, "--experts", experts, "--epsilon", "5", "--delta", "1e-3",
		"--dataset-delta", "1e-2", "--queries", "1", "--out-stable", st, "--ledger", led}
	if code, _, stderr := runCLI(t, args...); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	if err := os.WriteFile(st, []byte("kept\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := ledgerEntries(t, led)
	code, _, stderr := runCLI(t, args...)
	if code != exitUsage || !strings.Contains(stderr, "--out-stable "+st+" exists (--force overwrites it)") {
		t.Errorf("second run: exit %d %q, want a usage error naming --force", code, stderr)
	}
	if b, _ := os.ReadFile(st); string(b) != "kept\n" || ledgerEntries(t, led) != n {
		t.Errorf("the refused run wrote %q or charged the ledger (%d entries, %d before)", b, ledgerEntries(t, led), n)
	}
	if code, _, stderr := runCLI(t, append(args, "--force")...); code != 0 || ledgerEntries(t, led) <= n {
		t.Errorf("--force: exit %d %q", code, stderr)
	}
	if b, _ := os.ReadFile(st); string(b) == "kept\n" {
		t.Error("--force did not replace the output")
	}
}

// TestConfigErrorsExitTwo: in every command a bad flag value, a bad
// combination, a missing required flag, an unreadable configuration or
// credentials file, or an existing output without --force is a usage error
// (exit 2, one line naming the flag) and nothing runs; every runnable
// command has a case here.
func TestConfigErrorsExitTwo(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	exists := filepath.Join(dir, "exists")
	if err := os.WriteFile(exists, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	auth := filepath.Join(dir, "auth.json")
	if err := os.WriteFile(auth, []byte(`{"learners":[{"name":"l","nkey":"UBALVDVO5B5JK53MO3ZYJBANPXFD56VVKBIHF7QQSWFY4C43CLSIJVV4"}],
		"replicas":[{"name":"r","nkey":"UDKUOTEO3SEZMQIXFG3QPAZ7SCV7J5XLVQGJYWUGEITY2ZWGRGCUEADM"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		cmd  string // the command path after "dprl"
		args []string
		want string
	}{
		{"accountant epsilon", []string{"--z", "-1", "--delta", "1e-5"}, "z = -1"},
		{"accountant noise", []string{"--epsilon", "1"}, "delta"},
		{"accountant svt", []string{"--epsilon", "1", "--delta", "1e-3", "--queries", "0", "--max-len", "5", "--pmin", "0.1"}, "queries"},
		{"audit", []string{"--runs", "1"}, "--runs"},
		{"audit", []string{"--mechanism", "nope"}, "mechanism"},
		{"ledger show", nil, "--data"},
		{"ledger verify", []string{"--data", dir, "x"}, "unexpected argument"},
		{"ledger head", nil, "--data"},
		{"ledger export", []string{"--data", dir, "--bogus"}, "unknown flag"},
		{"ledger snapshot", []string{"--data", dir, "--out", exists}, "exists (--force"},
		{"ledger set-cap", []string{"--data", dir, "--dataset", "x", "--epsilon", "-1", "--delta", "1e-5", "--reason", "r"}, "--epsilon"},
		{"ledger backup", []string{"--data", dir}, "--out"},
		{"ledger end-stream", nil, "--data"},
		{"ledger link", []string{"--data", dir, "--file", exists}, "--reason"},
		{"sims list", []string{"x"}, "unexpected argument"},
		{"sims rollout", []string{"--env", "nope"}, "--env"},
		{"sims generate", []string{"--env", "cartpole", "--behavior", "random", "--episodes", "1", "--out", exists}, "exists"},
		{"sims generate", []string{"--env", "cartpole", "--behavior", "policy:" + missing, "--episodes", "1", "--out", missing}, "--behavior"},
		{"sims bandit", []string{"--seeds", "0"}, "--seeds 0"},
		{"sims baselines", []string{"--env", "recsys", "--episodes", "0"}, "0 episodes"},
		{"sims experts", []string{"--m", "0", "--out-dir", dir, "--log", missing}, "--m 0"},
		{"agent", []string{"--data", dir, "--env", "cartpole", "--z", "-1", "--check-config"}, "--z -1"},
		{"agent", []string{"--data", dir, "--env", "cartpole", "--config", missing, "--check-config"}, "missing"},
		{"agent", []string{"--data", dir, "--env", "cartpole", "--log-sessions", missing, "--session-log-format", "dsjson", "--check-config"}, "--session-log-format dsjson with --env cartpole: its sessions last up to 500 steps"},
		{"agent", []string{"--data", dir, "--env", "bandit", "--session-log-format", "dsjson", "--check-config"}, "--session-log-format dsjson without --log-sessions"},
		{"agent nkey", []string{"--seed-file", exists}, "--seed-file"},
		{"agent nkey", nil, "--seed-file"},
		{"demo", []string{"--users", "0"}, "--users"},
		{"demo", []string{"--clip", "-1"}, "--clip -1"},
		{"demo", []string{"--server-lr", "NaN"}, "--server-lr NaN"},
		{"demo", []string{"--max-duration", "-1s"}, "--max-duration -1s"},
		{"nats", nil, "--store"},
		{"nats", []string{"--store", dir, "--listen", "0.0.0.0:4222"}, "--insecure-nats"},
		{"nats", []string{"--store", dir, "--routes", "nats-route://127.0.0.1:6222"}, "--routes needs --cluster"},
		{"nats", []string{"--store", dir, "--auth", missing}, "--auth"},
		{"nats", []string{"--store", dir, "--auth", exists}, "--auth"},
		{"nats", []string{"--store", dir, "--auth", auth, "--listen", "0.0.0.0:4222"}, "--tls-cert"},
		{"nats", []string{"--store", dir, "--tls-key", exists}, "--tls-cert and --tls-key go together"},
		{"nats", []string{"--store", dir, "--cluster", "c", "--cluster-listen", "0.0.0.0:6222", "--auth", auth}, "--cluster-listen off loopback needs --route-tls-* and --route-password-file"},
		{"nats", []string{"--store", dir, "--route-password-file", exists}, "--route-password-file and --route-tls-* need --cluster"},
		{"nats", []string{"--store", dir, "--cluster", "c", "--route-tls-cert", exists}, "--route-tls-cert, --route-tls-key and --route-tls-ca go together"},
		{"nats", []string{"--store", dir, "--encryption-key", exists}, "--encryption-key " + exists + ": 1 characters, want at least 32"},
		{"nats", []string{"--store", dir, "--encryption-key", auth, "--cipher", "rot13"}, "--cipher"},
		{"agent", []string{"--data", dir, "--env", "cartpole", "--role", "serve", "--check-config"}, "--nats"},
		{"replay", []string{"--returning", "1"}, "--returning"},
		{"replay", []string{"--creds", missing}, "--creds"},
		{"replay", []string{"--tls-ca", missing}, "--tls-ca"},
		{"bench serve", []string{"--concurrency", "0"}, "--concurrency"},
		{"bench serve", []string{"--act-workers", "-1"}, "--act-workers"},
		{"bench vw", nil, `required flag(s) "vw"`},
		{"bench vw", []string{"--vw", missing, "--learner", "--squarecb --port 1"}, "--learner \"--squarecb --port 1\": vw: learner argument --port is set by the driver"},
		{"train", []string{"--noise", "nope"}, "--noise"},
		{"train", []string{"--algo", "dppg", "--epsilon", "1,2"}, "--epsilon"},
		{"offline gtd2", []string{"--data", missing, "--method", "nope"}, "--method"},
		{"offline svt", []string{"--data", missing, "--experts", dir, "--epsilon", "1", "--delta", "1e-3", "--queries", "1", "--out-stable", exists}, "--out-stable " + exists + " exists"},
		{"offline ope", []string{"--data", missing, "--target", "uniform", "--actions", "2", "--epsilon", "1", "--delta", "1e-5", "--weight-bound", "-3"}, "--weight-bound -3"},
		{"offline ope", []string{"--data", missing, "--target", "uniform", "--actions", "2", "--non-private", "--horizon", "0"}, "--horizon 0"},
		{"sims ope", []string{"--reps", "1"}, "1 repetitions"},
		{"offline primorl", []string{"--data", missing, "--rounds", "0"}, "--rounds 0"},
		{"plot regret", []string{"--out", filepath.Join(dir, "r.png"), missing}, "missing"},
		{"plot primorl", []string{missing}, "missing"},
		{"offline learn", []string{"--data", missing, "--non-private", "--steps", "0"}, "--steps 0"},
		{"plot learn", []string{missing}, "missing"},
		{"sessions import-dsjson", []string{"--in", missing, "--out", exists}, "--out " + exists + " exists"},
		{"sessions export-dsjson", []string{"--in", missing, "--out", missing}, "--actions"},
		{"version", []string{"x"}, "unexpected argument"},
		{"report", []string{"--out", dir}, "--data"},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.cmd] = true
		t.Run(c.cmd+" "+strings.Join(c.args, " "), func(t *testing.T) {
			code, out, stderr := runCLI(t, append(strings.Fields(c.cmd), c.args...)...)
			if code != exitUsage || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and one line naming %q", code, out, stderr, c.want)
			}
		})
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if path := strings.TrimPrefix(c.CommandPath(), "dprl "); c.Runnable() && !c.HasSubCommands() && !covered[path] && c.Name() != "help" {
			t.Errorf("no bad invocation of dprl %s", path)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd(&app{stdout: io.Discard, stderr: io.Discard}))
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("a refused command created %s", missing)
	}
}

// TestNoColoursOffTerminal: console logs written to a file or pipe (here a
// buffer) carry no ANSI escape sequences, with --log-format console as
// with auto; JSON stays JSON.
func TestNoColoursOffTerminal(t *testing.T) {
	for _, format := range []string{"console", "auto", "json"} {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"--log-level", "debug", "--log-format", format, "sims", "generate", "--env", "cartpole",
			"--behavior", "random", "--episodes", "1", "--out", filepath.Join(t.TempDir(), "g.jsonl")}, strings.NewReader(""), &out, &errb)
		if code != 0 || errb.Len() == 0 {
			t.Fatalf("%s: exit %d, stderr %q: want a log line", format, code, errb.String())
		}
		if strings.Contains(errb.String(), "\x1b") {
			t.Errorf("--log-format %s: ANSI escapes written to a buffer: %q", format, errb.String())
		}
		if json.Valid(errb.Bytes()[:bytes.IndexByte(errb.Bytes(), '\n')]) != (format != "console") {
			t.Errorf("--log-format %s: first line %q", format, errb.String())
		}
	}
}

// TestHelpShowsNoSentinelDefaults: a flag whose default is a sentinel (NaN:
// "the simulator's bound"; an empty list) shows no "(default NaN)" or
// "(default [])" in its help, and no help says "1 updates" (a count of one
// with a plural noun), in every command of the tree.
func TestHelpShowsNoSentinelDefaults(t *testing.T) {
	bad := regexp.MustCompile(`\(default (NaN|\[\]|)\)|(^|[^-.\w])1 (updates|users|sessions|steps|episodes|trajectories|releases|runs)\b`)
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.Fields(strings.TrimPrefix(c.CommandPath(), "dprl"))
		if c.Name() != "help" {
			n++
			_, out, _ := runCLI(t, append(path, "--help")...)
			if m := bad.FindString(out); m != "" {
				t.Errorf("dprl %s --help shows %q", strings.Join(path, " "), m)
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd(&app{stdout: io.Discard, stderr: io.Discard}))
	if n < 40 {
		t.Errorf("%d commands' help checked, want the whole tree", n)
	}
}
