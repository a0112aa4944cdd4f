package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"dprl/ledger/accountant"
	"dprl/noise"
)

// Kind says what an entry paid for.
type Kind string

// The entry kinds.
const (
	KindRelease Kind = "policy_release" // an online policy update
	KindOffline Kind = "offline_run"    // an offline run on a dataset
	// KindCap sets a dataset's cap at one unit (dprl ledger set-cap); it
	// costs nothing.
	KindCap Kind = "dataset_cap"
	// KindDerived registers a file an offline run wrote from a dataset (an
	// SVT output) as part of that dataset; it costs nothing.
	KindDerived Kind = "derived_file"
	// KindLink links the identities (content hashes) of a file's records,
	// which a ledger written before content hashes holds under their exact
	// hashes only, to the entries that hold them (Store.LinkFile, dprl
	// ledger link); it costs nothing.
	KindLink Kind = "records_linked"
	// KindWriter records that a process became the ledger's writer (in a
	// cluster, the learner that took the writer lease: Writer and Lease
	// name it); it costs nothing. Its entry fences off every append a
	// previous writer prepared against the earlier tail.
	KindWriter Kind = "writer"
)

// Unit names the protected unit of an entry.
type Unit string

// The protected units.
const (
	UnitSession    Unit = "session"    // one user session (trajectory-level DP online)
	UnitTrajectory Unit = "trajectory" // one logged trajectory (offline)
	UnitExpert     Unit = "expert"     // all trajectories of one expert (SVT)
	UnitUser       Unit = "user"       // all trajectories of one user (offline)
)

// FixedCost is a cost accounted by its own theorem rather than by the
// accountant's events, such as the (eps1, delta1) of an SVT data release. It
// composes with the rest by basic composition (epsilons and deltas add).
type FixedCost struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// Source cites the theorem the cost comes from.
	Source string `json:"source"`
}

// Entry is one privacy cost.
type Entry struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	Kind Kind      `json:"kind"`
	Unit Unit      `json:"unit"`
	// Mechanism describes what ran, e.g. "dppg: clipped mean of K local
	// updates + Gaussian noise".
	Mechanism string `json:"mechanism"`
	// Events are the noise mechanisms that ran, sensitivity-normalised.
	Events []accountant.Event `json:"events"`
	// Fixed are costs accounted outside the events.
	Fixed []FixedCost `json:"fixed,omitempty"`
	// Method is the accountant that turned Events into Epsilon at
	// Delta - sum(Fixed.Delta).
	Method accountant.Method `json:"method"`
	// Epsilon and Delta are the entry's total guarantee.
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// Z, S and K are the online update's noise multiplier, clipping norm
	// and users per update (0 offline).
	Z float64 `json:"z,omitempty"`
	S float64 `json:"s,omitempty"`
	K int     `json:"k,omitempty"`
	// Correlation, for a release whose noise is correlated with earlier
	// releases' (a banded matrix-factorization stream), describes the
	// stream and the participation pattern it enforces (bandmf.go).
	Correlation *Correlation `json:"correlation,omitempty"`
	// Participants is the number of units the entry's mechanism used.
	Participants int `json:"participants"`
	// Users are the participating users' keys (online, when ids are given).
	Users []UserKey `json:"users,omitempty"`
	// Sessions are the keys of the sessions a release used, where they
	// could be redelivered (a cluster's learner; sessions.go).
	Sessions []SessionKey `json:"sessions,omitempty"`
	// Seeded is true when the noise came from a user-seeded generator
	// rather than the secure one.
	Seeded bool `json:"seeded"`
	// PolicyVersion is the version this entry pays for (releases).
	PolicyVersion uint64 `json:"policy_version,omitempty"`
	// DatasetID is the dataset an offline run is charged to, a cap is set
	// on, or a derived file belongs to: the content id of the first file
	// whose records were registered in it.
	DatasetID string `json:"dataset_id,omitempty"`
	// File is the content id of the file an offline run read or a derived
	// file registered (offline, derived).
	File string `json:"file,omitempty"`
	// Cap is the dataset's cap at Unit that the entry sets: the first
	// offline run at a unit registers it, a dataset_cap entry changes it.
	Cap *Cap `json:"cap,omitempty"`
	// Reason says why a dataset_cap entry changed the cap.
	Reason string `json:"reason,omitempty"`
	// DerivedFrom is the sequence number of the offline run whose output
	// a derived file is.
	DerivedFrom uint64 `json:"derived_from,omitempty"`
	// Writer names the process of a writer entry (KindWriter), and Lease
	// the revision of the writer lease it took.
	Writer string `json:"writer,omitempty"`
	Lease  uint64 `json:"lease,omitempty"`
	// UserKeyID is a writer entry's user-key fingerprint (hex): every
	// process of a cluster must key users (and sessions) with the same
	// secret, or one user would be counted under several keys.
	UserKeyID string `json:"user_key_id,omitempty"`
	// Released says that a derived file is the output of a differentially
	// private release (an SVT run's stable prefixes), already charged to
	// the dataset by the run it is derived from, and may be read as public
	// (Store.Lineage). Only a derived_file entry sets it. Omitted when
	// false, so an entry written before the field existed keeps its JSON,
	// and its hash, unchanged.
	Released bool `json:"released,omitempty"`
	// NewRecords is the number of records the entry added to the dataset's
	// record index, NewRecordsDigest the hex SHA-256 of their sorted
	// hashes (Verify recomputes both from the index).
	NewRecords       int    `json:"new_records,omitempty"`
	NewRecordsDigest string `json:"new_records_digest,omitempty"`
	// LinkedRecords is the number of record hashes the entry linked to an
	// entry whose records they join (FileRecords): an offline run links the
	// identities of records an older ledger holds under their exact hashes
	// to the entry that holds them; a released derived file links its
	// records' exact hashes to itself. LinkedRecordsDigest is the hex
	// SHA-256 of the links (Verify recomputes both). Omitted when zero, so
	// an entry written before links existed keeps its JSON and hash.
	LinkedRecords       int    `json:"linked_records,omitempty"`
	LinkedRecordsDigest string `json:"linked_records_digest,omitempty"`
	// Sampler names the exact sampler that drew the entry's noise
	// (noise.SamplerGaussianTable, ...): Verify refuses a name that is not
	// an exact sampler, since the recomputed epsilon assumes the exact law.
	// Omitted when empty, as in entries written before it was recorded,
	// which keep their JSON and hash.
	Sampler string `json:"sampler,omitempty"`
	// PrevHash and Hash chain the entries.
	PrevHash string `json:"prev_hash"`
	Hash     string `json:"hash"`
}

