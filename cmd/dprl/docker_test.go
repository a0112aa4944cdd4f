package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/internal/testutil"
)

// dockerRunArgs returns the arguments of the dprl agent command documented
// in the Dockerfile's header (after the image name), with /data replaced
// by dir.
func dockerRunArgs(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var cmd strings.Builder
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		l := strings.TrimSpace(strings.TrimPrefix(line, "#"))
		if strings.HasPrefix(l, "Run:") {
			in, l = true, strings.TrimSpace(strings.TrimPrefix(l, "Run:"))
		}
		if !in {
			continue
		}
		cont := strings.HasSuffix(l, "\\")
		cmd.WriteString(strings.TrimSuffix(l, "\\") + " ")
		if !cont {
			break
		}
	}
	fields := strings.Fields(cmd.String())
	for i, f := range fields {
		if f == "dprl" && i+1 < len(fields) && fields[i+1] == "agent" { // the image, then its command
			args := fields[i+1:]
			for j, a := range args {
				args[j] = strings.ReplaceAll(a, "/data", dir)
			}
			return args
		}
	}
	t.Fatalf("no dprl command in the Dockerfile's run line: %q", cmd.String())
	return nil
}

// TestDockerRunCommand: the Dockerfile's documented run command is a valid
// agent configuration (checked with --check-config against real client
// identity and TLS files in place of the volume's).
func TestDockerRunCommand(t *testing.T) {
	dir := t.TempDir()
	args := dockerRunArgs(t, dir)
	if len(args) == 0 || args[0] != "agent" {
		t.Fatalf("documented command %q: want dprl agent", args)
	}
	cert, key := testutil.WriteSelfSigned(t, dir)
	if err := os.Rename(cert, filepath.Join(dir, "tls.crt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(key, filepath.Join(dir, "tls.key")); err != nil {
		t.Fatal(err)
	}
	_, pub := writeClient(t, dir, "web")
	if err := os.WriteFile(filepath.Join(dir, "clients.json"), []byte(`{"clients":[{"name":"web","nkey":"`+pub+`"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, append(args, "--check-config")...)
	if code != 0 || !strings.Contains(out, "configuration OK") {
		t.Fatalf("dprl %s --check-config: exit %d\n%s%s", strings.Join(args, " "), code, out, stderr)
	}
	// Without the security files the same command is refused off loopback.
	var bare []string
	for i := 0; i < len(args); i++ {
		if strings.HasPrefix(args[i], "--nats-clients") || strings.HasPrefix(args[i], "--nats-tls") {
			i++
			continue
		}
		bare = append(bare, args[i])
	}
	if code, _, stderr := runCLI(t, append(bare, "--check-config")...); code == 0 {
		t.Fatalf("an open embedded server on 0.0.0.0 passed --check-config: %s", stderr)
	}
}
