package policy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// testSnapshot returns a valid snapshot with random parameters.
func testSnapshot(t testing.TB, spec Spec, hidden []int) *Snapshot {
	t.Helper()
	cfg := DefaultControlConfig()
	cfg.PPO.Hidden = hidden
	l, err := NewLearner(spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float64, l.NumParams())
	l.Init(theta, rand.New(rand.NewPCG(1, 2)))
	s, err := NewSnapshot(spec, cfg, 17, theta)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNumSnapshotParamsMatchesLearner(t *testing.T) {
	for _, spec := range []Spec{
		{ObsDim: 4, Kind: ActionDiscrete, NumActions: 2},
		{ObsDim: 3, Kind: ActionContinuous, ActionDim: 2},
	} {
		for _, hidden := range [][]int{nil, {5}, {64, 64}} {
			cfg := DefaultControlConfig()
			cfg.PPO.Hidden = hidden
			l, err := NewLearner(spec, cfg)
			if err != nil {
				t.Fatal(err)
			}
			n, err := NumSnapshotParams(spec, hidden)
			if err != nil || n != l.NumParams() {
				t.Errorf("%+v %v: NumSnapshotParams %d, %v; learner %d", spec, hidden, n, err, l.NumParams())
			}
		}
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	for _, spec := range []Spec{
		{ObsDim: 4, Kind: ActionDiscrete, NumActions: 2},
		{ObsDim: 3, Kind: ActionContinuous, ActionDim: 1},
	} {
		s := testSnapshot(t, spec, []int{8, 8})
		b, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		got, err := UnmarshalSnapshot(b)
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec != s.Spec || got.Version != s.Version || got.DP != s.DP || got.Config != s.Config ||
			len(got.Hidden) != 2 || got.Hidden[0] != 8 || len(got.Theta) != len(s.Theta) {
			t.Fatalf("round trip: got %+v, want %+v", got, s)
		}
		for i := range s.Theta {
			if got.Theta[i] != s.Theta[i] {
				t.Fatalf("theta[%d] = %v, want %v", i, got.Theta[i], s.Theta[i])
			}
		}
		b2, err := MarshalSnapshot(got)
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("re-marshal differs (err %v)", err)
		}
		if err := got.CheckCompatible(spec, []int{8, 8}); err != nil {
			t.Fatal(err)
		}
	}
}

// reseal recomputes the trailing CRC-32C after a deliberate edit, so that the
// edit reaches the field checks.
func reseal(b []byte) []byte {
	body := b[:len(b)-4]
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func TestSnapshotCorruption(t *testing.T) {
	s := testSnapshot(t, Spec{ObsDim: 4, Kind: ActionDiscrete, NumActions: 2}, []int{8})
	good, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	clone := func() []byte { return bytes.Clone(good) }
	cases := []struct {
		name string
		data []byte
		want error
		text string
	}{
		{"empty", nil, ErrCorruptSnapshot, "shorter"},
		{"truncated header", good[:9], ErrCorruptSnapshot, "shorter"},
		{"truncated body", good[:len(good)/2], ErrCorruptSnapshot, "checksum"},
		{"truncated checksum", good[:len(good)-1], ErrCorruptSnapshot, "checksum"},
		{"wrong magic", func() []byte { b := clone(); b[0] = 'X'; return b }(), ErrCorruptSnapshot, "magic"},
		{"bit flip in theta", func() []byte { b := clone(); b[len(b)-20] ^= 0x10; return b }(), ErrCorruptSnapshot, "checksum"},
		{"bit flip in spec", func() []byte { b := clone(); b[14] ^= 1; return b }(), ErrCorruptSnapshot, "checksum"},
		{"bit flip in checksum", func() []byte { b := clone(); b[len(b)-1] ^= 0x80; return b }(), ErrCorruptSnapshot, "checksum"},
		{"trailing byte", reseal(append(clone(), 0, 0, 0, 0, 0)), ErrCorruptSnapshot, "trailing"},
		{"future version", func() []byte { b := clone(); b[8] = 3; return reseal(b) }(), ErrIncompatible, "newer"},
		{"format 2 without its average", func() []byte { b := clone(); b[8] = 2; return reseal(b) }(), ErrCorruptSnapshot, "field average: missing length"},
		{"version zero", func() []byte { b := clone(); b[8] = 0; return reseal(b) }(), ErrCorruptSnapshot, "format version 0"},
		{"bad action kind", func() []byte { b := clone(); b[14+4] = 9; return reseal(b) }(), ErrCorruptSnapshot, "action kind"},
		{"theta length", func() []byte { b := clone(); b[14] = 5; return reseal(b) }(), ErrCorruptSnapshot, "theta"},
		{"field length overflow", func() []byte { b := clone(); binary.LittleEndian.PutUint32(b[10:], 1<<31); return reseal(b) }(), ErrCorruptSnapshot, "length"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := UnmarshalSnapshot(c.data)
			if !errors.Is(err, c.want) {
				t.Fatalf("err %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.text) {
				t.Fatalf("err %q lacks %q", err, c.text)
			}
		})
	}
	// Every single-bit flip anywhere is caught.
	for i := range good {
		b := clone()
		b[i] ^= 1 << (i % 8)
		if _, err := UnmarshalSnapshot(b); err == nil {
			t.Fatalf("bit flip at byte %d accepted", i)
		}
	}
}

// averaged returns s with a served average (format 2).
func averaged(s *Snapshot, decay float64) *Snapshot {
	s.AverageDecay = decay
	s.Average = make([]float64, len(s.Theta))
	for i, x := range s.Theta {
		s.Average[i] = x/2 + 0.25
	}
	return s
}

// TestSnapshotAverage: a snapshot with a served average round-trips in
// format 2 and serves the average; one without stays format 1, byte for
// byte; a damaged average is refused.
func TestSnapshotAverage(t *testing.T) {
	spec := Spec{ObsDim: 4, Kind: ActionDiscrete, NumActions: 2}
	plain := testSnapshot(t, spec, []int{8})
	p, err := plain.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint16(p[8:]); v != 1 || &plain.Served()[0] != &plain.Theta[0] {
		t.Fatalf("without an average: format %d, or Served is not Theta", v)
	}
	s := averaged(testSnapshot(t, spec, []int{8}), 0.9)
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint16(b[8:]); v != 2 || len(b) != len(p)+4+8+8*len(s.Theta) {
		t.Fatalf("format %d, %d bytes (format 1: %d)", v, len(b), len(p))
	}
	got, err := UnmarshalSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.AverageDecay != 0.9 || len(got.Average) != len(s.Theta) {
		t.Fatalf("decay %v, %d averaged values", got.AverageDecay, len(got.Average))
	}
	for i := range s.Theta {
		if got.Theta[i] != s.Theta[i] || got.Served()[i] != s.Average[i] {
			t.Fatalf("param %d: theta %v average %v, want %v and %v", i, got.Theta[i], got.Served()[i], s.Theta[i], s.Average[i])
		}
	}
	if b2, err := got.MarshalBinary(); err != nil || !bytes.Equal(b, b2) {
		t.Fatalf("re-marshal differs (err %v)", err)
	}
	decayAt := len(b) - 4 - 8 - 8*len(s.Theta)
	for _, c := range []struct {
		name string
		edit func([]byte)
		text string
	}{
		{"decay 1", func(b []byte) { binary.LittleEndian.PutUint64(b[decayAt:], math.Float64bits(1)) }, "decay 1"},
		{"decay 0", func(b []byte) { binary.LittleEndian.PutUint64(b[decayAt:], 0) }, "decay 0"},
		{"NaN average", func(b []byte) { binary.LittleEndian.PutUint64(b[decayAt+8:], math.Float64bits(math.NaN())) }, "average[0] = NaN"},
		{"format 1 with an average", func(b []byte) { b[8] = 1 }, "trailing"},
	} {
		d := bytes.Clone(b)
		c.edit(d)
		if _, err := UnmarshalSnapshot(reseal(d)); !errors.Is(err, ErrCorruptSnapshot) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: err %v, want corrupt with %q", c.name, err, c.text)
		}
	}
	for _, bad := range []*Snapshot{
		func() *Snapshot {
			x := averaged(testSnapshot(t, spec, []int{8}), 0.9)
			x.Average = x.Average[1:]
			return x
		}(),
		averaged(testSnapshot(t, spec, []int{8}), 1),
		func() *Snapshot { x := testSnapshot(t, spec, []int{8}); x.AverageDecay = 0.5; return x }(),
	} {
		if _, err := bad.MarshalBinary(); err == nil {
			t.Errorf("inconsistent average (decay %v, %d values) marshalled", bad.AverageDecay, len(bad.Average))
		}
	}
}

func TestSnapshotIncompatible(t *testing.T) {
	s := testSnapshot(t, Spec{ObsDim: 8, Kind: ActionDiscrete, NumActions: 2}, []int{8})
	err := s.CheckCompatible(Spec{ObsDim: 6, Kind: ActionDiscrete, NumActions: 3}, []int{16})
	if !errors.Is(err, ErrIncompatible) {
		t.Fatalf("err %v, want ErrIncompatible", err)
	}
	for _, want := range []string{"policy spec: obs_dim 8 in store != 6 in config", "num_actions 2 in store != 3 in config", "hidden [8] in store != [16] in config"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err %q lacks %q", err, want)
		}
	}
}

