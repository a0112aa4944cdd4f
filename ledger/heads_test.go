package ledger

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"dprl/internal/testutil"
)

// headsRecords returns the intact commit records of dir's head file.
func headsRecords(t *testing.T, fs vfs.FS, dir string) ([]headRec, headsInfo) {
	t.Helper()
	var recs []headRec
	hi, err := scanHeads(fs, filepath.Join(dir, headsFile), func(h headRec) error {
		recs = append(recs, h)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return recs, hi
}

// TestHeadFileRecordsEveryCommit checks that each head-moving write
// (release, offline charge, cap change, derived files) appends its head.
func TestHeadFileRecordsEveryCommit(t *testing.T) {
	s, dir := openTemp(t)
	doRelease(t, s, 1, 1, "a")
	ch, err := s.ChargeOffline(OfflineRun{File: "F", Records: recs("f", 3), Entry: gpopeRun(t), Cap: Cap{Epsilon: 100, Delta: 1e-5}, CapGiven: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetCap("F", UnitTrajectory, Cap{Epsilon: 50, Delta: 1e-5}, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RegisterDerived(ch.Entry.Seq, []DerivedFile{{ID: "D1", Records: recs("d1", 2), Note: "n"}, {ID: "D2", Records: recs("d2", 2), Note: "n"}}); err != nil {
		t.Fatal(err)
	}
	doRelease(t, s, 2, 1, "a", "b")
	got, hi := headsRecords(t, vfs.Default, dir)
	var seqs []uint64
	for _, r := range got {
		seqs = append(seqs, r.Seq)
	}
	// One record per commit: the two derived files are one commit.
	if fmt.Sprint(seqs) != "[1 2 3 5 6]" || hi.torn != 0 {
		t.Fatalf("head records %v (torn %d)", seqs, hi.torn)
	}
	h, _ := s.Head()
	if last := got[len(got)-1]; last.hash() != h.Hash || last.Version != 2 {
		t.Errorf("last record %+v, head %+v", last, h)
	}
	mustVerify(t, s)
}

// TestHeadFileCrashWindow crashes the file system between a commit and its
// head record, and during the record's write (a torn record, of which a
// random part survives): the reopened store has the commit, accepts the
// missing record, writes it and verifies; the next crash-free reopen sees
// no gap.
func TestHeadFileCrashWindow(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := mrand.New(mrand.NewPCG(seed, 5))
	for trial := 0; trial < 12; trial++ {
		torn := trial%2 == 1
		fs := vfs.NewCrashableMem()
		s, err := Open("/data", Options{FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		n := 1 + rng.IntN(5)
		for v := 1; v < n; v++ {
			doRelease(t, s, uint64(v), 1, fmt.Sprintf("u%d", v))
		}
		var crashed *vfs.MemFS
		s.afterCommit = func() {
			if torn {
				// Part of the record, unsynced.
				junk := make([]byte, 1+rng.IntN(headsRecLen))
				rand.Read(junk)
				if _, err := s.heads.f.WriteAt(junk, s.heads.off); err != nil {
					t.Fatal(err)
				}
			}
			crashed = fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: mrand.New(mrand.NewPCG(rng.Uint64(), 2))})
		}
		e := doRelease(t, s, uint64(n), 1, "last")
		s.Close()
		s2, err := Open("/data", Options{FS: crashed})
		if err != nil {
			t.Fatalf("trial %d (torn %v): reopen: %v", trial, torn, err)
		}
		if h, _ := s2.Head(); h.Seq != e.Seq || h.Hash != e.Hash {
			t.Errorf("trial %d: head %+v after the commit of entry %d", trial, h, e.Seq)
		}
		mustVerify(t, s2)
		doRelease(t, s2, uint64(n+1), 1, "after")
		s2.Close()
		got, hi := headsRecords(t, crashed, "/data")
		if len(got) != n+1 || hi.torn != 0 || got[n-1].Seq != e.Seq || got[n].Seq != e.Seq+1 {
			t.Errorf("trial %d: head records %+v torn %d", trial, got, hi.torn)
		}
		s3, err := Open("/data", Options{FS: crashed, ReadOnly: true})
		if err != nil {
			t.Fatalf("trial %d: read-only reopen: %v", trial, err)
		}
		if r := mustVerify(t, s3); len(r.Notes) != 0 {
			t.Errorf("trial %d: notes %v", trial, r.Notes)
		}
		s3.Close()
	}
}

// TestHeadFileGaps edits a closed store's head file: one missing last
// record (what a crash leaves) is accepted, read-only with a note and
// repaired by a writable open; anything else is refused.
func TestHeadFileGaps(t *testing.T) {
	build := func(t *testing.T) (string, []byte) {
		s, dir := openTemp(t)
		for v := uint64(1); v <= 4; v++ {
			doRelease(t, s, v, 1, fmt.Sprint("u", v))
		}
		s.Close()
		b, err := os.ReadFile(filepath.Join(dir, headsFile))
		if err != nil || len(b) != 5*headsRecLen {
			t.Fatalf("head file: %d bytes, %v", len(b), err)
		}
		return dir, b
	}
	rec := func(b []byte, i int) []byte { return b[i*headsRecLen : (i+1)*headsRecLen] }
	cases := []struct {
		name   string
		edit   func(b []byte) []byte
		accept bool
		want   string
	}{
		{"last record missing", func(b []byte) []byte { return b[:4*headsRecLen] }, true, ""},
		{"last record torn", func(b []byte) []byte { return b[:5*headsRecLen-9] }, true, ""},
		{"last record damaged", func(b []byte) []byte { b[4*headsRecLen+20] ^= 1; return b }, true, ""},
		{"two records missing", func(b []byte) []byte { return b[:3*headsRecLen] }, false, "more than one commit ahead"},
		{"middle record damaged", func(b []byte) []byte { b[2*headsRecLen+30] ^= 0x40; return b }, false, "damaged record at offset 128"},
		{"middle record dropped", func(b []byte) []byte {
			return append(append(append([]byte(nil), b[:2*headsRecLen]...), rec(b, 3)...), rec(b, 4)...)
		}, true, ""}, // the records left still match: the chain covers the entry between
		{"store behind", func(b []byte) []byte {
			h := decodeRec(t, rec(b, 4))
			h.Seq++
			return append(b, encodeHeadsRec(kindCommit, h.Seq, h.Version, h.Hash)...)
		}, false, "entries 5 to 5 were lost"},
		{"other hash", func(b []byte) []byte {
			h := decodeRec(t, rec(b, 4))
			h.Hash[0] ^= 1
			return append(b[:4*headsRecLen], encodeHeadsRec(kindCommit, h.Seq, h.Version, h.Hash)...)
		}, false, "was replaced or rewritten"},
		{"header damaged", func(b []byte) []byte { b[40] ^= 1; return b }, false, "damaged header"},
		{"records out of order", func(b []byte) []byte {
			return append(append(append([]byte(nil), b[:headsRecLen]...), rec(b, 2)...), rec(b, 1)...)
		}, false, "has seq 1 after seq 2"},
		{"garbage appended", func(b []byte) []byte { return append(b, bytes.Repeat([]byte{7}, 100)...) }, false, "damaged record at offset 320"},
		{"truncated to the header", func(b []byte) []byte { return b[:headsRecLen] }, false, "more than one commit ahead"},
		{"emptied", func(b []byte) []byte { return nil }, false, "no header"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, b := build(t)
			if err := os.WriteFile(filepath.Join(dir, headsFile), c.edit(b), 0o600); err != nil {
				t.Fatal(err)
			}
			ro, err := Open(dir, Options{ReadOnly: true})
			if !c.accept {
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("read-only open: %v, want ErrCorrupt with %q", err, c.want)
				}
				if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
					t.Errorf("writable open: %v, want ErrCorrupt", err)
				}
				if ro != nil {
					ro.Close()
				}
				return
			}
			if err != nil {
				t.Fatalf("read-only open: %v", err)
			}
			r := mustVerify(t, ro)
			ro.Close()
			gap := c.name != "middle record dropped"
			if gap != (len(r.Notes) == 1 && strings.Contains(r.Notes[0], "one commit (entry 4) ahead")) {
				t.Errorf("notes %v", r.Notes)
			}
			s, err := Open(dir, Options{})
			if err != nil {
				t.Fatalf("writable open: %v", err)
			}
			s.Close()
			got, hi := headsRecords(t, vfs.Default, dir)
			if last := got[len(got)-1]; last.Seq != 4 || hi.torn != 0 {
				t.Errorf("after repair: last %+v, torn %d", last, hi.torn)
			}
		})
	}
}

func decodeRec(t *testing.T, b []byte) headRec {
	t.Helper()
	kind, seq, ver, h, ok := decodeHeadsRec(b)
	if !ok || kind != kindCommit {
		t.Fatalf("record %x", b)
	}
	return headRec{Seq: seq, Version: ver, Hash: h}
}

// TestHeadRecordFailureStopsWrites makes the head record's write fail
// after its commit: the release is refused (not acknowledged), every later
// write is refused, and the next open writes the missing record.
func TestHeadRecordFailureStopsWrites(t *testing.T) {
	s, dir := openTemp(t)
	doRelease(t, s, 1, 1, "a")
	s.heads.f.Close() // the next write to the head file fails
	keys := []UserKey{s.User("b")}
	if _, err := s.Release(Release{Version: 2, Snapshot: []byte("p2"), Entry: releaseEntry(t, 1, 1, false), Users: keys}); err == nil || !strings.Contains(err.Error(), "is committed but its head record could not be written") {
		t.Fatalf("release with a failing head file: %v", err)
	}
	if _, err := s.Release(Release{Version: 3, Snapshot: []byte("p3"), Entry: releaseEntry(t, 1, 1, false), Users: keys}); err == nil || !strings.Contains(err.Error(), "refusing to write") {
		t.Fatalf("release after the failure: %v", err)
	}
	if err := s.InitSpec([]byte("{}"), nil); err == nil {
		t.Errorf("a write after the failure was accepted")
	}
	s.heads = nil // already closed
	s.Close()
	s2, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if h, _ := s2.Head(); h.Version != 2 {
		t.Errorf("head %+v: the committed release 2 must survive", h)
	}
	if got, _ := headsRecords(t, vfs.Default, dir); len(got) != 2 {
		t.Errorf("%d head records after the repair", len(got))
	}
	doRelease(t, s2, 3, 1, "c")
}

// TestUserKeyBoundToLedger replaces and removes user.key: the store
// refuses the other key (which would reset every user's counter) and the
// missing key, whether or not users were counted yet.
func TestUserKeyBoundToLedger(t *testing.T) {
	for _, withUsers := range []bool{false, true} {
		s, dir := openTemp(t)
		if withUsers {
			doRelease(t, s, 1, 1, "alice")
		}
		s.Close()
		path := filepath.Join(dir, userKeyFile)
		orig, _ := os.ReadFile(path)
		other := make([]byte, userKeyLen)
		rand.Read(other)
		os.WriteFile(path, other, 0o600)
		for _, ro := range []bool{false, true} {
			_, err := Open(dir, Options{ReadOnly: ro})
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "not the key this ledger was created with") {
				t.Errorf("users %v read-only %v: another key: %v", withUsers, ro, err)
			}
		}
		os.Remove(path)
		if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "user.key is missing") {
			t.Errorf("users %v: missing key: %v", withUsers, err)
		}
		if _, err := os.Stat(path); err == nil {
			t.Errorf("users %v: a new key was written", withUsers)
		}
		os.WriteFile(path, orig, 0o600)
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatalf("users %v: the original key: %v", withUsers, err)
		}
		if st, _ := s.UserState(s.User("alice")); withUsers && st.Updates != 1 {
			t.Errorf("alice %+v", st)
		}
		s.Close()
	}
}

