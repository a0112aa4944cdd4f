package policy

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
)

// ErrCorruptSnapshot marks snapshot bytes that are not a well-formed snapshot:
// truncated, wrong magic, checksum mismatch, malformed or inconsistent fields.
var ErrCorruptSnapshot = errors.New("policy: corrupt snapshot")

// ErrIncompatible marks a well-formed snapshot that cannot be used here: a
// format version newer than this build reads, or a Spec or network shape
// different from the configured one.
var ErrIncompatible = errors.New("policy: incompatible snapshot")

// SnapshotFormatVersion is the newest snapshot format version this build
// writes; it reads versions 1 to SnapshotFormatVersion. A snapshot without a
// served average (Snapshot.Average) is written in format 1, byte for byte as
// before format 2 existed; format 2 adds the average.
const SnapshotFormatVersion = 2

// snapshotMagic opens every snapshot.
var snapshotMagic = [8]byte{'D', 'P', 'R', 'L', 'P', 'O', 'L', 0}

// Limits on decoded sizes, so that a corrupt length cannot make Unmarshal
// allocate without bound.
const (
	maxSnapshotLayers = 64
	maxSnapshotWidth  = 1 << 20
	maxSnapshotDim    = 1 << 20
)

// Snapshot is one released policy version as stored (the agent keeps these
// bytes in Pebble) and served: the problem Spec, the network shape, the
// joint parameter vector theta = [policy; value] in the Learner's layout, the
// version number, and the settings that matter for serving and auditing.
type Snapshot struct {
	Spec    Spec
	Hidden  []int     // hidden widths of both networks (PPOConfig.Hidden)
	Version uint64    // policy version (number of releases)
	DP      DPConfig  // the privacy settings of the updates that produced Theta
	Config  [32]byte  // ConfigHash of the full Config
	Theta   []float64 // joint parameters, NumSnapshotParams(Spec, Hidden) values

	// Average, when not nil, is what is served: the exponential moving
	// average of the released iterates, avg_v = d avg_{v-1} + (1 - d) theta_v
	// with d = AverageDecay in (0, 1) and avg_1 = theta_1 (Polyak averaging,
	// as TrainOptions.AverageDecay). Theta stays the iterate the next update
	// starts from. Both are functions of the noised releases only.
	Average      []float64
	AverageDecay float64
}

// Served returns the parameters to serve: Average when the snapshot holds
// one, else Theta.
func (s *Snapshot) Served() []float64 {
	if s.Average != nil {
		return s.Average
	}
	return s.Theta
}

// NumSnapshotParams returns the length of the joint vector of a Learner
// (and Snapshot) for spec and hidden widths, or an error if they are invalid.
func NumSnapshotParams(spec Spec, hidden []int) (int, error) {
	if err := spec.Validate(); err != nil {
		return 0, err
	}
	if len(hidden) > maxSnapshotLayers {
		return 0, fmt.Errorf("policy: %d hidden layers, at most %d", len(hidden), maxSnapshotLayers)
	}
	for i, h := range hidden {
		if h < 1 || h > maxSnapshotWidth {
			return 0, fmt.Errorf("policy: hidden[%d] = %d, must be in [1, %d]", i, h, maxSnapshotWidth)
		}
	}
	if spec.ObsDim > maxSnapshotDim || spec.netOut() > maxSnapshotDim {
		return 0, fmt.Errorf("policy: spec dimensions above %d", maxSnapshotDim)
	}
	mlp := func(out int) int {
		n, in := 0, spec.ObsDim
		for _, h := range append(slices.Clone(hidden), out) {
			n += in*h + h
			in = h
		}
		return n
	}
	n := mlp(spec.netOut()) + mlp(1)
	if spec.Kind == ActionContinuous {
		n += spec.ActionDim
	}
	return n, nil
}

