// Package rng constructs the program's random generators in one place, so
// that every generator is either secure or seeded with a stated purpose.
//
// Secure generators feed everything a production run releases: privacy
// noise, subsampling, the serving policy's sampling. They are ChaCha8 keyed
// with 32 bytes from crypto/rand, so no one who does not hold the key can
// predict or reproduce the noise (a predictable noise stream voids a
// differential privacy guarantee).
//
// Seeded generators exist for simulations and tests that must repeat. Each
// is ChaCha8 keyed by SHA-256 over a domain label, the seed and a purpose
// label, so two purposes derived from one seed never share a stream (the
// noise of a release cannot be recovered from, say, the simulated users'
// stream of the same seed) and the stream of a purpose does not depend on
// which other purposes were drawn first. A run that uses one must say so
// (the ledger records it as seeded).
//
// The command-line convention is New: --seed 0 (or no seed) means secure.
//
// A *rand.Rand is not safe for concurrent use: derive one generator per
// goroutine (with distinct purposes when seeded).
package rng

import (
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
)

// domain separates this package's key derivation from any other use of
// SHA-256 over the same bytes.
const domain = "dprl internal/rng seeded v1\x00"

// Secure returns a generator drawing from ChaCha8 keyed with 32 bytes from
// crypto/rand: the source for production noise. crypto/rand.Read does not
// fail on supported platforms (since Go 1.24 it crashes the program rather
// than return short or weak bytes), so neither does Secure.
func Secure() *rand.Rand {
	var key [32]byte
	crand.Read(key[:]) // never returns an error (Go >= 1.24)
	return rand.New(rand.NewChaCha8(key))
}

// SecureSeed returns a uint64 from crypto/rand, for a seed that a run draws
// when none was given (and may print so that the run can be repeated as a
// simulation).
func SecureSeed() uint64 {
	var b [8]byte
	crand.Read(b[:]) // never returns an error (Go >= 1.24)
	return binary.LittleEndian.Uint64(b[:])
}

// Key returns the ChaCha8 key of the seeded stream of (seed, purpose):
// SHA-256(domain || little-endian seed || purpose). The seed has a fixed
// width and the purpose comes last, so distinct (seed, purpose) pairs give
// distinct inputs to the hash.
func Key(seed uint64, purpose string) [32]byte {
	h := sha256.New()
	h.Write([]byte(domain))
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(purpose))
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// Seeded returns the repeatable generator of (seed, purpose): ChaCha8 keyed
// by Key(seed, purpose). Different purposes give independent streams; the
// same seed and purpose give the same stream. Never use it for a release
// that is not labelled as seeded.
func Seeded(seed uint64, purpose string) *rand.Rand {
	return rand.New(rand.NewChaCha8(Key(seed, purpose)))
}

// New applies the command-line convention: seed 0 means a secure generator
// (Secure; purpose is then unused), any other seed the repeatable stream
// Seeded(seed, purpose).
func New(seed uint64, purpose string) *rand.Rand {
	if seed == 0 {
		return Secure()
	}
	return Seeded(seed, purpose)
}