// TestExpectHead records a head, restores an older copy of the whole data
// directory (which no state inside it can detect) and checks that the
// recorded head catches it.
func TestExpectHead(t *testing.T) {
	root := t.TempDir()
	dir, old := filepath.Join(root, "data"), filepath.Join(root, "old")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	doRelease(t, s, 1, 1, "a")
	s.Close()
	testutil.MustCopyTree(t, dir, old)
	s, _ = Open(dir, Options{})
	e := doRelease(t, s, 2, 1, "b")
	ref := HeadRef{Seq: e.Seq, Hash: e.Hash}
	doRelease(t, s, 3, 1, "c") // the ledger may grow after the head was recorded
	s.Close()
	s, err = Open(dir, Options{ReadOnly: true, ExpectHead: &ref})
	if err != nil {
		t.Fatalf("the recorded head: %v", err)
	}
	s.Close()
	os.RemoveAll(dir)
	testutil.MustCopyTree(t, old, dir)
	for _, ro := range []bool{true, false} {
		_, err := Open(dir, Options{ReadOnly: ro, ExpectHead: &ref})
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "rolled back") {
			t.Errorf("read-only %v: rolled-back directory: %v", ro, err)
		}
	}
	// Without the recorded head the rollback is not detectable.
	s, err = Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, s)
	forged := ref
	forged.Seq = 1
	if err := s.CheckHead(forged); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "replaced or rewritten") {
		t.Errorf("a head with another hash: %v", err)
	}
	s.Close()
}

