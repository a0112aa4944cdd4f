package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportCommand runs dprl report on a ledger with two releases and an
// offline run: it writes report.html and the PNGs, refuses to overwrite
// them without --force (exit 2), and fails (exit 1) when --env names a
// simulator the ledger's snapshots do not fit.
func TestReportCommand(t *testing.T) {
	if code, _, stderr := runCLI(t, "report"); code != 2 || !strings.Contains(stderr, "--data is required") {
		t.Errorf("without --data: exit %d, %q", code, stderr)
	}
	dir := makeLedger(t)
	out := filepath.Join(t.TempDir(), "audit")
	code, stdout, stderr := runCLI(t, "report", "--data", dir, "--out", out, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct {
		HTML     string   `json:"html"`
		PNGs     []string `json:"pngs"`
		Policies []struct {
			Releases int    `json:"releases"`
			Curve    string `json:"curve"`
		} `json:"policies"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil || res.HTML != filepath.Join(out, "report.html") || len(res.PNGs) != 2 || len(res.Policies) != 1 ||
		res.Policies[0].Releases != 2 || !strings.HasPrefix(res.Policies[0].Curve, "none: no --env") {
		t.Fatalf("result %+v (%v)", res, err)
	}
	if !strings.Contains(string(html), "1 (offline runs, caps: see dprl ledger show)") {
		t.Error("report.html does not mention the offline entry")
	}
	if code, _, stderr := runCLI(t, "report", "--data", dir, "--out", out); code != 2 || !strings.Contains(stderr, "--force") {
		t.Errorf("existing outputs: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "report", "--data", dir, "--out", out, "--force", "--env", "cartpole"); code != 1 || !strings.Contains(stderr, "does not fit") {
		t.Errorf("snapshots that are not cartpole policies: exit %d, %q", code, stderr)
	}
}
