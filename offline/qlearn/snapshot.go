package qlearn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"dprl/ledger"
)

// SnapshotFormat names the policy file format this package writes: v2
// carries the policy's provenance (LedgerSeq, validated). SnapshotFormatV1
// files, written before, are read, but their provenance is unknown
// (Snapshot.Provenance).
const (
	SnapshotFormat   = "dprl.qlearn.v2"
	SnapshotFormatV1 = "dprl.qlearn.v1"
)

// maxSnapshotBytes bounds a snapshot file (a 2 x 4096 network is 140 MB of
// text; far beyond any real one).
const maxSnapshotBytes = 256 << 20

// Snapshot is a learned policy: the Q-network (and BCQ's imitation
// network) with what is needed to act, and the guarantee it was released
// under. It is JSON, decoded strictly by ParseSnapshot.
type Snapshot struct {
	Format    string    `json:"format"`
	Algo      Algo      `json:"algo"`
	Env       string    `json:"env,omitempty"`
	ObsDim    int       `json:"obs_dim"`
	Actions   int       `json:"actions"`
	Hidden    []int     `json:"hidden"`
	Threshold float64   `json:"threshold,omitempty"`
	Q         []float64 `json:"q"`
	G         []float64 `json:"g,omitempty"`
	// Private says the networks were trained with DP-SGD at (Epsilon,
	// Delta) per Unit, charged by the ledger entry LedgerSeq; false marks
	// a non-private reference. Together they are the snapshot's
	// provenance (ledger.Provenance; SetProvenance, Provenance), checked
	// by ParseSnapshot in a v2 file. A v1 file has no LedgerSeq.
	Private   bool    `json:"private"`
	Epsilon   float64 `json:"epsilon,omitempty"`
	Delta     float64 `json:"delta,omitempty"`
	Unit      string  `json:"unit,omitempty"`
	LedgerSeq uint64  `json:"ledger_seq,omitempty"`
}

// SetProvenance records p in the snapshot.
func (s *Snapshot) SetProvenance(p ledger.Provenance) {
	s.Private, s.Epsilon, s.Delta, s.Unit, s.LedgerSeq = p.Private, p.Epsilon, p.Delta, string(p.Unit), p.LedgerSeq
}

// Provenance returns the snapshot's provenance; ok is false for a v1
// file, whose fields were written before provenance was recorded and
// checked (it may lack them, or claim them without a ledger entry).
func (s *Snapshot) Provenance() (p ledger.Provenance, ok bool) {
	if s.Format != SnapshotFormat {
		return ledger.Provenance{}, false
	}
	return ledger.Provenance{Private: s.Private, Epsilon: s.Epsilon, Delta: s.Delta, Unit: ledger.Unit(s.Unit), LedgerSeq: s.LedgerSeq}, true
}

// Snapshot returns the learner's networks (copies) as a snapshot.
func (l *Learner) Snapshot() Snapshot {
	s := Snapshot{Format: SnapshotFormat, Algo: l.cfg.Algo, ObsDim: l.obsDim, Actions: l.nA,
		Hidden: slices.Clone(l.cfg.Hidden), Q: slices.Clone(l.theta)}
	if l.g != nil {
		s.Threshold, s.G = l.cfg.Threshold, slices.Clone(l.phi)
	}
	return s
}

// Marshal encodes the snapshot (non-finite parameters are an error).
func (s Snapshot) Marshal() ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("qlearn: snapshot: %w", err)
	}
	return append(b, '\n'), nil
}

// ParseSnapshot decodes a snapshot strictly (unknown fields, trailing data,
// another format, inconsistent sizes, an invalid provenance in a v2 file,
// a ledger entry in a v1 file are errors) and returns a learner that acts
// with its networks (Learner.Act).
func ParseSnapshot(b []byte) (*Snapshot, *Learner, error) {
	if len(b) > maxSnapshotBytes {
		return nil, nil, fmt.Errorf("qlearn: snapshot of %d bytes, limit %d", len(b), maxSnapshotBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Snapshot
	if err := dec.Decode(&s); err != nil {
		return nil, nil, fmt.Errorf("qlearn: snapshot: %w", err)
	}
	if dec.More() {
		return nil, nil, errors.New("qlearn: snapshot: trailing data")
	}
	switch s.Format {
	case SnapshotFormat:
		p, _ := s.Provenance()
		if err := p.Validate(); err != nil {
			return nil, nil, fmt.Errorf("qlearn: snapshot: %w", err)
		}
	case SnapshotFormatV1:
		if s.LedgerSeq != 0 {
			return nil, nil, fmt.Errorf("qlearn: snapshot: a %s file has no ledger_seq", SnapshotFormatV1)
		}
	default:
		return nil, nil, fmt.Errorf("qlearn: snapshot format %q, want %q (or %q)", s.Format, SnapshotFormat, SnapshotFormatV1)
	}
	l, err := s.NewLearner()
	if err != nil {
		return nil, nil, err
	}
	return &s, l, nil
}

// NewLearner returns a learner that acts with the snapshot's networks (a
// fresh one each call: a Learner is not safe for concurrent use).
func (s *Snapshot) NewLearner() (*Learner, error) {
	cfg := DefaultConfig()
	cfg.Algo, cfg.Hidden = s.Algo, s.Hidden
	if s.Algo == BCQ {
		cfg.Threshold = s.Threshold
	}
	l, err := New(cfg, s.ObsDim, s.Actions, rand.New(rand.NewPCG(0, 0)))
	if err != nil {
		return nil, fmt.Errorf("qlearn: snapshot: %w", err)
	}
	if len(s.Q) != len(l.theta) || len(s.G) != len(l.phi) {
		return nil, fmt.Errorf("qlearn: snapshot: %d and %d parameters, want %d and %d for %s %v", len(s.Q), len(s.G), len(l.theta), len(l.phi), s.Algo, s.Hidden)
	}
	copy(l.theta, s.Q)
	copy(l.target, s.Q)
	copy(l.phi, s.G)
	return l, nil
}
