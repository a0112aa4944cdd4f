package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dprl/ledger/accountant"
	"dprl/noise"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func openTemp(t *testing.T) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

// releaseEntry is the entry of one DPPG update with multiplier z.
func releaseEntry(t *testing.T, z float64, k int, seeded bool) Entry {
	t.Helper()
	g, err := accountant.Analytic{}.Epsilon(1e-5, accountant.Gaussian(z))
	if err != nil {
		t.Fatal(err)
	}
	return Entry{
		Unit: UnitSession, Mechanism: "dppg", Events: []accountant.Event{accountant.Gaussian(z)},
		Method: accountant.MethodAnalytic, Epsilon: g.Epsilon, Delta: 1e-5, Z: z, S: 0.05, K: k,
		Participants: k, Seeded: seeded,
	}
}

func doRelease(t *testing.T, s *Store, version uint64, z float64, users ...string) Entry {
	t.Helper()
	keys := make([]UserKey, len(users))
	for i, u := range users {
		keys[i] = s.User(u)
	}
	e, err := s.Release(Release{Version: version, Snapshot: []byte(fmt.Sprintf("policy-%d", version)), Entry: releaseEntry(t, z, len(users), true), Users: keys})
	if err != nil {
		t.Fatalf("release %d: %v", version, err)
	}
	return e
}

func TestReleaseAndVerify(t *testing.T) {
	s, dir := openTemp(t)
	st, err := os.Stat(filepath.Join(dir, userKeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("user key file: %v, mode %v", err, st.Mode().Perm())
	}
	e1 := doRelease(t, s, 1, 1.0, "alice", "bob")
	e2 := doRelease(t, s, 2, 1.0, "alice", "carol")
	if e1.Seq != 1 || e2.Seq != 2 || e2.PrevHash != e1.Hash || e1.PrevHash != "" {
		t.Fatalf("chain: %+v %+v", e1, e2)
	}
	h, _ := s.Head()
	if h.Version != 2 || h.Seq != 2 || h.Hash != e2.Hash {
		t.Errorf("head %+v", h)
	}
	snap, err := s.Snapshot(2)
	if err != nil || string(snap) != "policy-2" {
		t.Errorf("snapshot: %q %v", snap, err)
	}
	if _, err := s.Snapshot(3); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing snapshot: %v", err)
	}
	alice, _ := s.UserState(s.User("alice"))
	if alice.Updates != 2 || alice.SumInvZ2 != 2 || alice.LastVersion != 2 {
		t.Errorf("alice %+v", alice)
	}
	// Two updates at z = 1 compose exactly into one at z = 1/sqrt(2).
	got, _ := alice.Epsilon(1e-5)
	want, _ := accountant.GaussianEpsilon(1/math.Sqrt2, 1e-5)
	if math.Abs(got-want) > 1e-12*want {
		t.Errorf("alice epsilon %v, want %v", got, want)
	}
	if next, _ := alice.EpsilonAfter(1, 1e-5); next <= got {
		t.Errorf("EpsilonAfter %v <= %v", next, got)
	}
	r, err := s.Verify()
	if err != nil || !r.OK() || r.Entries != 2 || r.Users != 3 {
		t.Errorf("verify: %+v %v", r, err)
	}
	// The raw user id is never stored.
	if raw := grepDir(t, dir, "alice"); raw != "" {
		t.Errorf("raw user id found in %s", raw)
	}
}

// grepDir returns a file under dir containing needle, or "".
func grepDir(t *testing.T, dir, needle string) string {
	var hit string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), needle) {
			hit = p
		}
		return nil
	})
	return hit
}

func TestReleaseRejectsBadInput(t *testing.T) {
	s, _ := openTemp(t)
	u := s.User("u")
	cases := map[string]Release{
		"version skip":   {Version: 2, Snapshot: []byte("x"), Entry: releaseEntry(t, 1, 1, false)},
		"empty snapshot": {Version: 1, Entry: releaseEntry(t, 1, 1, false)},
		"duplicate user": {Version: 1, Snapshot: []byte("x"), Entry: releaseEntry(t, 1, 2, false), Users: []UserKey{u, u}},
		"wrong epsilon": {Version: 1, Snapshot: []byte("x"), Entry: func() Entry {
			e := releaseEntry(t, 1, 1, false)
			e.Events = []accountant.Event{{Q: 0.5, Z: 1, Steps: 1}}
			e.Method = accountant.MethodRDP
			return e
		}()},
		"no unit": {Version: 1, Snapshot: []byte("x"), Entry: func() Entry { e := releaseEntry(t, 1, 1, false); e.Unit = ""; return e }()},
	}
	for name, r := range cases {
		if _, err := s.Release(r); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", name, err)
		}
	}
	if h, _ := s.Head(); h.Seq != 0 {
		t.Errorf("a rejected release wrote something: %+v", h)
	}
}