func TestParseHeadRef(t *testing.T) {
	h := strings.Repeat("ab", 32)
	for in, ok := range map[string]bool{
		"3:" + h: true, " 12:" + strings.ToUpper(h) + "\n": true,
		"0:" + h: false, "3": false, "3:" + h[:63]: false, "x:" + h: false, "3:" + h + "00": false, "-1:" + h: false,
	} {
		r, err := ParseHeadRef(in)
		if (err == nil) != ok {
			t.Errorf("%q: %+v %v", in, r, err)
		}
		if ok && (r.Hash != h || r.String() != fmt.Sprintf("%d:%s", r.Seq, h)) {
			t.Errorf("%q: %+v", in, r)
		}
	}
}

// TestLegacyStoreAdopted turns a store into one of an earlier version (no
// anchor record, no head file, no m/prev): a read-only open notes it, the
// first writable open verifies it and adds both, after which a deleted
// head file is refused. An adoption interrupted between the head file and
// the anchor is finished.
func TestLegacyStoreAdopted(t *testing.T) {
	for _, interrupted := range []bool{false, true} {
		s, dir := openTemp(t)
		doRelease(t, s, 1, 1, "a")
		doRelease(t, s, 2, 1, "a", "b")
		h, _ := s.Head()
		s.Close()
		db, err := pebble.Open(filepath.Join(dir, pebbleDir), &pebble.Options{})
		if err != nil {
			t.Fatal(err)
		}
		db.Delete(keyAnchor, nil)
		db.Delete(keyPrev, pebble.Sync)
		db.Close()
		os.Remove(filepath.Join(dir, headsFile))
		if interrupted {
			key, _ := os.ReadFile(filepath.Join(dir, userKeyFile))
			if err := createHeads(vfs.Default, dir, keyFingerprint(key), &h); err != nil {
				t.Fatal(err)
			}
		}
		ro, err := Open(dir, Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("interrupted %v: read-only: %v", interrupted, err)
		}
		if r := mustVerify(t, ro); len(r.Notes) != 1 || r.Entries != 2 {
			t.Errorf("interrupted %v: %+v", interrupted, r)
		}
		ro.Close()
		s, err = Open(dir, Options{})
		if err != nil {
			t.Fatalf("interrupted %v: adopt: %v", interrupted, err)
		}
		doRelease(t, s, 3, 1, "c")
		s.Close()
		if got, _ := headsRecords(t, vfs.Default, dir); len(got) != 2 || got[0].Seq != 2 || got[1].Seq != 3 {
			t.Errorf("interrupted %v: head records %+v", interrupted, got)
		}
		os.Remove(filepath.Join(dir, headsFile))
		if _, err := Open(dir, Options{ReadOnly: true}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "ledger.heads is missing") {
			t.Errorf("interrupted %v: deleted head file after adoption: %v", interrupted, err)
		}
	}
}

