package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"dprl/offline/ope/coverage"
)

// TestSimsOPE runs a small coverage study from the command line: JSON
// with a row per interval, labelled simulation only, and the figure.
func TestSimsOPE(t *testing.T) {
	png := filepath.Join(t.TempDir(), "cov.png")
	code, out, stderr := runCLI(t, "sims", "ope", "--n", "300", "--reps", "20", "--epsilon", "0,5", "--bootstrap", "20", "--seed", "1", "--plot", png, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r coverage.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Simulation != coverage.SimulationOnly || r.Reps != 20 || len(r.Rows) != 10 || len(r.Bounds) != 1 {
		t.Errorf("result %+v", r)
	}
	if fi, err := os.Stat(png); err != nil || fi.Size() == 0 {
		t.Errorf("figure: %v", err)
	}
}