func TestSpec(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.InitSpec([]byte(`{"obs_dim":4}`), nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.InitSpec([]byte(`{"obs_dim":4}`), nil); err != nil {
		t.Errorf("same spec refused: %v", err)
	}
	err = s.InitSpec([]byte(`{"obs_dim":6}`), nil)
	if !errors.Is(err, ErrIncompatibleSpec) || !strings.Contains(err.Error(), `"obs_dim":4`) {
		t.Errorf("incompatible spec: %v", err)
	}
}

func TestTamperingIsDetected(t *testing.T) {
	cases := map[string]func(s *Store){
		"epsilon edited": func(s *Store) {
			e := mustEntry(t, s, 1)
			e.Epsilon *= 0.5
			e.Hash, _ = e.computeHash() // even with a consistent hash
			mustSet(t, s, entryKey(1), e)
		},
		"hash edited": func(s *Store) {
			e := mustEntry(t, s, 2)
			e.Participants = 99
			mustSet(t, s, entryKey(2), e)
		},
		"entry deleted": func(s *Store) { s.db.Delete(entryKey(2), nil) },
		"snapshot lost": func(s *Store) { s.db.Delete(snapKey(1), nil) },
		"user counter": func(s *Store) {
			mustSet(t, s, userKey(s.User("alice")), UserState{Updates: 1, SumInvZ2: 1, LastVersion: 1})
		},
		"head moved": func(s *Store) { mustSet(t, s, keyHead, Head{Seq: 2, Hash: "x", Version: 2}) },
	}
	for name, tamper := range cases {
		t.Run(name, func(t *testing.T) {
			s, _ := openTemp(t)
			doRelease(t, s, 1, 1, "alice")
			doRelease(t, s, 2, 2, "alice", "bob")
			doRelease(t, s, 3, 2, "bob")
			tamper(s)
			r, err := s.Verify()
			if err != nil {
				t.Fatal(err)
			}
			if r.OK() {
				t.Errorf("tampering not detected: %+v", r)
			}
		})
	}
}

func mustEntry(t *testing.T, s *Store, seq uint64) Entry {
	t.Helper()
	var e Entry
	if ok, err := s.getJSON(entryKey(seq), &e); !ok || err != nil {
		t.Fatalf("entry %d: %v", seq, err)
	}
	return e
}

func mustSet(t *testing.T, s *Store, key []byte, v any) {
	t.Helper()
	b := s.db.NewBatch()
	if err := setJSON(b, key, v); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(nil); err != nil {
		t.Fatal(err)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(t.TempDir(), Options{MustExist: true}); !errors.Is(err, ErrNotFound) {
		t.Errorf("MustExist on empty dir: %v", err)
	}
	// Missing key for an existing store.
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	doRelease(t, s, 1, 1, "a")
	s.Close()
	os.Remove(filepath.Join(dir, userKeyFile))
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("missing key: %v", err)
	}
	// A key without its store: the store was lost.
	os.WriteFile(filepath.Join(dir, userKeyFile), make([]byte, 32), 0o600)
	os.RemoveAll(filepath.Join(dir, pebbleDir))
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("lost store: %v", err)
	}
	// Damaged store files.
	dir = t.TempDir()
	s, _ = Open(dir, Options{})
	s.Close()
	matches, _ := filepath.Glob(filepath.Join(dir, pebbleDir, "MANIFEST-*"))
	if len(matches) == 0 {
		t.Fatal("no manifest")
	}
	for _, m := range matches {
		os.WriteFile(m, []byte("garbage garbage garbage garbage"), 0o600)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("corrupt manifest: %v", err)
	}
	// A world-readable key is refused.
	dir = t.TempDir()
	s, _ = Open(dir, Options{})
	s.Close()
	os.Chmod(filepath.Join(dir, userKeyFile), 0o644)
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("readable key: %v", err)
	}
}

// TestCrashConsistency crashes a store at random points (keeping a random
// share of unsynced data, as pebble's own crash tests do) and checks that every
// acknowledged release survives and the ledger verifies.
func TestCrashConsistency(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for trial := 0; trial < 8; trial++ {
		fs := vfs.NewCrashableMem()
		s, err := Open("/data", Options{FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		n := 1 + rng.IntN(12)
		for v := 1; v <= n; v++ {
			users := []string{fmt.Sprintf("u%d", rng.IntN(5)), fmt.Sprintf("w%d", v)}
			doRelease(t, s, uint64(v), 1+rng.Float64(), users...)
		}
		crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rand.New(rand.NewPCG(rng.Uint64(), 2))})
		s.Close()
		s2, err := Open("/data", Options{FS: crashed})
		if err != nil {
			t.Fatalf("trial %d: reopen: %v", trial, err)
		}
		h, _ := s2.Head()
		if h.Version != uint64(n) {
			t.Errorf("trial %d: head version %d after %d acknowledged releases", trial, h.Version, n)
		}
		r, err := s2.Verify()
		if err != nil || !r.OK() {
			t.Errorf("trial %d: verify %+v %v", trial, r, err)
		}
		s2.Close()
	}
}

