package lebytes

import (
	"encoding/binary"
	"math"
	"testing"
)

// TestReader: fields read back in order, and a read past the end reports
// false, takes nothing and leaves the rest readable.
func TestReader(t *testing.T) {
	b := binary.LittleEndian.AppendUint32(nil, 7)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(-2.5))
	b = append(b, "abc"...)
	r := NewReader(b)
	if v, ok := r.U32(); !ok || v != 7 {
		t.Fatalf("U32 %d %v", v, ok)
	}
	if v, ok := r.F64(); !ok || v != -2.5 {
		t.Fatalf("F64 %v %v", v, ok)
	}
	if _, ok := r.F64(); ok || r.Len() != 3 {
		t.Fatalf("F64 past the end: %v, %d left", ok, r.Len())
	}
	if _, ok := r.U32(); ok {
		t.Fatal("U32 past the end")
	}
	if _, ok := r.Bytes(4); ok {
		t.Fatal("Bytes past the end")
	}
	if v, ok := r.Bytes(3); !ok || string(v) != "abc" || r.Len() != 0 {
		t.Fatalf("Bytes %q %v, %d left", v, ok, r.Len())
	}
	if _, ok := r.Bytes(-1); ok {
		t.Fatal("Bytes(-1)")
	}
}
