package lincb

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"dprl/internal/jsonstrict"
)

// SnapshotFormat names the released-model format: JSON holding the public
// configuration and the released statistics (the sum of the noised blocks),
// from which Fit recomputes the model.
const SnapshotFormat = "dprl.lincb.v1"

// maxSnapshotBytes bounds a snapshot (10 actions of dimension 8 take about
// 10 KB), so that a hostile file cannot make the decoder allocate without
// limit.
const maxSnapshotBytes = 16 << 20

// Snapshot is a released linear contextual bandit: its configuration, the
// number of released blocks and of users in them (public counts), and the
// released statistics.
type Snapshot struct {
	Format  string    `json:"format"`
	Version uint64    `json:"version"`
	Config  Config    `json:"config"`
	Blocks  int       `json:"blocks"`
	Users   int       `json:"users"`
	Stats   []float64 `json:"stats"`
}

// ErrSnapshot marks a snapshot that cannot be read.
var ErrSnapshot = errors.New("lincb: bad snapshot")

// IsSnapshot reports whether b looks like a snapshot of this format (its
// first key names it), without validating it.
func IsSnapshot(b []byte) bool {
	return bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte(`{"format":"`+SnapshotFormat+`"`))
}

// MarshalSnapshot encodes s (Format is set) after validating it.
func MarshalSnapshot(s Snapshot) ([]byte, error) {
	s.Format = SnapshotFormat
	if err := s.validate(); err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// UnmarshalSnapshot decodes and validates a snapshot: strict JSON (no
// unknown or repeated field, no trailing data), the format named, a valid
// configuration, statistics of the configuration's length, all finite.
func UnmarshalSnapshot(b []byte) (Snapshot, error) {
	var s Snapshot
	if len(b) > maxSnapshotBytes {
		return s, fmt.Errorf("%w: %d bytes, at most %d", ErrSnapshot, len(b), maxSnapshotBytes)
	}
	if err := jsonstrict.Decode(b, &s); err != nil {
		return Snapshot{}, fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	if err := s.validate(); err != nil {
		return Snapshot{}, err
	}
	return s, nil
}

func (s Snapshot) validate() error {
	if s.Format != SnapshotFormat {
		return fmt.Errorf("%w: format %q, want %q", ErrSnapshot, s.Format, SnapshotFormat)
	}
	if err := s.Config.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	if s.Blocks < 0 || s.Users < 0 || uint64(s.Blocks) > s.Version {
		return fmt.Errorf("%w: %d blocks and %d users at version %d", ErrSnapshot, s.Blocks, s.Users, s.Version)
	}
	if want := s.Config.Actions * s.Config.stride(); len(s.Stats) != want {
		return fmt.Errorf("%w: %d statistics, want %d", ErrSnapshot, len(s.Stats), want)
	}
	for i, v := range s.Stats {
		if v != v || v > 1e300 || v < -1e300 {
			return fmt.Errorf("%w: statistic %d is %v", ErrSnapshot, i, v)
		}
	}
	return nil
}

// Model fits the snapshot's model (Fit).
func (s Snapshot) Model() (*Model, error) { return Fit(s.Config, s.Stats, s.Blocks, s.Users) }
