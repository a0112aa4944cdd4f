package testutil

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// CompatOfflineLedger copies the offline ledger an earlier dprl wrote
// (fixture is the path of ledger/testdata/compat/ from the calling test's
// package) into a new directory, with its secret files at mode 0600, and
// unpacks the session log its dataset was charged for beside it. It returns
// the ledger's directory and the log's path.
func CompatOfflineLedger(tb testing.TB, fixture string) (ledgerDir, log string) {
	tb.Helper()
	dir := tb.TempDir()
	ledgerDir = filepath.Join(dir, "offline")
	MustCopyTree(tb, filepath.Join(fixture, "2026-11-25", "offline"), ledgerDir)
	for _, f := range []string{"user.key", "ledger.heads"} {
		if err := os.Chmod(filepath.Join(ledgerDir, f), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	gz, err := os.Open(filepath.Join(fixture, "2026-11-25-chain.jsonl.gz"))
	if err != nil {
		tb.Fatal(err)
	}
	defer gz.Close()
	zr, err := gzip.NewReader(gz)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatal(err)
	}
	log = filepath.Join(dir, "chain.jsonl")
	if err := os.WriteFile(log, b, 0o600); err != nil {
		tb.Fatal(err)
	}
	return ledgerDir, log
}
