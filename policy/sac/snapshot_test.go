package sac

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"dprl/ledger"
)

// testProvenance is a private run's provenance.
var testProvenance = ledger.Provenance{Private: true, Epsilon: 5, Delta: 1e-5, Unit: ledger.UnitTrajectory, LedgerSeq: 4}

// marshal is MarshalActor, failing the test on an error.
func marshal(t testing.TB, a *Agent, p ledger.Provenance) []byte {
	t.Helper()
	b, err := a.MarshalActor(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// resum replaces b's checksum by that of its body.
func resum(b []byte) []byte {
	body := b[:len(b)-4]
	return binary.LittleEndian.AppendUint32(append([]byte(nil), body...), crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
}

// legacyV1 is a version 2 snapshot as version 1 wrote it: without the
// provenance block.
func legacyV1(b []byte) []byte {
	h := len(snapshotMagic) + 1
	v1 := append(append([]byte(nil), b[:h]...), b[h+ledger.ProvenanceBytes:]...)
	v1[len(snapshotMagic)] = snapshotV1
	return resum(v1)
}

// TestActorProvenance: a snapshot carries its provenance, validated when
// written and when read (a private one needs a finite epsilon > 0, a
// delta in (0, 1), an offline unit and a ledger entry; a non-private one
// none of these); a version 1 snapshot is read without provenance.
func TestActorProvenance(t *testing.T) {
	a := smallAgent(t, 4)
	for _, p := range []ledger.Provenance{testProvenance, {}} {
		act, err := LoadActor(marshal(t, a, p))
		if got, ok := act.Provenance(); err != nil || !ok || got != p {
			t.Errorf("provenance %+v read back as %+v (%v, %v)", p, got, ok, err)
		}
	}
	act, err := LoadActor(legacyV1(marshal(t, a, testProvenance)))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := act.Provenance(); ok {
		t.Errorf("a version 1 snapshot has provenance %+v", got)
	}
	h := len(snapshotMagic) + 1
	for name, edit := range map[string]func(p *ledger.Provenance, b []byte){
		"epsilon 0":       func(p *ledger.Provenance, b []byte) { p.Epsilon = 0 },
		"epsilon NaN":     func(p *ledger.Provenance, b []byte) { p.Epsilon = math.NaN() },
		"epsilon Inf":     func(p *ledger.Provenance, b []byte) { p.Epsilon = math.Inf(1) },
		"delta 1":         func(p *ledger.Provenance, b []byte) { p.Delta = 1 },
		"unknown unit":    func(p *ledger.Provenance, b []byte) { p.Unit = "household" },
		"online unit":     func(p *ledger.Provenance, b []byte) { p.Unit = ledger.UnitSession },
		"no entry":        func(p *ledger.Provenance, b []byte) { p.LedgerSeq = 0 },
		"non-private eps": func(p *ledger.Provenance, b []byte) { p.Private = false },
		"flag 2":          func(p *ledger.Provenance, b []byte) { b[h] = 2 },
		"unit not padded": func(p *ledger.Provenance, b []byte) { b[h+17+len(p.Unit)+1] = 'x' },
	} {
		p := testProvenance
		edit(&p, make([]byte, h+ledger.ProvenanceBytes))
		if _, err := a.MarshalActor(p); err == nil && p != testProvenance {
			t.Errorf("%s: MarshalActor wrote provenance %+v", name, p)
		}
		// The same provenance written over a valid snapshot's, with a
		// valid checksum, is refused by LoadActor.
		b := marshal(t, a, testProvenance)
		binary.LittleEndian.PutUint64(b[h+1:], math.Float64bits(p.Epsilon))
		binary.LittleEndian.PutUint64(b[h+9:], math.Float64bits(p.Delta))
		copy(b[h+17:h+17+16], make([]byte, 16))
		copy(b[h+17:], p.Unit)
		binary.LittleEndian.PutUint64(b[h+17+16:], p.LedgerSeq)
		if !p.Private {
			b[h] = 0
		}
		edit(&p, b)
		if _, err := LoadActor(resum(b)); !errors.Is(err, ErrSnapshot) {
			t.Errorf("%s: loaded (%v)", name, err)
		}
	}
}

func TestActorSnapshotRoundTrip(t *testing.T) {
	a := smallAgent(t, 4)
	b := marshal(t, a, testProvenance)
	act, err := LoadActor(b)
	if err != nil {
		t.Fatal(err)
	}
	obs := []float64{0.1, -0.4, 0.9}
	want, got := make([]float64, 2), make([]float64, 2)
	a.ActDeterministic(want, obs)
	act.ActDeterministic(got, obs)
	if want[0] != got[0] || want[1] != got[1] {
		t.Fatalf("loaded actor acts %v, the agent %v", got, want)
	}
	lpA := a.Act(want, rand.New(rand.NewPCG(1, 1)), obs) - a.LogScale()
	lpB := act.Act(got, rand.New(rand.NewPCG(1, 1)), obs)
	if want[0] != got[0] || want[1] != got[1] || lpA-lpB > 1e-12 || lpB-lpA > 1e-12 {
		t.Fatalf("sampled %v (%v), agent %v (%v)", got, lpB, want, lpA)
	}
	// Every corruption is refused with ErrSnapshot.
	for i := range b {
		c := append([]byte(nil), b...)
		c[i] ^= 0x10
		if _, err := LoadActor(c); !errors.Is(err, ErrSnapshot) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	for _, n := range []int{0, 5, len(b) - 1} {
		if _, err := LoadActor(b[:n]); !errors.Is(err, ErrSnapshot) {
			t.Fatalf("truncated to %d bytes: %v", n, err)
		}
	}
}

func FuzzLoadActor(f *testing.F) {
	f.Add(marshal(f, smallAgent(f, 4), testProvenance))
	f.Add(marshal(f, smallAgent(f, 4), ledger.Provenance{}))
	f.Add(legacyV1(marshal(f, smallAgent(f, 4), ledger.Provenance{})))
	f.Add([]byte("DPRLSACA\x01"))
	f.Add([]byte("DPRLSACA\x02"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := LoadActor(data)
		if err != nil {
			if !errors.Is(err, ErrSnapshot) {
				t.Fatalf("error %v does not wrap ErrSnapshot", err)
			}
			return
		}
		dst := make([]float64, a.ActDim())
		a.ActDeterministic(dst, make([]float64, a.ObsDim()))
		if p, ok := a.Provenance(); ok {
			if err := p.Validate(); err != nil {
				t.Fatalf("loaded an actor whose provenance is invalid: %v", err)
			}
		} else if data[len(snapshotMagic)] != snapshotV1 {
			t.Fatalf("a version %d snapshot without provenance", data[len(snapshotMagic)])
		}
	})
}

// TestActorClone checks that a clone acts as the original, on workspaces
// of its own (so that two goroutines may act at once), allocating nothing,
// and that Box is the box the agent was created with.
func TestActorClone(t *testing.T) {
	act, err := LoadActor(marshal(t, smallAgent(t, 4), testProvenance))
	if err != nil {
		t.Fatal(err)
	}
	c := act.Clone()
	if c.net == act.net || &c.out[0] == &act.out[0] {
		t.Fatal("the clone shares the actor's workspaces")
	}
	obs := []float64{0.3, 0.2, -0.7}
	want, got := make([]float64, 2), make([]float64, 2)
	act.ActDeterministic(want, obs)
	c.ActDeterministic(got, obs)
	if want[0] != got[0] || want[1] != got[1] {
		t.Fatalf("clone acts %v, the actor %v", got, want)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	if n := testing.AllocsPerRun(100, func() { c.Act(got, rng, obs) }); n != 0 {
		t.Fatalf("Act allocates %v times", n)
	}
	// LogDensity gives back the log-density Act returned.
	for i := range 20 {
		obs[0] = float64(i) / 10
		lp := c.Act(got, rng, obs)
		if d := act.LogDensity(obs, got); math.Abs(d-lp) > 1e-9*max(1, math.Abs(lp)) {
			t.Fatalf("LogDensity %v, Act returned %v for %v", d, lp, got)
		}
	}
	if d := act.LogDensity(obs, []float64{2, 0.5}); !math.IsInf(d, -1) {
		t.Fatalf("an action on the box's boundary: log-density %v, want -Inf", d)
	}
	low, high := act.Box()
	if low[0] != -2 || low[1] != 0 || high[0] != 2 || high[1] != 1 {
		t.Fatalf("box [%v, %v], want [-2 0] to [2 1]", low, high)
	}
}

// TestLoadActorRefusesOverflow: weights that are finite but so large that
// the network's output overflows (or passes 1e100) are refused at load;
// before, the actor loaded and every act answered internal.
func TestLoadActorRefusesOverflow(t *testing.T) {
	b := marshal(t, smallAgent(t, 4), testProvenance)
	if _, err := LoadActor(b); err != nil {
		t.Fatal(err)
	}
	for _, v := range []float64{1e308, 1e150} {
		c := append([]byte(nil), b...)
		end := len(c) - 4 // the parameters end where the checksum starts
		for i := end - 8*16; i < end; i += 8 {
			binary.LittleEndian.PutUint64(c[i:], math.Float64bits(v))
		}
		if _, err := LoadActor(resum(c)); !errors.Is(err, ErrSnapshot) || !strings.Contains(err.Error(), "parameters too large") {
			t.Errorf("the last 16 parameters %g: %v, want refused", v, err)
		}
	}
}
