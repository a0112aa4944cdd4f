// Package lebytes reads the little-endian fields of a binary file format
// front to back: the decoders of dprl's released files (an actor
// snapshot, a PriMORL model) check each field as they take it.
package lebytes

import (
	"encoding/binary"
	"math"
)

// Reader takes fields from the front of a byte slice. A read past the end
// reports false and takes nothing.
type Reader struct{ b []byte }

// NewReader returns a Reader of b (not copied).
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Len returns the number of bytes not yet read.
func (r *Reader) Len() int { return len(r.b) }

// U32 reads a uint32 as an int.
func (r *Reader) U32() (int, bool) {
	if len(r.b) < 4 {
		return 0, false
	}
	v := binary.LittleEndian.Uint32(r.b)
	r.b = r.b[4:]
	return int(v), true
}

// F64 reads a float64 (IEEE 754 bits).
func (r *Reader) F64() (float64, bool) {
	if len(r.b) < 8 {
		return 0, false
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v, true
}

// Bytes reads the next n bytes (not copied).
func (r *Reader) Bytes(n int) ([]byte, bool) {
	if n < 0 || len(r.b) < n {
		return nil, false
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v, true
}
