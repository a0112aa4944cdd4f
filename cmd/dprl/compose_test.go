package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// composeService is one service of examples/compose.yaml as the test
// reads it: its command and volumes.
type composeService struct {
	name             string
	command, volumes []string
}

// readCompose reads the services of a compose file written in the block
// style examples/compose.yaml keeps to (two-space indentation, block
// sequences for command and volumes; no YAML library is in go.mod), and
// its top-level keys. It fails on a tab or an odd indentation, which a
// YAML parser would refuse or read otherwise.
func readCompose(t *testing.T, path string) (services []composeService, top []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cur *composeService
	var list *[]string
	inServices := false
	for i, line := range strings.Split(string(b), "\n") {
		if strings.ContainsRune(line, '\t') {
			t.Fatalf("%s:%d: a tab", path, i+1)
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if indent%2 != 0 {
			t.Fatalf("%s:%d: indentation %d", path, i+1, indent)
		}
		switch {
		case indent == 0:
			key, _, _ := strings.Cut(trimmed, ":")
			top = append(top, key)
			inServices, cur, list = key == "services", nil, nil
		case inServices && indent == 2:
			services = append(services, composeService{name: strings.TrimSuffix(trimmed, ":")})
			cur, list = &services[len(services)-1], nil
		case cur != nil && indent == 4:
			switch trimmed {
			case "command:":
				list = &cur.command
			case "volumes:":
				list = &cur.volumes
			default:
				list = nil
			}
		case list != nil && indent == 6 && strings.HasPrefix(trimmed, "- "):
			*list = append(*list, strings.Trim(strings.TrimPrefix(trimmed, "- "), `"`))
		}
	}
	return services, top
}

// flagValue returns --name=VALUE's value among args ("" when absent).
func flagValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// TestComposeExample checks examples/compose.yaml: three dprl nats nodes,
// two learner candidates, three serving replicas and a replay job; every
// command's flags are the command's (an agent's whole configuration passes
// --check-config with the secret's path replaced); every node routes to
// all three and partitions as the replicas do; the learners have distinct
// holder names; every node and agent has a volume of its own at /data;
// --insecure-nats only on the nodes.
func TestComposeExample(t *testing.T) {
	services, top := readCompose(t, filepath.Join("..", "..", "examples", "compose.yaml"))
	for _, want := range []string{"services", "secrets", "volumes", "networks"} {
		if !slices.Contains(top, want) {
			t.Errorf("no top-level %s: %v", want, top)
		}
	}
	dir := t.TempDir()
	key := filepath.Join(dir, "user.key")
	if err := os.WriteFile(key, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, log: zerolog.Nop()}
	var nodes, holders, partitions []string
	volumes := map[string]string{}
	count := map[string]int{}
	for _, s := range services {
		if len(s.command) == 0 {
			t.Fatalf("service %s has no command", s.name)
		}
		args := s.command[1:]
		role := s.command[0]
		if role == "agent" {
			role += " " + flagValue(args, "role")
		}
		count[role]++
		if role != "replay" {
			if len(s.volumes) != 1 || !strings.HasSuffix(s.volumes[0], ":/data") {
				t.Errorf("%s: volumes %q, want one at /data", s.name, s.volumes)
			} else if other, ok := volumes[s.volumes[0]]; ok {
				t.Errorf("%s and %s share the volume %s", s.name, other, s.volumes[0])
			} else {
				volumes[s.volumes[0]] = s.name
			}
		}
		if role != "nats" && slices.Contains(args, "--insecure-nats") {
			t.Errorf("%s: --insecure-nats is for the NATS nodes only", s.name)
		}
		switch s.command[0] {
		case "nats":
			if err := newNATSCmd(a).ParseFlags(args); err != nil {
				t.Errorf("%s: %v", s.name, err)
			}
			nodes = append(nodes, s.name)
			partitions = append(partitions, flagValue(args, "partitions"))
			if !strings.HasPrefix(flagValue(args, "store"), "/data") || flagValue(args, "name") == "" {
				t.Errorf("%s: --store %q, --name %q: want the store in /data and a name", s.name, flagValue(args, "store"), flagValue(args, "name"))
			}
		case "agent":
			var run []string
			for _, x := range args {
				run = append(run, strings.NewReplacer("/run/secrets/user_key", key, "=/data", "="+filepath.Join(dir, s.name)).Replace(x))
			}
			code, out, stderr := runCLI(t, append(append([]string{"agent"}, run...), "--check-config")...)
			if code != 0 || !strings.Contains(out, "configuration OK") {
				t.Errorf("%s: dprl agent %s --check-config: exit %d\n%s%s", s.name, strings.Join(run, " "), code, out, stderr)
			}
			switch flagValue(args, "role") {
			case "learn":
				holders = append(holders, flagValue(args, "cluster-holder"))
			case "serve":
				partitions = append(partitions, flagValue(args, "partitions"))
			}
		case "replay":
			if err := newReplayCmd(a).ParseFlags(args); err != nil {
				t.Errorf("%s: %v", s.name, err)
			}
		default:
			t.Errorf("%s: command %q", s.name, s.command[0])
		}
	}
	want := map[string]int{"nats": 3, "agent learn": 2, "agent serve": 3, "replay": 1}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("%d services of %s, want %d (all: %v)", count[k], k, n, count)
		}
	}
	for _, s := range services {
		routes, urls := flagValue(s.command, "routes"), flagValue(s.command, "nats")
		for _, n := range nodes {
			if s.command[0] == "nats" && !strings.Contains(routes, "nats-route://"+n+":6222") {
				t.Errorf("%s: --routes %q lacks %s", s.name, routes, n)
			}
			if s.command[0] != "nats" && !strings.Contains(urls, "nats://"+n+":4222") {
				t.Errorf("%s: --nats %q lacks %s", s.name, urls, n)
			}
		}
	}
	if len(slices.Compact(slices.Clone(partitions))) != 1 || partitions[0] == "" {
		t.Errorf("--partitions of the nodes and replicas: %q, want one value given to all", partitions)
	}
	if len(holders) != 2 || holders[0] == "" || holders[0] == holders[1] {
		t.Errorf("learner holders %q, want two distinct names", holders)
	}
}