// ConfigHash returns the SHA-256 of a canonical binary encoding of every
// field of cfg, so that a stored snapshot names the exact configuration that
// trained it.
func ConfigHash(cfg Config) [32]byte {
	var b []byte
	u := func(x uint64) { b = binary.LittleEndian.AppendUint64(b, x) }
	f := func(x float64) { u(math.Float64bits(x)) }
	p := cfg.PPO
	u(uint64(len(p.Hidden)))
	for _, h := range p.Hidden {
		u(uint64(h))
	}
	u(uint64(p.StepsPerUser))
	f(p.Gamma)
	f(p.Lambda)
	u(uint64(p.Epochs))
	u(uint64(p.Minibatches))
	f(p.EntropyCoef)
	f(p.ValueCoef)
	if p.NormalizeAdvantages {
		u(1)
	} else {
		u(0)
	}
	f(p.Adam.LR)
	f(p.Adam.Beta1)
	f(p.Adam.Beta2)
	f(p.Adam.Eps)
	f(p.ServerLR)
	f(p.InitLogStd)
	d := cfg.DP
	u(uint64(d.Mode))
	f(d.NoiseMultiplier)
	f(d.ClipNorm)
	u(uint64(d.UsersPerUpdate))
	f(d.PolicyClipShare)
	// Fields added after v1 are hashed only when set, so the hash of a
	// configuration that does not use them is unchanged.
	if p.ValueScale != 0 && p.ValueScale != 1 {
		b = append(b, "value_scale"...)
		f(p.ValueScale)
	}
	if p.MomentReset != ResetPaper {
		b = append(b, "moment_reset"...)
		u(uint64(p.MomentReset))
	}
	if len(p.ObsScale) > 0 {
		b = append(b, "obs_scale"...)
		u(uint64(len(p.ObsScale)))
		for _, v := range p.ObsScale {
			f(v)
		}
	}
	if d.Noise != NoiseIndependent {
		b = append(b, "noise"...)
		u(uint64(d.Noise))
		u(uint64(d.Horizon))
	}
	if d.Band != 0 {
		b = append(b, "band"...)
		u(uint64(d.Band))
	}
	return sha256.Sum256(append([]byte("dprl.policy.config.v1\x00"), b...))
}

// NewSnapshot returns the snapshot of a Learner's configuration and theta at
// the given version. theta is copied.
func NewSnapshot(spec Spec, cfg Config, version uint64, theta []float64) (*Snapshot, error) {
	n, err := NumSnapshotParams(spec, cfg.PPO.Hidden)
	if err != nil {
		return nil, err
	}
	if len(theta) != n {
		return nil, fmt.Errorf("policy: snapshot: theta has %d values, want %d", len(theta), n)
	}
	return &Snapshot{Spec: spec, Hidden: slices.Clone(cfg.PPO.Hidden), Version: version, DP: cfg.DP,
		Config: ConfigHash(cfg), Theta: slices.Clone(theta)}, nil
}

// CheckCompatible reports, wrapping ErrIncompatible, every way in which the
// snapshot's Spec and network shape differ from the configured ones, naming
// both values ("policy spec: obs_dim 8 in store != 6 in config").
func (s *Snapshot) CheckCompatible(spec Spec, hidden []int) error {
	var errs []error
	diff := func(name string, store, config any) {
		errs = append(errs, fmt.Errorf("%w: policy spec: %s %v in store != %v in config", ErrIncompatible, name, store, config))
	}
	if s.Spec.ObsDim != spec.ObsDim {
		diff("obs_dim", s.Spec.ObsDim, spec.ObsDim)
	}
	if s.Spec.Kind != spec.Kind {
		diff("action kind", s.Spec.Kind, spec.Kind)
	}
	if s.Spec.NumActions != spec.NumActions {
		diff("num_actions", s.Spec.NumActions, spec.NumActions)
	}
	if s.Spec.ActionDim != spec.ActionDim {
		diff("action_dim", s.Spec.ActionDim, spec.ActionDim)
	}
	if !slices.Equal(s.Hidden, hidden) {
		diff("hidden", s.Hidden, hidden)
	}
	return errors.Join(errs...)
}

