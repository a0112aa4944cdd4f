package ledger

import (
	"math"
	"strings"
	"testing"

	"dprl/ledger/accountant"
)

// pldRun is a trajectory-level run charged with the PLD accountant.
func pldRun(t *testing.T, ev accountant.Event) Entry {
	t.Helper()
	e := Entry{Unit: UnitTrajectory, Mechanism: "gpope", Events: []accountant.Event{ev}, Method: accountant.MethodPLD, Delta: 1e-5, Participants: 100}
	g, err := accountant.PLD{}.Epsilon(1e-5, e.Events...)
	if err != nil {
		t.Fatal(err)
	}
	e.Epsilon = g.Epsilon
	return e
}

// TestOfflinePLD: an offline run charged with the PLD accountant is
// recorded with its method, re-verified by recomputation, and its
// dataset's total composes with PLD (RDP as the cross-check, the smaller
// counting), so a run calibrated with PLD to exactly the cap fits where the
// RDP total alone would exceed the cap. Budgets of RDP-only runs keep their
// RDP totals.
func TestOfflinePLD(t *testing.T) {
	s, _ := openTemp(t)
	ev := accountant.Event{Q: 0.01, Z: 1, Steps: 1000}
	run := pldRun(t, ev)
	rdp, err := accountant.RDP{}.Epsilon(1e-5, ev)
	if err != nil {
		t.Fatal(err)
	}
	if rdp.Epsilon <= run.Epsilon*1.1 {
		t.Fatalf("rdp %v not clearly above pld %v", rdp.Epsilon, run.Epsilon)
	}
	c := Cap{Epsilon: run.Epsilon, Delta: 1e-5}
	ch, err := s.ChargeOffline(OfflineRun{File: "P", Records: recs("p", 5), Entry: run, Cap: c, CapGiven: true})
	if err != nil {
		t.Fatalf("a pld run at exactly the cap: %v", err)
	}
	if ch.Entry.Method != accountant.MethodPLD || ch.Spent != run.Epsilon {
		t.Errorf("charge %+v: method %s, spent %v, want pld and %v", ch, ch.Entry.Method, ch.Spent, run.Epsilon)
	}
	// An RDP run on another dataset keeps an RDP total.
	rrun := gpopeRun(t)
	if _, err := s.ChargeOffline(OfflineRun{File: "R", Records: recs("r", 5), Entry: rrun, Cap: Cap{Epsilon: 10, Delta: 1e-5}, CapGiven: true}); err != nil {
		t.Fatal(err)
	}
	check := func(s *Store) {
		t.Helper()
		rep := mustVerify(t, s)
		var sawP, sawR bool
		for _, b := range rep.Budgets {
			switch b.Dataset {
			case "P":
				sawP = b.Epsilon == run.Epsilon
			case "R":
				sawR = b.Epsilon == rrun.Epsilon
			}
		}
		if !sawP || !sawR {
			t.Errorf("budgets %+v: want P at the pld %v and R at the rdp %v", rep.Budgets, run.Epsilon, rrun.Epsilon)
		}
		sum, err := s.Summary(1e-5)
		if err != nil {
			t.Fatal(err)
		}
		u := sum.Datasets["P"].Units[UnitTrajectory]
		if u.Method != accountant.MethodPLD || u.RDPEpsilon == nil || math.Abs(*u.RDPEpsilon-rdp.Epsilon) > 1e-12*rdp.Epsilon || *u.Epsilon != run.Epsilon {
			t.Errorf("unit summary %+v", u)
		}
		if r := sum.Datasets["R"].Units[UnitTrajectory]; r.Method != "" || r.RDPEpsilon != nil {
			t.Errorf("rdp unit summary %+v", r)
		}
		var out strings.Builder
		if err := sum.WriteText(&out); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "(pld; rdp ") {
			t.Errorf("ledger show lacks the pld total and its rdp cross-check:\n%s", out.String())
		}
	}
	check(s)
	// A second run on the full dataset exceeds the cap under either
	// accountant and is refused.
	if _, err := s.CheckOffline(OfflineRun{File: "P", Records: recs("p", 5), Entry: run}); err == nil {
		t.Error("a second run at the cap was accepted")
	}
	// The recomputation is deterministic: a recorded pld epsilon off by a
	// relative 1e-6 is found by Verify.
	bad := run
	bad.Epsilon *= 1 + 1e-6
	if _, err := s.ChargeOffline(OfflineRun{File: "Q", Records: recs("q", 5), Entry: bad, Cap: Cap{Epsilon: 10, Delta: 1e-5}, CapGiven: true}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Verify()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range rep.Problems {
		found = found || strings.Contains(p, "recomputed")
	}
	if !found {
		t.Errorf("verify missed a wrong pld epsilon: %v", rep.Problems)
	}
}
