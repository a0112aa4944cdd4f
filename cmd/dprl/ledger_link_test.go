package main

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/internal/testutil"
)

// TestLedgerLink: dprl ledger link on the log of a dataset an earlier dprl
// registered links its records by content, and the ledger still verifies;
// linking again has nothing to do.
func TestLedgerLink(t *testing.T) {
	const fixture = "../../ledger/testdata/compat/"
	dir := t.TempDir()
	led := filepath.Join(dir, "offline")
	testutil.MustCopyTree(t, fixture+"2026-11-25/offline", led)
	for _, f := range []string{"user.key", "ledger.heads"} {
		if err := os.Chmod(filepath.Join(led, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	gz, err := os.Open(fixture + "2026-11-25-chain.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer gz.Close()
	zr, err := gzip.NewReader(gz)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "chain.jsonl")
	if err := os.WriteFile(log, b, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, "ledger", "link", "--data", led, "--file", log, "--reason", "upgrade")
	if code != 0 || !strings.Contains(out, "linked the content of 195 records") || !strings.Contains(out, "records-sha256:b0c5cc24") {
		t.Fatalf("link: exit %d, %q %q", code, out, stderr)
	}
	if code, out, stderr := runCLI(t, "ledger", "link", "--data", led, "--file", log, "--reason", "again"); code != 0 || !strings.Contains(out, "nothing to link") {
		t.Fatalf("link again: exit %d, %q %q", code, out, stderr)
	}
	if code, out, stderr := runCLI(t, "ledger", "verify", "--data", led); code != 0 {
		t.Fatalf("verify: exit %d, %q %q", code, out, stderr)
	}
}
