package ledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"dprl/ledger/accountant/bandsens"

	"github.com/cockroachdb/pebble/v2"
)

// Correlated noise across releases (the banded matrix-factorization
// mechanism, package bandmf).
//
// A release whose noise is correlated with earlier releases records the
// stream's parameters in Entry.Correlation and its share of the stream's
// state (x_v and g~_v of the last Band-1 releases) in a noise record,
// written in the same synced batch as the entry, snapshot and counters, so
// a crash can neither replay nor skip a row's noise. Release refuses a user
// with MaxParticipations releases or one less than MinSeparation (>= Band)
// releases back (ErrParticipation); the user's m releases are then the
// Gaussian mechanism of multiplier z / sqrt(m) (Choquette-Choo et al. 2023,
// "(Amplified) Banded Matrix Factorization: A unified approach to private
// training", b-min-sep participation), which the counters compose as 1/z^2
// per release. Backup and EndNoiseStream leave the records out and write
// the stream's end marker (key m/noise-end), so a restored ledger starts a
// new stream. Why, and why the records are secret: docs/privacy.md,
// section 3.

// ErrParticipation is returned by Release when a user's participation
// would break the pattern of a correlated-noise stream (too soon after
// their last release, or beyond the most participations). It wraps
// ErrInvalid.
var ErrParticipation = fmt.Errorf("%w: participation outside the stream's pattern", ErrInvalid)

// NoiseBandedSqrt names the banded square-root factor in
// Correlation.Noise.
const NoiseBandedSqrt = bandsens.NoiseBandedSqrt

// Correlation describes the correlated noise of a release
// (Entry.Correlation): public parameters, recomputed by Verify
// (bandsens.Correlation).
type Correlation = bandsens.Correlation

// BandedCorrelation returns the Correlation of a banded square-root
// stream (bandsens.NewCorrelation); its errors wrap ErrInvalid.
func BandedCorrelation(band, minSep, k int, streamStart uint64) (*Correlation, error) {
	c, err := bandsens.NewCorrelation(band, minSep, k, streamStart)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return c, nil
}

