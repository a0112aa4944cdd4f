package qlearn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
)

// SnapshotFormat names the policy file format of this package.
const SnapshotFormat = "dprl.qlearn.v1"

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
	// Delta) per Unit; false marks a non-private reference.
	Private bool    `json:"private"`
	Epsilon float64 `json:"epsilon,omitempty"`
	Delta   float64 `json:"delta,omitempty"`
	Unit    string  `json:"unit,omitempty"`
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
// another format, inconsistent sizes are errors) and returns a learner that
// acts with its networks (Learner.Act).
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
	if s.Format != SnapshotFormat {
		return nil, nil, fmt.Errorf("qlearn: snapshot format %q, want %q", s.Format, SnapshotFormat)
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
