package qlearn

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSummarizeFiles: the results in the files are grouped and normalised
// by the random policy's return on their env; a file that is not a
// result, or a result of an env with no simulator, is an error naming
// the file.
func TestSummarizeFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	np := write("np.json", `{"algo":"cql","env":"cartpole","mode":"non-private","return":200}`)
	dp := write("dp.json", `{"algo":"cql","env":"cartpole","mode":"dp-sgd","private":true,"dataset_spent":1,"return":100}`)
	gs, err := SummarizeFiles([]string{np, dp})
	if err != nil || len(gs) != 2 {
		t.Fatalf("SummarizeFiles: %+v, %v", gs, err)
	}
	random, err := RandomReturn("cartpole", 1000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if g := gs[0]; g.Mode != "dp-sgd" || g.Random != random || g.Normalised != (100-random)/(200-random) {
		t.Errorf("dp-sgd group %+v, want normalised by the random return %v", g, random)
	}
	bad := write("bad.json", `{"algo":"cql","env":"nowhere","mode":"dp-sgd","return":1}`)
	if _, err := SummarizeFiles([]string{np, bad}); err == nil || !strings.HasPrefix(err.Error(), bad+": ") {
		t.Errorf("unknown env: %v", err)
	}
	if _, err := SummarizeFiles([]string{write("x.json", `{}`)}); err == nil || !strings.Contains(err.Error(), "not a dprl offline learn result") {
		t.Errorf("not a result: %v", err)
	}
}