// TestSecondOpenRefused keeps the guarantee that a second agent on the same
// data directory is refused while the first holds it.
func TestSecondOpenRefused(t *testing.T) {
	s, dir := openTemp(t)
	doRelease(t, s, 1, 1, "a")
	for _, ro := range []bool{false, true} {
		if _, err := Open(dir, Options{ReadOnly: ro}); err == nil || !strings.Contains(err.Error(), "in use") {
			t.Errorf("read-only %v: second open: %v", ro, err)
		}
	}
	s.Close()
	if _, err := s.Head(); !errors.Is(err, ErrClosed) {
		t.Errorf("head after close: %v, want ErrClosed", err)
	}
	s2, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	s2.Close()
}

// TestCorruptionWhileOpen damages the SST under an open store: the read
// that finds the damage returns ErrCorrupt instead of panicking (Pebble's
// default reaction to corruption is Fatalf), and the store refuses every
// later write.
func TestCorruptionWhileOpen(t *testing.T) {
	s, dir := openTemp(t)
	for v := uint64(1); v <= 3; v++ {
		doRelease(t, s, v, 1, fmt.Sprint("u", v))
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	ssts, _ := filepath.Glob(filepath.Join(dir, pebbleDir, "*.sst"))
	if len(ssts) != 1 {
		t.Fatalf("ssts %v", ssts)
	}
	b, _ := os.ReadFile(ssts[0])
	for i := 0; i < len(b)/2; i += 97 {
		b[i] ^= 0x5a
	}
	os.WriteFile(ssts[0], b, 0o600)
	rel := func(v uint64) error {
		_, err := s.Release(Release{Version: v, Snapshot: []byte("p"), Entry: releaseEntry(t, 1, 1, false), Users: []UserKey{s.User("u1")}})
		return err
	}
	if err := rel(4); !errors.Is(err, ErrCorrupt) {
		t.Errorf("release reading the damaged SST: %v, want ErrCorrupt", err)
	}
	if err := s.health.get(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("the store's health after the damage: %v", err)
	}
	if err := s.InitSpec([]byte("{}"), nil); err == nil {
		t.Errorf("a write after the damage was accepted")
	}
	if h, err := s.Head(); err == nil && h.Version != 3 {
		t.Errorf("head %+v", h)
	}
}
