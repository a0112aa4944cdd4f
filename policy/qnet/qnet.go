// Package qnet serves Q-network policies: the dprl.qlearn snapshot format
// (Snapshot, its strict decoder ParseSnapshot) and the act-only forward
// pass (Policy.Act) that the agent serves and the offline learners of
// offline/qlearn (discrete CQL and BCQ) write and build on. It sits in the
// policy layer so that the agent serves a learned Q-network policy without
// importing the offline learners.
//
// Its errors keep the "qlearn:" prefix of the format they describe.
package qnet

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/floats"

	"dprl/internal/jsonstrict"
	"dprl/ledger"
	"dprl/policy"
)

// Algo names a learner.
type Algo string

// The learners.
const (
	// CQL is discrete conservative Q-learning (Kumar et al. 2020, the DQN
	// variant): one Q-network (trained by offline/qlearn, loss CQLLoss).
	CQL Algo = "cql"
	// BCQ is discrete batch-constrained Q-learning (Fujimoto et al. 2019):
	// a Q-network and an imitation network (trained by offline/qlearn,
	// targets BCQTargets, loss BCQLoss).
	BCQ Algo = "bcq"
)

// ParseAlgo returns the learner named s ("cql" or "bcq").
func ParseAlgo(s string) (Algo, error) {
	switch a := Algo(s); a {
	case CQL, BCQ:
		return a, nil
	}
	return "", fmt.Errorf("qlearn: unknown algorithm %q (want cql or bcq)", s)
}

// MaxWidth bounds a hidden layer's width.
const MaxWidth = 1 << 14

// SnapshotFormat names the policy file format offline/qlearn writes: v2
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

// checkNetworks reports every invalid network setting of the snapshot:
// its algorithm, its hidden widths (1..MaxWidth) and, for BCQ, its
// threshold in (0, 1).
func (s *Snapshot) checkNetworks() error {
	var errs []error
	if _, err := ParseAlgo(string(s.Algo)); err != nil {
		errs = append(errs, err)
	}
	for _, h := range s.Hidden {
		if h < 1 || h > MaxWidth {
			errs = append(errs, fmt.Errorf("qlearn: hidden width %d, want 1..16384", h))
		}
	}
	if s.Algo == BCQ && !(s.Threshold > 0 && s.Threshold < 1) {
		errs = append(errs, fmt.Errorf("qlearn: threshold %v, want (0, 1)", s.Threshold))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("qlearn: snapshot: %w", err)
	}
	return nil
}

// ParseSnapshot decodes a snapshot strictly (unknown fields, trailing data,
// another format, inconsistent sizes, an invalid provenance in a v2 file,
// a ledger entry in a v1 file, networks whose outputs are not finite are
// errors) and returns a policy that acts with its networks (Policy.Act).
func ParseSnapshot(b []byte) (*Snapshot, *Policy, error) {
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
	p, err := s.NewPolicy()
	if err != nil {
		return nil, nil, err
	}
	return &s, p, nil
}

// Policy acts with a snapshot's networks: greedy in Q, filtered by BCQ's
// imitation network. It allocates nothing per action and is not safe for
// concurrent use.
type Policy struct {
	obsDim, nA int
	threshold  float64     // BCQ's
	q, g       *policy.MLP // g: BCQ's imitation network, nil for CQL
	theta, phi []float64
	qOut, gOut []float64
}

// NewPolicy returns a policy that acts with the snapshot's networks (a
// fresh one each call: a Policy is not safe for concurrent use).
//
// The sizes are checked against the parameters the file holds before
// anything is allocated: a file claiming 2^40 actions or 16384-wide
// layers with a handful of parameters is refused, never built. Networks
// whose outputs are not finite at the probe observations are refused.
func (s *Snapshot) NewPolicy() (*Policy, error) {
	if err := s.checkSizes(); err != nil {
		return nil, err
	}
	if err := s.checkNetworks(); err != nil {
		return nil, err
	}
	sizes := append(append([]int{s.ObsDim}, s.Hidden...), s.Actions)
	p := &Policy{obsDim: s.ObsDim, nA: s.Actions, theta: slices.Clone(s.Q),
		qOut: make([]float64, s.Actions), gOut: make([]float64, s.Actions)}
	var err error
	if p.q, err = policy.NewMLPActivation(policy.ReLU, sizes...); err != nil {
		return nil, fmt.Errorf("qlearn: snapshot: %w", err)
	}
	if s.Algo == BCQ {
		if p.g, err = policy.NewMLPActivation(policy.ReLU, sizes...); err != nil {
			return nil, fmt.Errorf("qlearn: snapshot: %w", err)
		}
		p.phi, p.threshold = slices.Clone(s.G), s.Threshold
	}
	if err := p.checkFinite(); err != nil {
		return nil, err
	}
	return p, nil
}

// checkFinite refuses networks whose outputs are not finite at the
// probe observations (zeros, all +1, all -1): finite but huge weights
// (1e308) that overflow would otherwise load and fail every act.
func (p *Policy) checkFinite() error {
	obs := make([]float64, p.obsDim)
	for _, v := range []float64{0, 1, -1} {
		for i := range obs {
			obs[i] = v
		}
		p.q.Forward(p.qOut, p.theta, obs)
		if allFinite(p.qOut) {
			if p.g == nil {
				continue
			}
			p.g.Forward(p.gOut, p.phi, obs)
			if allFinite(p.gOut) {
				continue
			}
		}
		return fmt.Errorf("qlearn: snapshot: the networks' outputs at the observation of all %v are not finite (parameters too large)", v)
	}
	return nil
}

// Act returns the policy's greedy action at obs: argmax_a Q(obs, a) for
// CQL; for BCQ the argmax over the actions the imitation network allows
// (FilteredArgmax). It allocates nothing.
func (p *Policy) Act(obs []float64) int {
	p.q.Forward(p.qOut, p.theta, obs)
	if p.g == nil {
		return floats.MaxIdx(p.qOut)
	}
	p.g.Forward(p.gOut, p.phi, obs)
	return FilteredArgmax(p.qOut, p.gOut, p.threshold)
}

// FilteredArgmax returns argmax of q over the actions whose logit g is
// within log(tau) of the largest (the most probable always passes): BCQ's
// action filter (probability ratio to the most probable action above tau).
func FilteredArgmax(q, g []float64, tau float64) int {
	gm := math.Inf(-1)
	for _, v := range g {
		gm = max(gm, v)
	}
	lt := math.Log(tau)
	best := -1
	for a, v := range g {
		if v-gm > lt || v == gm {
			if best < 0 || q[a] > q[best] {
				best = a
			}
		}
	}
	return best
}

func allFinite(xs []float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
