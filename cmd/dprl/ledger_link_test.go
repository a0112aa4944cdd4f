package main

import (
	"strings"
	"testing"

	"dprl/internal/testutil"
)

// TestLedgerLink: dprl ledger link on the log of a dataset an earlier dprl
// registered links its records by content, and the ledger still verifies;
// linking again has nothing to do.
func TestLedgerLink(t *testing.T) {
	led, log := testutil.CompatOfflineLedger(t, "../../ledger/testdata/compat")
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
