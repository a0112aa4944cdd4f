package audit

import (
	"fmt"

	"dprl/policy"
)

// Kind says what an audited target is, and so which verdict is a failure.
type Kind string

// The kinds of target.
const (
	// KindMechanism is a real mechanism: it fails if flagged.
	KindMechanism Kind = "mechanism"
	// KindControl is the mutant copy without a defect: it fails if flagged.
	KindControl Kind = "control"
	// KindMutant is a deliberately broken copy: it fails if not flagged
	// (the audit then lacks the power to vouch for anything).
	KindMutant Kind = "mutant"
)

// Entry is one target of a suite and its kind.
type Entry struct {
	Target Target
	Kind   Kind
}

// The mechanisms Suite knows.
const (
	MechanismDPPG  = "dppg"
	MechanismGPOPE = "gpope"
	MechanismAll   = "all"
)

// Suite returns the targets of "dprl audit": DPPG's aggregator with every
// noise shape (mechanism "dppg"), GPOPE ("gpope"), or both ("all"), each
// calibrated to the claim (eps, delta); with mutants, also every Mutant
// (the control first).
func Suite(mechanism string, mutants bool, eps, delta float64) ([]Entry, error) {
	var out []Entry
	if mechanism != MechanismDPPG && mechanism != MechanismGPOPE && mechanism != MechanismAll {
		return nil, fmt.Errorf("audit: mechanism %q, want dppg, gpope or all", mechanism)
	}
	if mechanism != MechanismGPOPE {
		for _, n := range []policy.Noise{policy.NoiseIndependent, policy.NoiseTree, policy.NoiseSqrt} {
			t, err := DPPG(n, eps, delta)
			if err != nil {
				return nil, err
			}
			out = append(out, Entry{t, KindMechanism})
		}
	}
	if mechanism != MechanismDPPG {
		t, err := GPOPE(eps, delta)
		if err != nil {
			return nil, err
		}
		out = append(out, Entry{t, KindMechanism})
	}
	if mutants {
		for _, d := range Defects {
			t, err := Mutant(d, eps, delta)
			if err != nil {
				return nil, err
			}
			k := KindMutant
			if d == DefectNone {
				k = KindControl
			}
			out = append(out, Entry{t, k})
		}
	}
	return out, nil
}

// Verdict returns the verdict on a report of a target of kind k and whether
// it is a failure: "ok" or "VIOLATION" (a failure) for a mechanism or the
// control, "flagged" or "MISSED" (a failure) for a mutant.
func Verdict(k Kind, r Report) (string, bool) {
	if k == KindMutant {
		if r.Violation {
			return "flagged", false
		}
		return "MISSED", true
	}
	if r.Violation {
		return "VIOLATION", true
	}
	return "ok", false
}