func TestSnapshotMarshalRejectsInvalid(t *testing.T) {
	s := testSnapshot(t, Spec{ObsDim: 4, Kind: ActionDiscrete, NumActions: 2}, []int{8})
	s.Theta = s.Theta[1:]
	if _, err := s.MarshalBinary(); err == nil {
		t.Error("short theta marshalled")
	}
	s = testSnapshot(t, Spec{ObsDim: 4, Kind: ActionDiscrete, NumActions: 2}, []int{8})
	s.Spec.ActionDim = 3
	if _, err := s.MarshalBinary(); err == nil {
		t.Error("spec with both action counts marshalled")
	}
	s.Spec.ActionDim = 0
	s.DP.Noise, s.DP.Horizon = NoiseTree, 8
	if _, err := s.MarshalBinary(); err == nil {
		t.Error("a tree-aggregated config marshalled (format 1 cannot record it)")
	}
	s.DP.Noise, s.DP.Horizon = NoiseIndependent, 0
	s.DP.Mode = ModeUnset
	if _, err := s.MarshalBinary(); err == nil {
		t.Error("invalid DP config marshalled")
	}
	if _, err := NewSnapshot(s.Spec, DefaultControlConfig(), 1, []float64{1}); err == nil {
		t.Error("NewSnapshot accepted a short theta")
	}
}

