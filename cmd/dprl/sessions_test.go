package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestSessionsDSJSON runs import-dsjson and export-dsjson on the example
// log: the summary, a usage error and a refused line with its number.
func TestSessionsDSJSON(t *testing.T) {
	dir := t.TempDir()
	log, ds := filepath.Join(dir, "d.jsonl"), filepath.Join(dir, "d.dsjson")
	code, out, errOut := runCLI(t, "sessions", "import-dsjson", "--in", "../../examples/vw-decisions.dsjson", "--out", log, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var st struct {
		Decisions, Actions int
		Skipped            int `json:"skipped_learn"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Decisions != 4 || st.Actions != 4 || st.Skipped != 1 {
		t.Fatalf("%+v %v: %s", st, err, out)
	}
	if code, out, errOut = runCLI(t, "sessions", "export-dsjson", "--in", log, "--out", ds, "--actions", "4"); code != 0 || !strings.Contains(out, "exported 4") {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if code, _, _ = runCLI(t, "sessions", "export-dsjson", "--in", log, "--out", ds); code != 2 {
		t.Errorf("export without --actions: exit %d, want 2", code)
	}
	code, _, errOut = runCLI(t, "sessions", "import-dsjson", "--in", log, "--out", filepath.Join(dir, "x.jsonl"))
	if code != 1 || !strings.Contains(errOut, log+`:1: dsjson: bad decision: unknown field "session"`) {
		t.Errorf("exit %d: %s", code, errOut)
	}
}
