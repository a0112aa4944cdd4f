package noise

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoFloatNoiseInMechanisms keeps every privacy mechanism on this
// package's samplers: no non-test file of the packages that release private
// values may draw rand.NormFloat64() except the allowed non-mechanism uses
// (sampling an action from a released policy, initialising weights).
func TestNoFloatNoiseInMechanisms(t *testing.T) {
	allowed := map[string]bool{
		"policy/heads.go": true, // actions of a released policy (post-processing)
		"policy/mlp.go":   true, // data-independent initialisation
		// SAC's action sampling and reparameterisation: a learner, not a
		// mechanism (online it is non-private; in PriMORL it trains on a
		// released model).
		"policy/sac/sac.go":      true,
		"policy/sac/snapshot.go": true, // a released actor's actions
		// PriMORL's model transitions: sampling from the released
		// ensemble (post-processing).
		"offline/primorl/modelenv.go": true,
		// Test fixtures (random data for the agent tests' snapshots),
		// imported by tests only.
		"agent/internal/agenttest/agenttest.go": true,
	}
	for _, dir := range []string{"agent", "ledger", "offline", "policy", "stream", "cmd"} {
		err := filepath.WalkDir(filepath.Join("..", dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			rel, _ := filepath.Rel("..", path)
			if allowed[filepath.ToSlash(rel)] || strings.Contains(rel, "testdata") {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if strings.Contains(string(b), "NormFloat64()") {
				t.Errorf("%s draws NormFloat64(): mechanisms must use noise.Gaussian", rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