func TestConfigHash(t *testing.T) {
	a, b := DefaultControlConfig(), DefaultControlConfig()
	if ConfigHash(a) != ConfigHash(b) {
		t.Fatal("equal configs hash differently")
	}
	b.DP.NoiseMultiplier = 3
	if ConfigHash(a) == ConfigHash(b) {
		t.Fatal("z does not change the hash")
	}
	b = DefaultControlConfig()
	b.DP.Noise, b.DP.Horizon = NoiseTree, 1024
	c := DefaultControlConfig()
	c.DP.Noise, c.DP.Horizon = NoiseSqrt, 1024
	if ConfigHash(a) == ConfigHash(b) || ConfigHash(b) == ConfigHash(c) {
		t.Fatal("the noise shape does not change the hash")
	}
}

func FuzzSnapshot(f *testing.F) {
	for _, spec := range []Spec{{ObsDim: 2, Kind: ActionDiscrete, NumActions: 2}, {ObsDim: 1, Kind: ActionContinuous, ActionDim: 1}} {
		b, err := testSnapshot(f, spec, []int{2}).MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
		a, err := averaged(testSnapshot(f, spec, []int{2}), 0.9).MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(a)
	}
	f.Add([]byte("DPRLPOL\x00\x01\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSnapshotBytes(t, data)
		if len(data) >= 14 { // also past the checksum, to reach the field decoding
			checkSnapshotBytes(t, reseal(bytes.Clone(data)))
		}
	})
}

// checkSnapshotBytes asserts that data is rejected with a classified error or
// re-marshals to itself.
func checkSnapshotBytes(t *testing.T, data []byte) {
	s, err := UnmarshalSnapshot(data)
	if err != nil {
		if !errors.Is(err, ErrCorruptSnapshot) && !errors.Is(err, ErrIncompatible) {
			t.Fatalf("unclassified error %v", err)
		}
		return
	}
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatalf("accepted snapshot does not marshal: %v", err)
	}
	if !bytes.Equal(b, data) {
		t.Fatal("accepted snapshot re-marshals differently")
	}
}
