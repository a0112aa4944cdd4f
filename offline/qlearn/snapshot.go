package qlearn

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"

	"dprl/internal/jsonstrict"
	"dprl/ledger"
	"dprl/policy"
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

// maxSnapshotLayers bounds the hidden layers of a snapshot's networks.
const maxSnapshotLayers = 64

// checkSizes checks the snapshot's dimensions and that its parameter
// vectors have the lengths its networks need, allocating nothing.
func (s *Snapshot) checkSizes() error {
	if s.ObsDim < 1 || s.Actions < 2 || len(s.Hidden) < 1 || len(s.Hidden) > maxSnapshotLayers {
		return fmt.Errorf("qlearn: snapshot: observation length %d, %d actions, %d hidden layers: want >= 1, >= 2 and 1..%d",
			s.ObsDim, s.Actions, len(s.Hidden), maxSnapshotLayers)
	}
	sizes := append(append([]int{s.ObsDim}, s.Hidden...), s.Actions)
	n, err := policy.MLPParams(sizes...)
	if err != nil {
		return fmt.Errorf("qlearn: snapshot: %w", err)
	}
	g := 0
	if s.Algo == BCQ {
		g = n
	}
	if len(s.Q) != n || len(s.G) != g {
		return fmt.Errorf("qlearn: snapshot: %d and %d parameters, want %d and %d for %s %v", len(s.Q), len(s.G), n, g, s.Algo, s.Hidden)
	}
	return nil
}

// ParseSnapshot decodes a snapshot strictly (unknown fields, trailing data,
// another format, inconsistent sizes, an invalid provenance in a v2 file,
// a ledger entry in a v1 file are errors) and returns a learner that acts
// with its networks (Learner.Act).
func ParseSnapshot(b []byte) (*Snapshot, *Learner, error) {
	if len(b) > maxSnapshotBytes {
		return nil, nil, fmt.Errorf("qlearn: snapshot of %d bytes, limit %d", len(b), maxSnapshotBytes)
	}
	var s Snapshot
	if err := jsonstrict.Decode(b, &s); err != nil {
		return nil, nil, fmt.Errorf("qlearn: snapshot: %w", err)
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
//
// The sizes are checked against the parameters the file holds before
// anything is allocated: a file claiming 2^40 actions or 16384-wide
// layers with a handful of parameters is refused, never built.
func (s *Snapshot) NewLearner() (*Learner, error) {
	if err := s.checkSizes(); err != nil {
		return nil, err
	}
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
	if err := l.checkFinite(); err != nil {
		return nil, err
	}
	return l, nil
}

// checkFinite refuses networks whose outputs are not finite at the
// probe observations (zeros, all +1, all -1): finite but huge weights
// (1e308) that overflow would otherwise load and fail every act.
func (l *Learner) checkFinite() error {
	obs := make([]float64, l.obsDim)
	for _, v := range []float64{0, 1, -1} {
		for i := range obs {
			obs[i] = v
		}
		q := l.qOut[:l.nA]
		l.q.Forward(q, l.theta, obs)
		if allFinite(q) {
			if l.g == nil {
				continue
			}
			g := l.actScratch[:l.nA]
			l.g.Forward(g, l.phi, obs)
			if allFinite(g) {
				continue
			}
		}
		return fmt.Errorf("qlearn: snapshot: the networks' outputs at the observation of all %v are not finite (parameters too large)", v)
	}
	return nil
}
