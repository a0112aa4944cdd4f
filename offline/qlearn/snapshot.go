package qlearn

import (
	"slices"

	"dprl/policy/qnet"
)

// Snapshot is a learned policy in the dprl.qlearn format (package qnet:
// the format, its strict decoder qnet.ParseSnapshot and the act-only
// policy the agent serves).
type Snapshot = qnet.Snapshot

// Snapshot returns the learner's networks (copies) as a snapshot.
func (l *Learner) Snapshot() Snapshot {
	s := Snapshot{Format: qnet.SnapshotFormat, Algo: l.cfg.Algo, ObsDim: l.obsDim, Actions: l.nA,
		Hidden: slices.Clone(l.cfg.Hidden), Q: slices.Clone(l.theta)}
	if l.g != nil {
		s.Threshold, s.G = l.cfg.Threshold, slices.Clone(l.phi)
	}
	return s
}
