package qnet

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"dprl/ledger"
	"dprl/policy"
)

// randomSnapshot returns a non-private v2 snapshot of algo with random
// parameters (offline/qlearn's TestSnapshotRoundTrip checks that a
// learner's snapshot acts as the learner).
func randomSnapshot(rng *rand.Rand, algo Algo, obsDim, actions int, hidden []int) Snapshot {
	n, err := policy.MLPParams(append(append([]int{obsDim}, hidden...), actions)...)
	if err != nil {
		panic(err)
	}
	s := Snapshot{Format: SnapshotFormat, Algo: algo, ObsDim: obsDim, Actions: actions, Hidden: hidden, Q: make([]float64, n)}
	for i := range s.Q {
		s.Q[i] = rng.NormFloat64()
	}
	if algo == BCQ {
		s.Threshold, s.G = 0.3, make([]float64, n)
		for i := range s.G {
			s.G[i] = rng.NormFloat64()
		}
	}
	return s
}

func marshal(tb testing.TB, s Snapshot) []byte {
	tb.Helper()
	b, err := s.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// FuzzParseSnapshot: any input is either refused with an error or yields
// a policy that acts with the snapshot's networks, never a panic.
func FuzzParseSnapshot(f *testing.F) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, algo := range []Algo{CQL, BCQ} {
		f.Add(marshal(f, randomSnapshot(rng, algo, 2, 2, []int{3})))
	}
	f.Add([]byte(`{"format":"dprl.qlearn.v1","algo":"cql","obs_dim":1,"actions":2,"hidden":[1],"q":[0,0,0,0,0,0,0],"private":false}`))
	f.Add([]byte(`{"format":"dprl.qlearn.v2","algo":"cql","obs_dim":1,"actions":2,"hidden":[1],"q":[0,0,0,0,0,0],"private":true,"epsilon":10,"delta":1e-5,"unit":"expert","ledger_seq":3}`))
	// Size fields at their extremes: refused before anything is allocated.
	f.Add([]byte(`{"format":"dprl.qlearn.v2","algo":"cql","obs_dim":1,"actions":1099511627776,"hidden":[1],"q":[0],"private":false}`))
	f.Add([]byte(`{"format":"dprl.qlearn.v2","algo":"bcq","obs_dim":9223372036854775807,"actions":2,"hidden":[2147483647,2147483647],"q":[],"private":false}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, l, err := ParseSnapshot(b)
		if err != nil {
			return
		}
		if p, ok := s.Provenance(); ok {
			if err := p.Validate(); err != nil {
				t.Fatalf("parsed a snapshot whose provenance is invalid: %v", err)
			}
		} else if s.Format != SnapshotFormatV1 {
			t.Fatalf("format %q without provenance", s.Format)
		}
		if a := l.Act(make([]float64, s.ObsDim)); a < 0 || a >= s.Actions {
			t.Fatalf("action %d of %d", a, s.Actions)
		}
	})
}

// TestSnapshotProvenance: a v2 snapshot carries a validated provenance
// (private: finite epsilon > 0, delta in (0, 1), an offline unit, a
// ledger entry; non-private: none of these); a v1 snapshot is read with no
// provenance, and one that names a ledger entry is refused.
func TestSnapshotProvenance(t *testing.T) {
	const head = `{"format":%q,"algo":"cql","obs_dim":1,"actions":2,"hidden":[1],"q":[0,0,0,0,0,0],%s}`
	for _, tc := range []struct {
		name, format, prov string
		ok, known          bool
		want               ledger.Provenance
	}{
		{"private", SnapshotFormat, `"private":true,"epsilon":10,"delta":1e-5,"unit":"expert","ledger_seq":3`, true, true,
			ledger.Provenance{Private: true, Epsilon: 10, Delta: 1e-5, Unit: ledger.UnitExpert, LedgerSeq: 3}},
		{"non-private", SnapshotFormat, `"private":false`, true, true, ledger.Provenance{}},
		{"v1 private", SnapshotFormatV1, `"private":true,"epsilon":10,"delta":1e-5,"unit":"expert"`, true, false, ledger.Provenance{}},
		{"v1 non-private", SnapshotFormatV1, `"private":false`, true, false, ledger.Provenance{}},
		{"v1 with an entry", SnapshotFormatV1, `"private":true,"epsilon":10,"delta":1e-5,"unit":"expert","ledger_seq":3`, false, false, ledger.Provenance{}},
		{"epsilon 0", SnapshotFormat, `"private":true,"epsilon":0,"delta":1e-5,"unit":"expert","ledger_seq":3`, false, false, ledger.Provenance{}},
		{"epsilon negative", SnapshotFormat, `"private":true,"epsilon":-1,"delta":1e-5,"unit":"expert","ledger_seq":3`, false, false, ledger.Provenance{}},
		{"epsilon overflows", SnapshotFormat, `"private":true,"epsilon":1e400,"delta":1e-5,"unit":"expert","ledger_seq":3`, false, false, ledger.Provenance{}},
		{"delta 0", SnapshotFormat, `"private":true,"epsilon":10,"unit":"expert","ledger_seq":3`, false, false, ledger.Provenance{}},
		{"delta 1", SnapshotFormat, `"private":true,"epsilon":10,"delta":1,"unit":"expert","ledger_seq":3`, false, false, ledger.Provenance{}},
		{"unknown unit", SnapshotFormat, `"private":true,"epsilon":10,"delta":1e-5,"unit":"household","ledger_seq":3`, false, false, ledger.Provenance{}},
		{"online unit", SnapshotFormat, `"private":true,"epsilon":10,"delta":1e-5,"unit":"session","ledger_seq":3`, false, false, ledger.Provenance{}},
		{"no entry", SnapshotFormat, `"private":true,"epsilon":10,"delta":1e-5,"unit":"expert"`, false, false, ledger.Provenance{}},
		{"non-private with a guarantee", SnapshotFormat, `"private":false,"epsilon":10`, false, false, ledger.Provenance{}},
		{"non-private with an entry", SnapshotFormat, `"private":false,"ledger_seq":2`, false, false, ledger.Provenance{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, err := ParseSnapshot(fmt.Appendf(nil, head, tc.format, tc.prov))
			if (err == nil) != tc.ok {
				t.Fatalf("parse: %v, want ok %v", err, tc.ok)
			}
			if err != nil {
				return
			}
			p, known := s.Provenance()
			if known != tc.known || p != tc.want {
				t.Errorf("provenance %+v (known %v), want %+v (known %v)", p, known, tc.want, tc.known)
			}
		})
	}
}

// TestSnapshotSizesBeforeAllocating: a small file whose sizes claim a huge
// network (2^40 actions, a 10^9-long observation, two 16384-wide layers)
// is refused without allocating for the sizes it claims (each of these
// ended in "fatal error: out of memory"); a repeated key is refused; and
// weights whose forward pass overflows are refused at load.
func TestSnapshotSizesBeforeAllocating(t *testing.T) {
	const tail = `,"q":[0,0,0,0,0,0],"private":false}`
	for _, b := range []string{
		`{"format":"dprl.qlearn.v2","algo":"cql","obs_dim":1,"actions":1099511627776,"hidden":[1]` + tail,
		`{"format":"dprl.qlearn.v2","algo":"cql","obs_dim":1000000000,"actions":2,"hidden":[1]` + tail,
		`{"format":"dprl.qlearn.v2","algo":"cql","obs_dim":1,"actions":2,"hidden":[16384,16384]` + tail,
		`{"format":"dprl.qlearn.v2","algo":"bcq","obs_dim":1,"actions":2,"hidden":[1],"g":[]` + tail,
		`{"format":"dprl.qlearn.v2","algo":"cql","obs_dim":1,"actions":2,"hidden":[1],"hidden":[1]` + tail,
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _, err := ParseSnapshot([]byte(b))
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("%.80s: accepted", b)
		}
		if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
			t.Errorf("%.80s: allocated %d bytes before refusing it", b, d)
		}
	}
	ok := `{"format":"dprl.qlearn.v2","algo":"cql","obs_dim":1,"actions":2,"hidden":[1],"q":[1,0,1,0,1,0],"private":false}`
	if _, _, err := ParseSnapshot([]byte(ok)); err != nil {
		t.Fatalf("a valid snapshot: %v", err)
	}
	huge := strings.Replace(ok, `"q":[1,0,1,0,1,0]`, `"q":[1e308,0,1e308,0,1e308,0]`, 1)
	if _, _, err := ParseSnapshot([]byte(huge)); err == nil || !strings.Contains(err.Error(), "not finite") {
		t.Errorf("weights of 1e308: %v, want refused as not finite", err)
	}
}

// TestSnapshotNetworkSettings: a snapshot whose sizes match its parameters
// is still refused for an unknown algorithm, a hidden width above
// MaxWidth or a BCQ threshold outside (0, 1), with the messages the
// learner's configuration check gave when offline/qlearn decoded
// snapshots.
func TestSnapshotNetworkSettings(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, c := range []struct {
		name string
		edit func(*Snapshot)
		want string
	}{
		{"unknown algorithm", func(s *Snapshot) { s.Algo = "dqn" }, `qlearn: snapshot: qlearn: unknown algorithm "dqn" (want cql or bcq)`},
		{"wide layer", func(s *Snapshot) { *s = randomSnapshot(rng, CQL, 1, 2, []int{MaxWidth + 1}) }, "qlearn: snapshot: qlearn: hidden width 16385, want 1..16384"},
		{"BCQ threshold 0", func(s *Snapshot) { *s = randomSnapshot(rng, BCQ, 1, 2, []int{2}); s.Threshold = 0 }, "qlearn: snapshot: qlearn: threshold 0, want (0, 1)"},
		{"BCQ threshold 1", func(s *Snapshot) { *s = randomSnapshot(rng, BCQ, 1, 2, []int{2}); s.Threshold = 1 }, "qlearn: snapshot: qlearn: threshold 1, want (0, 1)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := randomSnapshot(rng, CQL, 1, 2, []int{2})
			c.edit(&s)
			if _, _, err := ParseSnapshot(marshal(t, s)); err == nil || err.Error() != c.want {
				t.Errorf("ParseSnapshot: %v, want %q", err, c.want)
			}
		})
	}
	s := randomSnapshot(rng, BCQ, 1, 2, []int{2})
	if _, p, err := ParseSnapshot(marshal(t, s)); err != nil || p.Act([]float64{0.5}) < 0 {
		t.Errorf("a valid BCQ snapshot: %v", err)
	}
}