// checkCorrelation is c.Check with its error wrapping ErrInvalid.
func checkCorrelation(c *Correlation, version uint64, tol float64) error {
	if err := c.Check(version, tol); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// allows reports whether a user in state st may take part in release
// version of the stream, and why not.
func allows(c *Correlation, st UserState, version uint64) error {
	if st.Updates >= c.MaxParticipations {
		return fmt.Errorf("%w: the user took part in %d releases, at most %d", ErrParticipation, st.Updates, c.MaxParticipations)
	}
	if st.Updates > 0 && (st.LastVersion >= version || version-st.LastVersion < uint64(c.MinSeparation)) {
		return fmt.Errorf("%w: the user's last release was version %d, version %d is less than %d releases later", ErrParticipation, st.LastVersion, version, c.MinSeparation)
	}
	return nil
}

// NoiseStep is a release's share of the stream's state (Release.Noise): x,
// the exact mean of the clipped updates the release noised, and g, the
// released value. Secret: see the package's correlated-noise section.
type NoiseStep struct {
	X, G []float64
}

// prefNoise keys the noise records by version.
var prefNoise = []byte("n/")

func noiseKey(version uint64) []byte { return be64(prefNoise, version) }

// noiseMagic starts every noise record.
const noiseMagic = "dprl noise record v1\n"

// noiseHeader is a noise record's public part.
type noiseHeader struct {
	Version     uint64  `json:"version"`
	StreamStart uint64  `json:"stream_start"`
	Band        int     `json:"band"`
	MinSep      int     `json:"min_separation"`
	MaxPart     int     `json:"max_participations"`
	Params      int     `json:"params"`
	Z           float64 `json:"z"`
	S           float64 `json:"s"`
	K           int     `json:"k"`
	// Prev is the checksum of the stream's previous record ("" for the
	// stream's first); Entry the hash of the entry of this release.
	Prev  string `json:"prev"`
	Entry string `json:"entry"`
}

// noiseRecord is a decoded noise record.
type noiseRecord struct {
	noiseHeader
	X, G [][]float64 // one vector each (slices for NoiseState)
	Sum  string      // the record's checksum: hex SHA-256 of its bytes before it
}

// encodeNoise returns the record's bytes and checksum: the magic, the
// header's length (4 bytes, big-endian) and JSON, x and g (little-endian
// float64s), and SHA-256 of all of it.
func encodeNoise(h noiseHeader, x, g []float64) ([]byte, string, error) {
	hb, err := json.Marshal(h)
	if err != nil {
		return nil, "", err
	}
	var buf bytes.Buffer
	buf.WriteString(noiseMagic)
	binary.Write(&buf, binary.BigEndian, uint32(len(hb)))
	buf.Write(hb)
	binary.Write(&buf, binary.LittleEndian, x)
	binary.Write(&buf, binary.LittleEndian, g)
	sum := sha256.Sum256(buf.Bytes())
	buf.Write(sum[:])
	return buf.Bytes(), hex.EncodeToString(sum[:]), nil
}

// decodeNoise parses a record, checking its checksum and shape.
func decodeNoise(v []byte) (noiseRecord, error) {
	var r noiseRecord
	n := len(v)
	if n < len(noiseMagic)+4+sha256.Size || string(v[:len(noiseMagic)]) != noiseMagic {
		return r, errors.New("not a noise record")
	}
	sum := sha256.Sum256(v[:n-sha256.Size])
	if !bytes.Equal(sum[:], v[n-sha256.Size:]) {
		return r, errors.New("checksum mismatch")
	}
	r.Sum = hex.EncodeToString(sum[:])
	p := v[len(noiseMagic) : n-sha256.Size]
	hl := int(binary.BigEndian.Uint32(p))
	p = p[4:]
	if hl > len(p) {
		return r, errors.New("header past the record")
	}
	if err := decodeStrict(p[:hl], &r.noiseHeader); err != nil {
		return r, fmt.Errorf("header: %v", err)
	}
	p = p[hl:]
	if r.Params < 1 || len(p) != 16*r.Params {
		return r, fmt.Errorf("%d bytes of vectors for %d parameters", len(p), r.Params)
	}
	x, g := make([]float64, r.Params), make([]float64, r.Params)
	for i := range x {
		x[i] = math.Float64frombits(binary.LittleEndian.Uint64(p[8*i:]))
		g[i] = math.Float64frombits(binary.LittleEndian.Uint64(p[8*(r.Params+i):]))
	}
	r.X, r.G = [][]float64{x}, [][]float64{g}
	return r, nil
}

// keyNoiseEnd holds the end marker of the stream whose noise records a
// backup left out (noiseEnd).
var keyNoiseEnd = []byte("m/noise-end")

// noiseEnd is the end marker of a correlated-noise stream: the stream that
// started at StreamStart ended at the release of Version, whose entry has
// hash Entry; the next release starts a new stream. Reason says what ended
// it ("backup" or "restore").
type noiseEnd struct {
	Version     uint64 `json:"version"`
	StreamStart uint64 `json:"stream_start"`
	Entry       string `json:"entry"`
	Reason      string `json:"reason"`
}

// noiseEndOf is the end marker of the stream whose last record is r.
func noiseEndOf(r noiseRecord, reason string) noiseEnd {
	return noiseEnd{Version: r.Version, StreamStart: r.StreamStart, Entry: r.Entry, Reason: reason}
}

// noiseRecords reads every noise record, in version order, decoding each
// (a damaged one wraps ErrCorrupt).
func (s *Store) noiseRecords() ([]noiseRecord, error) {
	var out []noiseRecord
	err := s.scan(prefNoise, prefixEnd(prefNoise), func(k, v []byte) error {
		if len(k) != len(prefNoise)+8 {
			return fmt.Errorf("%w: noise record key of %d bytes", ErrCorrupt, len(k))
		}
		ver := be64Value(k[len(prefNoise):])
		r, err := decodeNoise(v)
		if err != nil {
			return fmt.Errorf("%w: noise record of version %d: %v", ErrCorrupt, ver, err)
		}
		if r.Version != ver {
			return fmt.Errorf("%w: noise record under version %d says version %d", ErrCorrupt, ver, r.Version)
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// checkChain reports the first problem of a stream's records (version
// order): consecutive versions of one stream, one shape and parameters,
// each record's Prev the checksum of the one before it.
func checkChain(recs []noiseRecord) error {
	for i := 1; i < len(recs); i++ {
		a, b := recs[i-1], recs[i]
		switch {
		case b.Version != a.Version+1:
			return fmt.Errorf("noise records of versions %d and %d are not consecutive", a.Version, b.Version)
		case b.StreamStart != a.StreamStart || b.Band != a.Band || b.MinSep != a.MinSep || b.MaxPart != a.MaxPart || b.Params != a.Params || b.Z != a.Z || b.S != a.S || b.K != a.K:
			return fmt.Errorf("noise records of versions %d and %d belong to different streams", a.Version, b.Version)
		case b.Prev != a.Sum:
			return fmt.Errorf("noise record of version %d does not chain to the record of version %d", b.Version, a.Version)
		}
	}
	return nil
}

// NoiseState is the persisted state of a correlated-noise stream: the last
// min(Band-1, releases) releases' exact means X and released values G,
// oldest first, ending at Version. It is secret (see Store.Release).
type NoiseState struct {
	// Version is the version of the last record (0: no stream state).
	Version     uint64
	StreamStart uint64
	// Band, MinSeparation and MaxParticipations are the stream's
	// Correlation's; Params the length of each vector; Z, S and K its
	// releases'.
	Band, MinSeparation, MaxParticipations int
	Params                                 int
	Z, S                                   float64
	K                                      int
	X, G                                   [][]float64
	// EndedAt is the version at which the ledger's stream ended (a backup
	// left its records out, or EndNoiseStream): the state is empty and the
	// next release starts a new stream. 0 when no stream ended there.
	EndedAt uint64
}

// NoiseState returns the stream state the records hold (the zero state
// when there is none): the records must be consecutive versions of one
// stream, chained, and end at the head version, else ErrCorrupt. A caller
// continues the stream only if its parameters match; otherwise its next
// release starts a new stream (and that release's batch deletes these
// records).
//
// A stream that ended (its end marker, see the package's correlated-noise
// section) has no state: NoiseState returns the zero state with EndedAt
// set, and the next release starts a new stream.
func (s *Store) NoiseState() (NoiseState, error) {
	recs, err := s.noiseRecords()
	if err != nil {
		return NoiseState{}, err
	}
	h, err := s.Head()
	if err != nil {
		return NoiseState{}, err
	}
	var end noiseEnd
	ended, err := s.getJSON(keyNoiseEnd, &end)
	switch {
	case err != nil:
		return NoiseState{}, err
	case ended && len(recs) > 0:
		return NoiseState{}, fmt.Errorf("%w: the noise stream ended at version %d, but %d noise records remain", ErrCorrupt, end.Version, len(recs))
	case ended && end.Version != h.Version:
		return NoiseState{}, fmt.Errorf("%w: the noise stream ended at version %d, the head is version %d", ErrCorrupt, end.Version, h.Version)
	case ended:
		return NoiseState{EndedAt: end.Version}, nil
	case len(recs) == 0:
		return NoiseState{}, nil
	}
	if err := checkChain(recs); err != nil {
		return NoiseState{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	last := recs[len(recs)-1]
	if last.Version != h.Version {
		return NoiseState{}, fmt.Errorf("%w: the noise state ends at version %d, the head is version %d", ErrCorrupt, last.Version, h.Version)
	}
	if want := min(uint64(last.Band-1), last.Version-last.StreamStart+1); uint64(len(recs)) != want {
		return NoiseState{}, fmt.Errorf("%w: %d noise records, the stream needs the last %d", ErrCorrupt, len(recs), want)
	}
	st := NoiseState{Version: last.Version, StreamStart: last.StreamStart, Band: last.Band, MinSeparation: last.MinSep, MaxParticipations: last.MaxPart,
		Params: last.Params, Z: last.Z, S: last.S, K: last.K}
	for _, r := range recs {
		st.X = append(st.X, r.X[0])
		st.G = append(st.G, r.G[0])
	}
	return st, nil
}

// checkParticipation refuses a release that would break its stream's
// pattern for a user of state st (nil Correlation: no pattern).
func (e *Entry) checkParticipation(st UserState, u UserKey, version uint64) error {
	if e.Correlation == nil {
		return nil
	}
	if err := allows(e.Correlation, st, version); err != nil {
		return fmt.Errorf("user %s: %w", u, err)
	}
	return nil
}

// putNoise adds the release's noise record to the batch (e is the entry as
// appended: its hash is set) and deletes the records the stream no longer
// needs: the record Band-1 releases back, or every earlier record when the
// release starts a stream; every record when the release has no
// correlated noise. It checks the step against its entry and the previous
// record.
func (s *Store) putNoise(b *pebble.Batch, r Release, e Entry) error {
	// Whatever the release, an ended stream's marker has served: the
	// release starts a new stream or has no correlated noise.
	if err := b.Delete(keyNoiseEnd, nil); err != nil {
		return err
	}
	c := e.Correlation
	if r.Noise == nil {
		if c != nil {
			return fmt.Errorf("%w: a correlated-noise release without its noise step", ErrInvalid)
		}
		return s.clearNoise(b)
	}
	if c == nil {
		return fmt.Errorf("%w: a noise step without the entry's correlation", ErrInvalid)
	}
	x, g := r.Noise.X, r.Noise.G
	if err := checkNoiseStep(x, g); err != nil {
		return err
	}
	if c.Band == 1 {
		// One band: independent noise, no state to keep.
		return s.clearNoise(b)
	}
	h := noiseHeader{Version: r.Version, StreamStart: c.StreamStart, Band: c.Band, MinSep: c.MinSeparation, MaxPart: c.MaxParticipations,
		Params: len(x), Z: e.Z, S: e.S, K: e.K, Entry: e.Hash}
	if c.StreamStart < r.Version {
		if err := s.chainNoise(&h); err != nil {
			return err
		}
	}
	rec, _, err := encodeNoise(h, x, g)
	if err != nil {
		return err
	}
	if err := b.Set(noiseKey(r.Version), rec, nil); err != nil {
		return err
	}
	return pruneNoise(b, c, r.Version)
}

// clearNoise adds to the batch the deletion of every noise record, if the
// store holds any.
func (s *Store) clearNoise(b *pebble.Batch) error {
	any := false
	if err := s.scan(prefNoise, prefixEnd(prefNoise), func(_, _ []byte) error { any = true; return errStop }); err != nil && !errors.Is(err, errStop) {
		return err
	}
	if any {
		return b.DeleteRange(prefNoise, prefixEnd(prefNoise), nil)
	}
	return nil
}

// checkNoiseStep checks a noise step's vectors: as many values in each,
// at least one, within the state size a record may hold, all finite.
func checkNoiseStep(x, g []float64) error {
	if len(x) == 0 || len(x) != len(g) || 2*len(x) > bandsens.MaxStateFloats {
		return fmt.Errorf("%w: noise step of %d and %d values", ErrInvalid, len(x), len(g))
	}
	for i := range x {
		if math.IsNaN(x[i]) || math.IsInf(x[i], 0) || math.IsNaN(g[i]) || math.IsInf(g[i], 0) {
			return fmt.Errorf("%w: noise step with a non-finite value", ErrInvalid)
		}
	}
	return nil
}

// chainNoise chains the record of a release that continues its stream (h)
// to the previous version's record, which must exist and have the same
// parameters.
func (s *Store) chainNoise(h *noiseHeader) error {
	prevRaw, err := s.get(noiseKey(h.Version - 1))
	if err != nil {
		return err
	}
	if prevRaw == nil {
		return fmt.Errorf("%w: release %d continues a stream from version %d, but version %d has no noise record (the stream ended there, or never reached it): start a new stream", ErrInvalid, h.Version, h.StreamStart, h.Version-1)
	}
	prev, err := decodeNoise(prevRaw)
	if err != nil {
		return fmt.Errorf("%w: noise record of version %d: %v", ErrCorrupt, h.Version-1, err)
	}
	if prev.StreamStart != h.StreamStart || prev.Band != h.Band || prev.MinSep != h.MinSep || prev.MaxPart != h.MaxPart || prev.Params != h.Params || prev.Z != h.Z || prev.S != h.S || prev.K != h.K {
		return fmt.Errorf("%w: release %d continues the stream of version %d with other parameters", ErrInvalid, h.Version, h.Version-1)
	}
	h.Prev = prev.Sum
	return nil
}

// pruneNoise adds to the batch the deletion of the records the stream no
// longer needs once version v has its record: it keeps versions
// max(StreamStart, v-Band+2) .. v, so a new stream deletes every earlier
// record and a continuing one the record that falls out.
func pruneNoise(b *pebble.Batch, c *Correlation, v uint64) error {
	if c.StreamStart == v {
		return b.DeleteRange(prefNoise, noiseKey(v), nil)
	}
	if back := uint64(c.Band - 1); v >= back && v-back >= c.StreamStart {
		return b.Delete(noiseKey(v-back), nil)
	}
	return nil
}

// EndNoiseStream ends the ledger's correlated-noise stream: it deletes the
// noise records and writes the stream's end marker in one synced batch
// that moves no head (no entry is written), so the next release starts a
// new stream. It reports the version the stream ended at (0: there was no
// stream state, nothing written).
//
// It is for a data directory restored from a plain copy (cp -a, a file
// system snapshot) rather than from Backup, which leaves the records out
// itself: nothing inside a directory tells a restored copy from a restart,
// so the operator says so before the agent starts on it. The deleted
// records' bytes may stay in the store's files until Pebble compacts them
// (it is asked to, for their key range); the copy they came from holds
// them anyway.
func (s *Store) EndNoiseStream() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	if s.heads == nil {
		return 0, fmt.Errorf("%w: the store is open read-only", ErrInvalid)
	}
	if _, err := s.NoiseState(); err != nil {
		return 0, err
	}
	recs, err := s.noiseRecords()
	if err != nil || len(recs) == 0 {
		return 0, err
	}
	last := recs[len(recs)-1]
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(prefNoise, prefixEnd(prefNoise), nil); err != nil {
		return 0, err
	}
	if err := setJSON(b, keyNoiseEnd, noiseEndOf(last, "restore")); err != nil {
		return 0, err
	}
	if err := s.commitBatch(b); err != nil {
		return 0, err
	}
	if err := s.compactNoise(); err != nil {
		s.log.Warn().Err(err).Msg("ledger: compacting the deleted noise records failed; they stay deleted")
	}
	return last.Version, nil
}

// compactNoise asks Pebble to compact the noise records' key range.
func (s *Store) compactNoise() (err error) {
	defer s.recoverInto(&err)
	return s.db.Compact(context.Background(), prefNoise, prefixEnd(prefNoise), false)
}
