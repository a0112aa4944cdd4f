package rng

import (
	"testing"
)

// draws returns the first n outputs of r.
func draws(n int, next func() uint64) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = next()
	}
	return out
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSeeded(t *testing.T) {
	tests := []struct {
		name         string
		seedA, seedB uint64
		purA, purB   string
		same         bool
	}{
		{"same seed and purpose", 7, 7, "noise", "noise", true},
		{"different purposes", 7, 7, "noise", "users", false},
		{"purpose is a prefix", 7, 7, "noise", "noise2", false},
		{"different seeds", 7, 8, "noise", "noise", false},
		{"empty purpose", 7, 7, "", "x", false},
		{"seed zero is seeded here", 0, 0, "noise", "noise", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := draws(16, Seeded(tt.seedA, tt.purA).Uint64)
			b := draws(16, Seeded(tt.seedB, tt.purB).Uint64)
			if got := equal(a, b); got != tt.same {
				t.Fatalf("streams equal = %v, want %v\n%v\n%v", got, tt.same, a, b)
			}
		})
	}
}

// TestSeededIndependentOfOrder checks that a purpose's stream does not
// depend on which other streams were drawn before it.
func TestSeededIndependentOfOrder(t *testing.T) {
	want := draws(8, Seeded(3, "eval").Uint64)
	draws(100, Seeded(3, "train").Uint64)
	if got := draws(8, Seeded(3, "eval").Uint64); !equal(got, want) {
		t.Fatalf("stream changed: %v vs %v", got, want)
	}
}

func TestSecureDiffers(t *testing.T) {
	a := draws(4, Secure().Uint64)
	b := draws(4, Secure().Uint64)
	if equal(a, b) {
		t.Fatalf("two secure generators gave the same stream %v", a)
	}
	if SecureSeed() == SecureSeed() {
		t.Fatal("two secure seeds are equal")
	}
}

func TestNew(t *testing.T) {
	// Seed 0 is secure: two calls differ (and differ from Seeded(0, p)).
	a := draws(4, New(0, "noise").Uint64)
	b := draws(4, New(0, "noise").Uint64)
	if equal(a, b) {
		t.Fatal("New(0, p) twice gave the same stream: not secure")
	}
	if equal(a, draws(4, Seeded(0, "noise").Uint64)) {
		t.Fatal("New(0, p) equals Seeded(0, p): not secure")
	}
	// A non-zero seed is Seeded.
	if !equal(draws(8, New(5, "noise").Uint64), draws(8, Seeded(5, "noise").Uint64)) {
		t.Fatal("New(5, p) differs from Seeded(5, p)")
	}
}
