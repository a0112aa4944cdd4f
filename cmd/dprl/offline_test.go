package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/ledger"
	"dprl/ledger/accountant"
)

func TestOfflineBudget(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d.jsonl")
	if err := os.WriteFile(data, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := ledger.Entry{Unit: ledger.UnitTrajectory, Mechanism: "test", Method: accountant.MethodRDP, Delta: 1e-5,
		Events: []accountant.Event{{Q: 1, Z: 2, Steps: 1}}, Participants: 1}
	g, err := accountant.RDP{}.Epsilon(1e-5, run.Events...)
	if err != nil {
		t.Fatal(err)
	}
	run.Epsilon = g.Epsilon
	a := &app{}
	b := offlineBudget{ledgerDir: filepath.Join(dir, "ledger"), capEps: 1.2 * g.Epsilon, capDelta: 1e-5}
	if err := b.open(a, data); err != nil {
		t.Fatal(err)
	}
	if err := b.check(run); err != nil {
		t.Fatalf("first check: %v", err)
	}
	if _, err := b.charge(run); err != nil {
		t.Fatalf("first charge: %v", err)
	}
	if err := b.check(run); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Fatalf("second check: %v, want ErrBudgetExceeded", err)
	}
	if _, err := b.charge(run); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Fatalf("second charge: %v, want ErrBudgetExceeded", err)
	}
	spent, err := b.spent()
	if err != nil || spent > b.capEps || spent < g.Epsilon*0.999 {
		t.Errorf("spent %v (%v), want one run's %v", spent, err, g.Epsilon)
	}
	if err := b.close(); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "ledger", "show", "--data", filepath.Join(dir, "ledger"), "--json")
	if code != 0 || !strings.Contains(out, `"runs": 1`) || !strings.Contains(out, b.datasetID) {
		t.Errorf("ledger show: %d\n%s", code, out)
	}
}