// Layout (all integers little-endian):
//
//	magic    8 bytes "DPRLPOL\x00"
//	version  uint16 format version
//	fields   each a uint32 byte length followed by that many bytes, in order:
//	  spec     obs_dim u32, kind u8, num_actions u32, action_dim u32
//	  hidden   u32 each
//	  version  u64 policy version
//	  dp       mode u8, z f64, S f64, K u32, policy clip share f64
//	  config   32-byte SHA-256 (ConfigHash)
//	  theta    f64 each (IEEE 754 bits)
//	  average  format 2 only: decay f64, then f64 each (as many as theta)
//	crc      uint32 CRC-32C (Castagnoli) of every preceding byte
const snapshotFields = 6

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MarshalBinary encodes the snapshot: format 1 without an Average, format 2
// with one. It fails if the snapshot is inconsistent (invalid Spec or
// Hidden, wrong theta or average length, non-finite values, a decay outside
// (0, 1)).
func (s *Snapshot) MarshalBinary() ([]byte, error) {
	n, err := NumSnapshotParams(s.Spec, s.Hidden)
	if err != nil {
		return nil, fmt.Errorf("policy: snapshot: %w", err)
	}
	if len(s.Theta) != n {
		return nil, fmt.Errorf("policy: snapshot: theta has %d values, want %d", len(s.Theta), n)
	}
	if err := checkActionCounts(s.Spec); err != nil {
		return nil, fmt.Errorf("policy: snapshot: %w", err)
	}
	if err := s.DP.Validate(); err != nil {
		return nil, fmt.Errorf("policy: snapshot: %w", err)
	}
	if s.DP.Noise != NoiseIndependent {
		return nil, fmt.Errorf("policy: snapshot: format %d cannot record %v noise", SnapshotFormatVersion, s.DP.Noise)
	}
	for i, x := range s.Theta {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("policy: snapshot: theta[%d] = %v", i, x)
		}
	}
	format := uint16(1)
	if s.Average != nil {
		format = 2
		if err := checkAverage(s.AverageDecay, s.Average, n); err != nil {
			return nil, fmt.Errorf("policy: snapshot: %w", err)
		}
	} else if s.AverageDecay != 0 {
		return nil, fmt.Errorf("policy: snapshot: average decay %v without an average", s.AverageDecay)
	}
	b := make([]byte, 0, 8+2+(snapshotFields+1)*4+13+4*len(s.Hidden)+8+29+32+8*n+8+8*len(s.Average)+4)
	b = append(b, snapshotMagic[:]...)
	b = binary.LittleEndian.AppendUint16(b, format)
	field := func(size int, fill func([]byte) []byte) {
		b = binary.LittleEndian.AppendUint32(b, uint32(size))
		b = fill(b)
	}
	le := binary.LittleEndian
	field(13, func(b []byte) []byte {
		b = le.AppendUint32(b, uint32(s.Spec.ObsDim))
		b = append(b, byte(s.Spec.Kind))
		b = le.AppendUint32(b, uint32(s.Spec.NumActions))
		return le.AppendUint32(b, uint32(s.Spec.ActionDim))
	})
	field(4*len(s.Hidden), func(b []byte) []byte {
		for _, h := range s.Hidden {
			b = le.AppendUint32(b, uint32(h))
		}
		return b
	})
	field(8, func(b []byte) []byte { return le.AppendUint64(b, s.Version) })
	field(29, func(b []byte) []byte {
		b = append(b, byte(s.DP.Mode))
		b = le.AppendUint64(b, math.Float64bits(s.DP.NoiseMultiplier))
		b = le.AppendUint64(b, math.Float64bits(s.DP.ClipNorm))
		b = le.AppendUint32(b, uint32(s.DP.UsersPerUpdate))
		return le.AppendUint64(b, math.Float64bits(s.DP.PolicyClipShare))
	})
	field(32, func(b []byte) []byte { return append(b, s.Config[:]...) })
	field(8*n, func(b []byte) []byte {
		for _, x := range s.Theta {
			b = le.AppendUint64(b, math.Float64bits(x))
		}
		return b
	})
	if format == 2 {
		field(8+8*n, func(b []byte) []byte {
			b = le.AppendUint64(b, math.Float64bits(s.AverageDecay))
			for _, x := range s.Average {
				b = le.AppendUint64(b, math.Float64bits(x))
			}
			return b
		})
	}
	return le.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

// checkAverage validates a served average of n parameters.
func checkAverage(decay float64, avg []float64, n int) error {
	if !(decay > 0 && decay < 1) {
		return fmt.Errorf("average decay %v, must be in (0, 1)", decay)
	}
	if len(avg) != n {
		return fmt.Errorf("average has %d values, want %d", len(avg), n)
	}
	for i, x := range avg {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("average[%d] = %v", i, x)
		}
	}
	return nil
}

