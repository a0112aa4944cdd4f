package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/experiment/bandit"
)

// TestSimsBandit runs dprl sims bandit at a small scale in process: the
// JSON carries the baselines in order and the methods, --plot writes the
// figure, the text output labels everything simulation only, and bad
// flags are usage errors.
func TestSimsBandit(t *testing.T) {
	png := filepath.Join(t.TempDir(), "regret.png")
	args := []string{"sims", "bandit", "--users", "2000", "--seed", "1", "--seeds", "1", "--no-demo", "--held-out", "1000", "--baseline-users", "20000"}
	code, out, stderr := runCLI(t, append(args, "--json", "--plot", png)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res bandit.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	b := res.Baselines
	if !(b.Uniform < b.BestFixed && b.BestFixed < b.Oracle) || len(res.Methods) != 4 || res.Methods[2].UserEpsilon == nil || *res.Methods[2].UserEpsilon != 1 || res.Methods[3].Name != "lincb" || res.Scope != bandit.Scope {
		t.Errorf("result %+v", res)
	}
	if fi, err := os.Stat(png); err != nil || fi.Size() == 0 {
		t.Errorf("plot: %v", err)
	}
	code, out, _ = runCLI(t, args...)
	if code != 0 || !strings.Contains(out, "simulation only") || !strings.Contains(out, "DPPG in process, user ε = 1") || !strings.Contains(out, "DP linear SquareCB in process, user ε = 1") {
		t.Errorf("text: %d %q", code, out)
	}
	for _, bad := range [][]string{{"--seeds", "0"}, {"--user-epsilon", "0"}, {"--users", "0"}} {
		if code, _, _ := runCLI(t, append([]string{"sims", "bandit", "--seed", "1"}, bad...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", bad, code)
		}
	}
}
