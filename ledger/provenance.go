package ledger

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"dprl/ledger/accountant"
)

// Provenance is the guarantee a released policy file (an offline run's
// --out) was written under: private or not and, when private, the run's
// (Epsilon, Delta) per Unit and LedgerSeq, the sequence number of the
// ledger entry that charged the run. A file that carries it can be served
// (dprl agent --serve-policy) with the guarantee it has. It leaves out the
// dataset id on purpose: docs/privacy.md, section 9.
type Provenance struct {
	// Private says the file's content is the output of a differentially
	// private run; false marks a non-private one (--non-private, --mopo).
	Private bool `json:"private"`
	// Epsilon and Delta are the run's guarantee per Unit (private only).
	Epsilon float64 `json:"epsilon,omitempty"`
	Delta   float64 `json:"delta,omitempty"`
	Unit    Unit    `json:"unit,omitempty"`
	// LedgerSeq is the sequence number of the run's ledger entry (private
	// only; entries are numbered from 1).
	LedgerSeq uint64 `json:"ledger_seq,omitempty"`
}

// ProvenanceOf is the provenance of a file written by the offline run
// that entry e charged.
func ProvenanceOf(e Entry) Provenance {
	return Provenance{Private: true, Epsilon: e.Epsilon, Delta: e.Delta, Unit: e.Unit, LedgerSeq: e.Seq}
}

// Validate checks the provenance: a private one has a finite epsilon > 0,
// a delta in (0, 1), an offline unit (trajectory, user or expert) and a
// ledger entry; a non-private one has none of these.
func (p Provenance) Validate() error {
	if !p.Private {
		if p.Epsilon != 0 || p.Delta != 0 || p.Unit != "" || p.LedgerSeq != 0 {
			return fmt.Errorf("%w: a non-private provenance with a guarantee (%v, %v, %q, entry %d)", ErrInvalid, p.Epsilon, p.Delta, p.Unit, p.LedgerSeq)
		}
		return nil
	}
	switch {
	case !(p.Epsilon > 0) || math.IsInf(p.Epsilon, 0):
		return fmt.Errorf("%w: provenance epsilon %v: must be finite and > 0", ErrInvalid, p.Epsilon)
	case !(p.Delta > 0 && p.Delta < 1):
		return fmt.Errorf("%w: provenance delta %v: must be in (0, 1)", ErrInvalid, p.Delta)
	case p.LedgerSeq == 0:
		return fmt.Errorf("%w: a private provenance without its ledger entry", ErrInvalid)
	}
	if err := checkOfflineUnit(p.Unit); err != nil {
		return fmt.Errorf("provenance: %w", err)
	}
	return nil
}

// String describes the provenance for people, the epsilon rounded up:
// "(epsilon 10, delta 1e-05)-DP per expert (ledger entry 3)", or "NOT
// private".
func (p Provenance) String() string {
	if !p.Private {
		return "NOT private"
	}
	return fmt.Sprintf("(epsilon %s, delta %g)-DP per %s (ledger entry %d)", accountant.FormatEpsilon(p.Epsilon), p.Delta, p.Unit, p.LedgerSeq)
}

// ProvenanceBytes is the size of a provenance's binary encoding
// (Provenance.AppendBinary).
const ProvenanceBytes = 1 + 8 + 8 + provenanceUnitBytes + 8

// provenanceUnitBytes is the encoding's unit field: the unit's name,
// padded with zero bytes.
const provenanceUnitBytes = 16

// AppendBinary appends p's binary encoding to b, after validating it: a
// private flag byte, epsilon and delta as float64, the unit's name in 16
// bytes padded with zeros, and the ledger entry's sequence number as
// uint64, little-endian (ProvenanceBytes in all). Released files (an actor
// snapshot, a PriMORL model) carry it; ReadProvenance reads it back.
func (p Provenance) AppendBinary(b []byte) ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if len(p.Unit) > provenanceUnitBytes {
		return nil, fmt.Errorf("%w: provenance unit %q longer than %d bytes", ErrInvalid, p.Unit, provenanceUnitBytes)
	}
	var private byte
	if p.Private {
		private = 1
	}
	b = append(b, private)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p.Epsilon))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p.Delta))
	var unit [provenanceUnitBytes]byte
	copy(unit[:], p.Unit)
	b = append(b, unit[:]...)
	return binary.LittleEndian.AppendUint64(b, p.LedgerSeq), nil
}

// ReadProvenance decodes the provenance at the start of b
// (Provenance.AppendBinary) and returns it with the rest of b. A short
// block, a flag other than 0 or 1, a unit name not padded with zeros, or
// a provenance that does not validate is an error.
func ReadProvenance(b []byte) (Provenance, []byte, error) {
	if len(b) < ProvenanceBytes {
		return Provenance{}, nil, fmt.Errorf("%w: %d bytes, too short for a provenance", ErrInvalid, len(b))
	}
	flag := b[0]
	eps := math.Float64frombits(binary.LittleEndian.Uint64(b[1:]))
	delta := math.Float64frombits(binary.LittleEndian.Uint64(b[9:]))
	unit := b[17 : 17+provenanceUnitBytes]
	n := bytes.IndexByte(unit, 0)
	if n < 0 {
		n = provenanceUnitBytes
	}
	for _, c := range unit[n:] {
		if c != 0 {
			n = -1
			break
		}
	}
	if flag > 1 || n < 0 {
		return Provenance{}, nil, fmt.Errorf("%w: provenance flag %d, unit %q", ErrInvalid, flag, unit)
	}
	p := Provenance{Private: flag == 1, Epsilon: eps, Delta: delta, Unit: Unit(unit[:n]),
		LedgerSeq: binary.LittleEndian.Uint64(b[17+provenanceUnitBytes:])}
	if err := p.Validate(); err != nil {
		return Provenance{}, nil, err
	}
	return p, b[ProvenanceBytes:], nil
}