// UnmarshalBinary decodes a snapshot written by MarshalBinary. It returns an
// error wrapping ErrCorruptSnapshot for bytes that are truncated, carry the
// wrong magic or checksum, or hold malformed or inconsistent fields, and one
// wrapping ErrIncompatible for a format version newer than
// SnapshotFormatVersion. A snapshot it accepts re-marshals to the same bytes.
// data is not retained.
func (s *Snapshot) UnmarshalBinary(data []byte) error {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrCorruptSnapshot}, args...)...)
	}
	const minLen = 8 + 2 + 4
	if len(data) < minLen {
		return corrupt("%d bytes, shorter than the %d-byte header and checksum", len(data), minLen)
	}
	if [8]byte(data[:8]) != snapshotMagic {
		return corrupt("bad magic %q", data[:8])
	}
	le := binary.LittleEndian
	body, sum := data[:len(data)-4], le.Uint32(data[len(data)-4:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return corrupt("checksum %08x, stored %08x (truncated or damaged)", got, sum)
	}
	format := le.Uint16(body[8:10])
	if format > SnapshotFormatVersion {
		return fmt.Errorf("%w: snapshot format version %d is newer than this build reads (%d)", ErrIncompatible, format, SnapshotFormatVersion)
	}
	if format == 0 {
		return corrupt("format version %d", format)
	}
	rest := body[10:]
	var fields [snapshotFields + 1][]byte
	names := [snapshotFields + 1]string{"spec", "hidden", "version", "dp", "config", "theta", "average"}
	nf := snapshotFields
	if format == 2 {
		nf++
	}
	for i := range fields[:nf] {
		if len(rest) < 4 {
			return corrupt("field %s: missing length", names[i])
		}
		n := le.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return corrupt("field %s: length %d, %d bytes left", names[i], n, len(rest))
		}
		fields[i], rest = rest[:n], rest[n:]
	}
	if len(rest) != 0 {
		return corrupt("%d trailing bytes", len(rest))
	}
	size := func(i, want int) error {
		if len(fields[i]) != want {
			return corrupt("field %s: %d bytes, want %d", names[i], len(fields[i]), want)
		}
		return nil
	}
	u32 := func(b []byte) int { return int(le.Uint32(b)) }
	f64 := func(b []byte) float64 { return math.Float64frombits(le.Uint64(b)) }
	var out Snapshot
	if err := size(0, 13); err != nil {
		return err
	}
	sp := fields[0]
	out.Spec = Spec{ObsDim: u32(sp[0:]), Kind: ActionKind(sp[4]), NumActions: u32(sp[5:]), ActionDim: u32(sp[9:])}
	if h := fields[1]; len(h)%4 != 0 || len(h)/4 > maxSnapshotLayers {
		return corrupt("field hidden: %d bytes", len(h))
	}
	out.Hidden = make([]int, len(fields[1])/4)
	for i := range out.Hidden {
		out.Hidden[i] = u32(fields[1][4*i:])
	}
	n, err := NumSnapshotParams(out.Spec, out.Hidden)
	if err != nil {
		return corrupt("%v", err)
	}
	if err := checkActionCounts(out.Spec); err != nil {
		return corrupt("%v", err)
	}
	if err := size(2, 8); err != nil {
		return err
	}
	out.Version = le.Uint64(fields[2])
	if err := size(3, 29); err != nil {
		return err
	}
	dp := fields[3]
	out.DP = DPConfig{Mode: Mode(dp[0]), NoiseMultiplier: f64(dp[1:]), ClipNorm: f64(dp[9:]), UsersPerUpdate: u32(dp[17:]), PolicyClipShare: f64(dp[21:])}
	if err := out.DP.Validate(); err != nil {
		return corrupt("%v", err)
	}
	if out.DP.UsersPerUpdate > math.MaxInt32 {
		return corrupt("users per update %d", out.DP.UsersPerUpdate)
	}
	if err := size(4, 32); err != nil {
		return err
	}
	out.Config = [32]byte(fields[4])
	if err := size(5, 8*n); err != nil {
		return err
	}
	out.Theta = make([]float64, n)
	for i := range out.Theta {
		x := f64(fields[5][8*i:])
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return corrupt("theta[%d] = %v", i, x)
		}
		out.Theta[i] = x
	}
	if format == 2 {
		if err := size(6, 8+8*n); err != nil {
			return err
		}
		out.AverageDecay = f64(fields[6])
		out.Average = make([]float64, n)
		for i := range out.Average {
			out.Average[i] = f64(fields[6][8+8*i:])
		}
		if err := checkAverage(out.AverageDecay, out.Average, n); err != nil {
			return corrupt("%v", err)
		}
	}
	*s = out
	return nil
}

// checkActionCounts rejects a Spec that sets the action count of the other
// kind, which a snapshot could not round-trip canonically.
func checkActionCounts(s Spec) error {
	if s.Kind == ActionDiscrete && s.ActionDim != 0 || s.Kind == ActionContinuous && s.NumActions != 0 {
		return fmt.Errorf("spec %+v sets the action count of the other kind", s)
	}
	return nil
}

// MarshalSnapshot is (*Snapshot).MarshalBinary.
func MarshalSnapshot(s *Snapshot) ([]byte, error) { return s.MarshalBinary() }

// UnmarshalSnapshot decodes data into a new Snapshot (see
// (*Snapshot).UnmarshalBinary).
func UnmarshalSnapshot(data []byte) (*Snapshot, error) {
	s := new(Snapshot)
	if err := s.UnmarshalBinary(data); err != nil {
		return nil, err
	}
	return s, nil
}

// SnapshotParams decodes an encoded snapshot and returns its number of
// parameters (the check ledger.Store.ExportSnapshot runs on what it
// exports).
func SnapshotParams(data []byte) (int, error) {
	s, err := UnmarshalSnapshot(data)
	if err != nil {
		return 0, err
	}
	return len(s.Theta), nil
}