func FuzzDecodeEntry(f *testing.F) {
	f.Add([]byte(`{"seq":1,"time":"2026-01-01T00:00:00Z","kind":"policy_release","unit":"session","mechanism":"dppg","events":[{"q":1,"z":1,"steps":1}],"method":"analytic","epsilon":4.3,"delta":1e-5,"participants":8,"seeded":false,"prev_hash":"","hash":"x"}`))
	f.Add([]byte(`{"seq":-1}`))
	f.Add([]byte(`{"users":["zz"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var e Entry
		if err := decodeStrict(data, &e); err != nil {
			return
		}
		// A decoded entry can always be hashed and re-checked without panic.
		_, _ = e.computeHash()
		if len(e.Events) < 4 {
			_, _ = e.recompute()
		}
	})
}

// TestProvenance: Validate accepts a private provenance with a finite
// epsilon > 0, a delta in (0, 1), an offline unit and a ledger entry, and
// a non-private one with none of these; String rounds the epsilon up.
func TestProvenance(t *testing.T) {
	ok := Provenance{Private: true, Epsilon: 4.3771, Delta: 1e-5, Unit: UnitTrajectory, LedgerSeq: 7}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := ok.String(), "(epsilon 4.378, delta 1e-05)-DP per trajectory (ledger entry 7)"; got != want {
		t.Errorf("String %q, want %q", got, want)
	}
	if err := (Provenance{}).Validate(); err != nil || (Provenance{}).String() != "NOT private" {
		t.Errorf("non-private: %v, %q", err, Provenance{}.String())
	}
	for name, p := range map[string]Provenance{
		"epsilon 0":   {Private: true, Delta: 1e-5, Unit: UnitExpert, LedgerSeq: 1},
		"epsilon Inf": {Private: true, Epsilon: math.Inf(1), Delta: 1e-5, Unit: UnitExpert, LedgerSeq: 1},
		"epsilon NaN": {Private: true, Epsilon: math.NaN(), Delta: 1e-5, Unit: UnitExpert, LedgerSeq: 1},
		"delta 0":     {Private: true, Epsilon: 1, Unit: UnitExpert, LedgerSeq: 1},
		"delta 1":     {Private: true, Epsilon: 1, Delta: 1, Unit: UnitExpert, LedgerSeq: 1},
		"unit":        {Private: true, Epsilon: 1, Delta: 1e-5, Unit: "household", LedgerSeq: 1},
		"online unit": {Private: true, Epsilon: 1, Delta: 1e-5, Unit: UnitSession, LedgerSeq: 1},
		"no entry":    {Private: true, Epsilon: 1, Delta: 1e-5, Unit: UnitExpert},
		"non-private": {Epsilon: 1},
	} {
		if err := p.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

// TestSamplerRecorded: an entry names the exact sampler of its noise; one
// naming a sampler that is not exact is refused, and an entry without the
// field (written before it was recorded) keeps its hash.
func TestSamplerRecorded(t *testing.T) {
	s, _ := openTemp(t)
	e := releaseEntry(t, 1, 1, true)
	e.Sampler = noise.SamplerGaussianTable
	got, err := s.Release(Release{Version: 1, Snapshot: []byte("p1"), Entry: e, Users: []UserKey{s.User("a")}})
	if err != nil || got.Sampler != noise.SamplerGaussianTable {
		t.Fatalf("release: %v, sampler %q", err, got.Sampler)
	}
	bad := releaseEntry(t, 1, 1, true)
	bad.Sampler = "float64-normal"
	if _, err := s.Release(Release{Version: 2, Snapshot: []byte("p2"), Entry: bad, Users: []UserKey{s.User("b")}}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "not an exact sampler") {
		t.Errorf("an inexact sampler: %v", err)
	}
	r, err := s.Verify()
	if err != nil || !r.OK() {
		t.Fatalf("verify %+v %v", r, err)
	}
	// The field is omitted when empty: an older entry's JSON, and hash,
	// are unchanged.
	old := releaseEntry(t, 1, 1, true)
	b, err := json.Marshal(old)
	if err != nil || strings.Contains(string(b), "sampler") {
		t.Errorf("an entry without a sampler encodes %s (%v)", b, err)
	}
}
