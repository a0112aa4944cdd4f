package sac

import (
	"fmt"
	"math/rand/v2"
)

// Buffer is a replay buffer of transitions: a ring of the last Cap ones.
type Buffer struct {
	obsDim, actDim int
	capacity, n    int
	next           int
	s, a, r, s2, d []float64
}

// NewBuffer returns an empty buffer of capacity >= 1 transitions.
func NewBuffer(capacity, obsDim, actDim int) (*Buffer, error) {
	if capacity < 1 || obsDim < 1 || actDim < 1 {
		return nil, fmt.Errorf("sac: buffer capacity %d, dimensions %d and %d: want >= 1", capacity, obsDim, actDim)
	}
	return &Buffer{obsDim: obsDim, actDim: actDim, capacity: capacity,
		s: make([]float64, capacity*obsDim), a: make([]float64, capacity*actDim), r: make([]float64, capacity),
		s2: make([]float64, capacity*obsDim), d: make([]float64, capacity)}, nil
}

// Len returns the number of transitions held.
func (b *Buffer) Len() int { return b.n }

// Add stores a transition, overwriting the oldest when full.
func (b *Buffer) Add(s, a []float64, r float64, s2 []float64, terminated bool) {
	b.set(b.next, s, a, r, s2, terminated)
	b.next = (b.next + 1) % b.capacity
	b.n = min(b.n+1, b.capacity)
}

// Set overwrites the held transition i (0 <= i < Len()).
func (b *Buffer) Set(i int, s, a []float64, r float64, s2 []float64, terminated bool) {
	if i < 0 || i >= b.n {
		panic(fmt.Sprintf("sac: set transition %d of %d", i, b.n))
	}
	b.set(i, s, a, r, s2, terminated)
}

// States returns the observations of the held transitions, Len() rows
// (the buffer's own storage: do not modify).
func (b *Buffer) States() []float64 { return b.s[:b.n*b.obsDim] }

func (b *Buffer) set(i int, s, a []float64, r float64, s2 []float64, terminated bool) {
	copy(b.s[i*b.obsDim:(i+1)*b.obsDim], s)
	copy(b.a[i*b.actDim:(i+1)*b.actDim], a)
	b.r[i] = r
	copy(b.s2[i*b.obsDim:(i+1)*b.obsDim], s2)
	b.d[i] = 0
	if terminated {
		b.d[i] = 1
	}
}

// Sample fills dst (whose slices hold B rows) with B transitions drawn
// uniformly with replacement using rng. The buffer must not be empty.
func (b *Buffer) Sample(dst Batch, rng *rand.Rand) {
	if b.n == 0 {
		panic("sac: sample from an empty buffer")
	}
	od, ad := b.obsDim, b.actDim
	for k := range dst.R {
		i := rng.IntN(b.n)
		copy(dst.S[k*od:(k+1)*od], b.s[i*od:(i+1)*od])
		copy(dst.A[k*ad:(k+1)*ad], b.a[i*ad:(i+1)*ad])
		dst.R[k] = b.r[i]
		copy(dst.S2[k*od:(k+1)*od], b.s2[i*od:(i+1)*od])
		dst.Terminated[k] = b.d[i]
	}
}

// rows returns the view of rows [i, j) of b.
func (b Batch) rows(i, j, od, ad int) Batch {
	return Batch{S: b.S[i*od : j*od], A: b.A[i*ad : j*ad], R: b.R[i:j], S2: b.S2[i*od : j*od], Terminated: b.Terminated[i:j]}
}

// NewBatch returns a Batch of B rows for these dimensions.
func NewBatch(B, obsDim, actDim int) Batch {
	return Batch{S: make([]float64, B*obsDim), A: make([]float64, B*actDim), R: make([]float64, B),
		S2: make([]float64, B*obsDim), Terminated: make([]float64, B)}
}