func (e *Entry) validate() error {
	if e.Unit == "" || e.Mechanism == "" {
		return fmt.Errorf("%w: entry without unit or mechanism", ErrInvalid)
	}
	if e.Sampler != "" && !noise.ExactSampler(e.Sampler) {
		return fmt.Errorf("%w: sampler %q is not an exact sampler (the recorded epsilon assumes exact noise)", ErrInvalid, e.Sampler)
	}
	if len(e.Events) == 0 && len(e.Fixed) == 0 {
		return fmt.Errorf("%w: entry with no events and no fixed costs", ErrInvalid)
	}
	for i, ev := range e.Events {
		if err := ev.Validate(); err != nil {
			return fmt.Errorf("%w: event %d: %v", ErrInvalid, i, err)
		}
	}
	for i, f := range e.Fixed {
		if !(f.Epsilon >= 0) || math.IsInf(f.Epsilon, 0) || !(f.Delta >= 0 && f.Delta < 1) || f.Source == "" {
			return fmt.Errorf("%w: fixed cost %d: (%v, %v, %q)", ErrInvalid, i, f.Epsilon, f.Delta, f.Source)
		}
	}
	if _, err := e.recompute(); err != nil {
		return err
	}
	return nil
}

// userZ is the noise multiplier every participating user's session saw: the
// online update is one Gaussian event.
func (e *Entry) userZ() (float64, error) {
	if len(e.Events) != 1 || e.Events[0].Q != 1 || e.Events[0].Steps != 1 {
		return 0, fmt.Errorf("%w: a release must be one plain Gaussian event, got %+v", ErrInvalid, e.Events)
	}
	return e.Events[0].Z, nil
}

// recompute returns the epsilon implied by the recorded events, fixed costs,
// method and delta.
func (e *Entry) recompute() (float64, error) {
	return totalEpsilon(e.Method, e.Delta, e.Events, e.Fixed)
}

// totalEpsilon composes events (at delta minus the fixed deltas) with fixed
// costs by basic composition.
func totalEpsilon(m accountant.Method, delta float64, events []accountant.Event, fixed []FixedCost) (float64, error) {
	var fe, fd float64
	for _, f := range fixed {
		fe += f.Epsilon
		fd += f.Delta
	}
	if len(events) == 0 {
		if fd > delta {
			return 0, &DeltaError{Delta: delta, Fixed: fd}
		}
		return fe, nil
	}
	acc, err := accountant.New(m)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	rest := delta - fd
	if !(rest > 0) {
		return 0, &DeltaError{Delta: delta, Fixed: fd, Events: true}
	}
	g, err := acc.Epsilon(rest, events...)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return g.Epsilon + fe, nil
}

// DeltaError is a composition whose fixed costs' deltas (added by basic
// composition) leave nothing of its delta: none for the noise events
// (Events), or not even enough for the fixed costs. The delta must be
// raised; no epsilon bounds the composition at it. It wraps ErrInvalid.
type DeltaError struct {
	// Delta is the composition's delta; Fixed the sum of the fixed deltas.
	Delta, Fixed float64
	// Events says the composition has noise events besides fixed costs.
	Events bool
}

func (e *DeltaError) Error() string {
	if !e.Events {
		return fmt.Sprintf("%v: fixed deltas %v exceed delta %v", ErrInvalid, e.Fixed, e.Delta)
	}
	return fmt.Sprintf("%v: delta %v leaves nothing for the events after fixed deltas %v", ErrInvalid, e.Delta, e.Fixed)
}

// Unwrap returns ErrInvalid.
func (e *DeltaError) Unwrap() error { return ErrInvalid }

// computeHash returns SHA-256 over the entry's JSON with Hash empty; the
// previous hash is part of it, which chains the entries.
func (e Entry) computeHash() (string, error) {
	e.Hash = ""
	b, err := json.Marshal(e)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
