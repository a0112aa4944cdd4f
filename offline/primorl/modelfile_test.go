package primorl

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"dprl/ledger"
)

// testModel returns a small Pendulum ensemble with random parameters.
func testModel(t testing.TB) (*Ensemble, []float64) {
	t.Helper()
	cfg := DefaultModelConfig()
	cfg.Ensemble, cfg.Hidden = 2, []int{5, 3}
	e, err := NewEnsemble(cfg, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	params := make([]float64, e.NumParams())
	e.Init(params, rand.New(rand.NewPCG(1, 2)))
	return e, params
}

// reCRC recomputes a model file's checksum after an edit.
func reCRC(b []byte) []byte {
	body := b[:len(b)-4]
	return binary.LittleEndian.AppendUint32(slices.Clone(body), crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
}

// TestModelFile: a model file reads back to the same environment,
// architecture, parameters (to the bit) and provenance, and predicts as
// the ensemble it was written from; a damaged or inconsistent file is
// refused with ErrModelFile, also when its checksum was made to match.
func TestModelFile(t *testing.T) {
	e, params := testModel(t)
	prov := ledger.Provenance{Private: true, Epsilon: 5, Delta: 1e-5, Unit: ledger.UnitTrajectory, LedgerSeq: 4}
	b, err := MarshalModel("pendulum", e, params, prov)
	if err != nil {
		t.Fatal(err)
	}
	m, err := LoadModel(b)
	if err != nil {
		t.Fatal(err)
	}
	if m.Env != "pendulum" || m.Provenance != prov || !slices.Equal(m.Params, params) || m.Ensemble.Models() != 2 || !slices.Equal(m.Ensemble.cfg.Hidden, []int{5, 3}) {
		t.Fatalf("read back %+v", m)
	}
	x := []float64{0.1, -0.2, 0.3, 0.4}
	for i := range 2 {
		m1, l1, m2, l2 := make([]float64, 4), make([]float64, 4), make([]float64, 4), make([]float64, 4)
		e.Predict(params, i, x, 1, m1, l1)
		m.Ensemble.Predict(m.Params, i, x, 1, m2, l2)
		if !slices.Equal(m1, m2) || !slices.Equal(l1, l2) {
			t.Fatalf("model %d predicts %v %v, the original %v %v", i, m2, l2, m1, l1)
		}
	}
	h := len(modelMagic) + 1 + ledger.ProvenanceBytes // the environment's length byte
	params0 := len(b) - 4 - 8*len(params)
	for name, edit := range map[string]func([]byte) []byte{
		"truncated":    func(b []byte) []byte { return b[:len(b)-9] },
		"magic":        func(b []byte) []byte { b[0] = 'X'; return b },
		"bit flipped":  func(b []byte) []byte { b[len(b)/2] ^= 1; return b },
		"version":      func(b []byte) []byte { b[len(modelMagic)] = 9; return reCRC(b) },
		"provenance":   func(b []byte) []byte { b[len(modelMagic)+1] = 3; return reCRC(b) },
		"unknown env":  func(b []byte) []byte { copy(b[h+1:], "pendulxm"); return reCRC(b) },
		"env too long": func(b []byte) []byte { b[h] = 255; return reCRC(b) },
		"NaN parameter": func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[params0:], math.Float64bits(math.NaN()))
			return reCRC(b)
		},
		"trailing byte": func(b []byte) []byte { return reCRC(append(b[:len(b)-4:len(b)-4], 0, 0, 0, 0, 0)) },
		"no models":     func(b []byte) []byte { binary.LittleEndian.PutUint32(b[h+1+len("pendulum"):], 0); return reCRC(b) },
	} {
		if _, err := LoadModel(edit(slices.Clone(b))); !errors.Is(err, ErrModelFile) {
			t.Errorf("%s: %v, want ErrModelFile", name, err)
		}
	}
	// Another environment's dimensions: a cart-pole ensemble (5 + 1 inputs)
	// filed as Pendulum's.
	cfg := DefaultModelConfig()
	cp, err := NewEnsemble(cfg, 6, 6)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := MarshalModel("pendulum", cp, make([]float64, cp.NumParams()), ledger.Provenance{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadModel(cb); !errors.Is(err, ErrModelFile) {
		t.Errorf("a 6-input model filed as pendulum: %v", err)
	}
	if _, err := MarshalModel("pendulum", e, params[1:], prov); err == nil {
		t.Error("MarshalModel wrote a parameter vector of the wrong length")
	}
	if _, err := MarshalModel("pendulum", e, params, ledger.Provenance{Private: true}); err == nil {
		t.Error("MarshalModel wrote an invalid provenance")
	}
}

// FuzzLoadModel: LoadModel never panics, and what it accepts writes back
// to the same bytes.
func FuzzLoadModel(f *testing.F) {
	e, params := testModel(f)
	b, err := MarshalModel("pendulum", e, params, ledger.Provenance{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:40])
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := LoadModel(data)
		if err != nil {
			return
		}
		again, err := MarshalModel(m.Env, m.Ensemble, m.Params, m.Provenance)
		if err != nil || !slices.Equal(again, data) {
			t.Fatalf("accepted %d bytes that write back as %d (%v)", len(data), len(again), err)
		}
	})
}
