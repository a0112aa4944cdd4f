package audit

import (
	"fmt"
	"slices"
	"strings"

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
	MechanismDPPG    = "dppg"
	MechanismBandMF  = "bandmf"
	MechanismGPOPE   = "gpope"
	MechanismLearn   = "learn"
	MechanismPriMORL = "primorl"
	MechanismAll     = "all"
)

// Mechanisms lists the mechanisms "all" audits, in suite order.
var Mechanisms = []string{MechanismDPPG, MechanismBandMF, MechanismGPOPE, MechanismLearn, MechanismPriMORL}

// harness returns the target of a mechanism's real code path with the
// fault (FaultNone: the mechanism itself). For dppg with a fault it is
// the independent-noise aggregator (the correlated shapes share its clip
// and its sampler).
func harness(mechanism string, fault Fault, eps, delta float64) ([]Target, error) {
	one := func(t Target, err error) ([]Target, error) {
		if err != nil {
			return nil, err
		}
		return []Target{t}, nil
	}
	switch mechanism {
	case MechanismDPPG:
		if fault != FaultNone {
			return one(dppgTarget(policy.NoiseIndependent, eps, delta, fault))
		}
		var out []Target
		for _, n := range []policy.Noise{policy.NoiseIndependent, policy.NoiseTree, policy.NoiseSqrt} {
			t, err := dppgTarget(n, eps, delta, fault)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		}
		return out, nil
	case MechanismBandMF:
		return one(dppgTarget(policy.NoiseBandedSqrt, eps, delta, fault))
	case MechanismGPOPE:
		return one(gpopeTarget(eps, delta, fault))
	case MechanismLearn:
		return one(learnTarget(eps, delta, fault))
	case MechanismPriMORL:
		return one(primorlTarget(eps, delta, fault))
	}
	return nil, fmt.Errorf("audit: mechanism %q, want %s or %s", mechanism, strings.Join(Mechanisms, ", "), MechanismAll)
}

// Suite returns the targets of "dprl audit" for a mechanism (one of
// Mechanisms, or MechanismAll for every one), each calibrated to the claim
// (eps, delta): "dppg" is DPPG's aggregator with independent, tree and
// sqrt noise, "bandmf" the aggregator with banded noise, "gpope", "learn"
// and "primorl" the offline commands' DP steps. With mutants, also each
// mechanism's real code path with every Fault (noise / 2, sensitivity x
// 2), and, with dppg, the copy of the aggregation step without a defect
// (the control) and with every Defect.
func Suite(mechanism string, mutants bool, eps, delta float64) ([]Entry, error) {
	mechs := []string{mechanism}
	if mechanism == MechanismAll {
		mechs = Mechanisms
	}
	var out []Entry
	for _, m := range mechs {
		ts, err := harness(m, FaultNone, eps, delta)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			out = append(out, Entry{t, KindMechanism})
		}
	}
	if !mutants {
		return out, nil
	}
	if slices.Contains(mechs, MechanismDPPG) {
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
	for _, m := range mechs {
		for _, f := range Faults {
			ts, err := harness(m, f, eps, delta)
			if err != nil {
				return nil, err
			}
			for _, t := range ts {
				out = append(out, Entry{t, KindMutant})
			}
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
