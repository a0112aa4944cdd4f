package ledger

import (
	"errors"
	"testing"
)

// TestProvenanceBinary: a provenance's binary encoding reads back to the
// same provenance with the bytes after it; a short block, a flag other
// than 0 or 1, a unit not padded with zeros and an invalid provenance are
// refused, as is a unit name too long to encode.
func TestProvenanceBinary(t *testing.T) {
	for _, p := range []Provenance{
		{},
		{Private: true, Epsilon: 5, Delta: 1e-5, Unit: UnitTrajectory, LedgerSeq: 3},
		{Private: true, Epsilon: 0.125, Delta: 1e-10, Unit: UnitExpert, LedgerSeq: 1 << 40},
	} {
		b, err := p.AppendBinary([]byte("head"))
		if err != nil {
			t.Fatalf("%+v: %v", p, err)
		}
		if len(b) != 4+ProvenanceBytes {
			t.Fatalf("%+v: %d bytes", p, len(b))
		}
		got, rest, err := ReadProvenance(append(b[4:], "tail"...))
		if err != nil || got != p || string(rest) != "tail" {
			t.Errorf("%+v: read %+v, rest %q, %v", p, got, rest, err)
		}
	}
	good, _ := Provenance{Private: true, Epsilon: 5, Delta: 1e-5, Unit: UnitTrajectory, LedgerSeq: 3}.AppendBinary(nil)
	for name, edit := range map[string]func(b []byte) []byte{
		"short":           func(b []byte) []byte { return b[:ProvenanceBytes-1] },
		"flag 2":          func(b []byte) []byte { b[0] = 2; return b },
		"unit not padded": func(b []byte) []byte { b[17+len(UnitTrajectory)+1] = 'x'; return b },
		"no entry":        func(b []byte) []byte { clear(b[17+16:]); return b },
		"epsilon 0":       func(b []byte) []byte { clear(b[1:9]); return b },
		"not private with a guarantee": func(b []byte) []byte {
			b[0] = 0
			return b
		},
	} {
		if _, _, err := ReadProvenance(edit(append([]byte(nil), good...))); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if _, err := (Provenance{Private: true, Epsilon: 5, Delta: 1e-5, Unit: "a-unit-name-of-17", LedgerSeq: 1}).AppendBinary(nil); err == nil {
		t.Error("a unit name of 17 bytes was encoded")
	}
}
