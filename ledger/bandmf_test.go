package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dprl/internal/testutil"
	"dprl/ledger/accountant/bandsens"
)

// bandedRelease releases version with correlated noise of the stream
// (band, k, start), a noise step of n values derived from the version, and
// the given users; it returns the error.
func bandedRelease(t *testing.T, s *Store, version uint64, band, k int, start uint64, n int, z float64, users ...string) error {
	t.Helper()
	c, err := BandedCorrelation(band, band, k, start)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]UserKey, len(users))
	for i, u := range users {
		keys[i] = s.User(u)
	}
	e := releaseEntry(t, z, max(len(users), 1), true)
	e.K = 4 // a stream keeps its K
	e.Correlation = c
	x, g := make([]float64, n), make([]float64, n)
	for i := range x {
		x[i] = float64(version) + float64(i)/10
		g[i] = -x[i]
	}
	_, err = s.Release(Release{Version: version, Snapshot: []byte(fmt.Sprintf("policy-%d", version)), Entry: e, Users: keys, Noise: &NoiseStep{X: x, G: g}})
	return err
}

// TestBandedParticipationPattern checks that Release refuses a user's
// participation closer than the separation (= the band) to their last or
// beyond the cap, writing nothing, and accepts it otherwise.
func TestBandedParticipationPattern(t *testing.T) {
	s, _ := openTemp(t)
	const band, k = 3, 2
	ok := func(v uint64, users ...string) {
		t.Helper()
		if err := bandedRelease(t, s, v, band, k, 1, 4, 1, users...); err != nil {
			t.Fatalf("release %d %v: %v", v, users, err)
		}
	}
	refused := func(v uint64, why string, users ...string) {
		t.Helper()
		before, _ := s.Head()
		err := bandedRelease(t, s, v, band, k, 1, 4, 1, users...)
		if !errors.Is(err, ErrParticipation) || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), why) {
			t.Fatalf("release %d %v: %v, want ErrParticipation (%s)", v, users, err, why)
		}
		if after, _ := s.Head(); after != before {
			t.Fatalf("a refused release moved the head: %+v -> %+v", before, after)
		}
	}
	ok(1, "alice", "bob")
	refused(2, "less than 3 releases later", "carol", "alice") // alice took part in version 1
	ok(2, "carol")
	refused(3, "less than 3 releases later", "bob")
	ok(3, "dave")
	ok(4, "alice", "bob")                             // 3 releases after version 1: allowed
	refused(5, "at most 2", "erin", "carol", "alice") // alice: cap (and too soon)
	ok(5, "erin", "carol")
	ok(6, "frank")
	ok(7, "gina")
	refused(8, "at most 2", "alice") // the cap alone: 8 - 4 >= 3
	st, _ := s.UserState(s.User("alice"))
	if st.Updates != 2 || st.LastVersion != 4 || st.SumInvZ2 != 2 {
		t.Fatalf("alice: %+v", st)
	}
	mustVerify(t, s)
}

// TestBandedNoiseRecords checks the records the releases keep: the last
// band-1 of the stream, chained, returned in order by NoiseState; a new
// stream deletes the earlier records, a release without correlated noise
// deletes them all; Verify passes throughout.
func TestBandedNoiseRecords(t *testing.T) {
	s, _ := openTemp(t)
	const band, n = 4, 5
	versions := func() []uint64 {
		recs, err := s.noiseRecords()
		if err != nil {
			t.Fatal(err)
		}
		var vs []uint64
		for _, r := range recs {
			vs = append(vs, r.Version)
		}
		return vs
	}
	for v := uint64(1); v <= 7; v++ {
		if err := bandedRelease(t, s, v, band, 10, 1, n, 1.5, fmt.Sprintf("u%d", v)); err != nil {
			t.Fatal(err)
		}
		mustVerify(t, s)
		want := []uint64{}
		for w := max(1, int(v)-band+2); w <= int(v); w++ {
			want = append(want, uint64(w))
		}
		if got := versions(); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("after version %d: records %v, want %v", v, got, want)
		}
	}
	st, err := s.NoiseState()
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != 7 || st.StreamStart != 1 || st.Band != band || st.Params != n || st.Z != 1.5 || len(st.X) != band-1 {
		t.Fatalf("noise state %+v", st)
	}
	for i, x := range st.X {
		v := float64(5 + i)
		if x[0] != v || st.G[i][1] != -(v+0.1) {
			t.Fatalf("state %d: x %v g %v, want version %v's", i, x, st.G[i], v)
		}
	}
	// Continuing the stream with another z is refused.
	if err := bandedRelease(t, s, 8, band, 10, 1, n, 2, "x"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("stream continued with another z: %v", err)
	}
	// A new stream at version 8 (another z) deletes the old records.
	if err := bandedRelease(t, s, 8, band, 10, 8, n, 2, "x"); err != nil {
		t.Fatal(err)
	}
	if got := versions(); !slices.Equal(got, []uint64{8}) {
		t.Fatalf("new stream: records %v, want [8]", got)
	}
	mustVerify(t, s)
	// A continuation claiming a stream whose previous record is missing is
	// refused: version 9 cannot continue a stream started at 5.
	if err := bandedRelease(t, s, 9, band, 10, 5, n, 2, "y"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("continuation of an unknown stream: %v", err)
	}
	// An independent-noise release deletes every record.
	doRelease(t, s, 9, 1, "z")
	if got := versions(); len(got) != 0 {
		t.Fatalf("after an independent release: records %v", got)
	}
	if st, err := s.NoiseState(); err != nil || st.Version != 0 {
		t.Fatalf("noise state after an independent release: %+v %v", st, err)
	}
	mustVerify(t, s)
	// One band keeps no record.
	if err := bandedRelease(t, s, 10, 1, 10, 10, n, 1, "w"); err != nil {
		t.Fatal(err)
	}
	if got := versions(); len(got) != 0 {
		t.Fatalf("one band: records %v", got)
	}
	mustVerify(t, s)
}

// TestBandedReleaseArguments checks the refused correlation parameters and
// noise steps.
func TestBandedReleaseArguments(t *testing.T) {
	s, _ := openTemp(t)
	good, err := BandedCorrelation(3, 3, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	step := &NoiseStep{X: []float64{1, 2}, G: []float64{3, 4}}
	for _, tc := range []struct {
		name string
		edit func(c *Correlation, st **NoiseStep)
		want string
	}{
		{"separation below the band", func(c *Correlation, _ **NoiseStep) { c.MinSeparation = 2 }, "below the 3 bands"},
		{"wrong factor", func(c *Correlation, _ **NoiseStep) { c.Factor *= 1.01 }, "recomputed"},
		{"wrong sensitivity", func(c *Correlation, _ **NoiseStep) { c.Sensitivity = 1 }, "recomputed"},
		{"unknown noise", func(c *Correlation, _ **NoiseStep) { c.Noise = "tree" }, "want \"banded_sqrt\""},
		{"stream start after the version", func(c *Correlation, _ **NoiseStep) { c.StreamStart = 2 }, "stream start"},
		{"no noise step", func(_ *Correlation, st **NoiseStep) { *st = nil }, "without its noise step"},
		{"unequal step", func(_ *Correlation, st **NoiseStep) { *st = &NoiseStep{X: []float64{1}, G: []float64{1, 2}} }, "noise step of"},
		{"non-finite step", func(_ *Correlation, st **NoiseStep) { *st = &NoiseStep{X: []float64{math.NaN()}, G: []float64{1}} }, "non-finite"},
	} {
		c := *good
		st := step
		tc.edit(&c, &st)
		e := releaseEntry(t, 1, 1, true)
		e.Correlation = &c
		_, err := s.Release(Release{Version: 1, Snapshot: []byte("p"), Entry: e, Users: []UserKey{s.User("a")}, Noise: st})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalid naming %q", tc.name, err, tc.want)
		}
	}
	// A noise step without a correlation.
	_, err = s.Release(Release{Version: 1, Snapshot: []byte("p"), Entry: releaseEntry(t, 1, 1, true), Noise: step})
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("noise step without correlation: %v", err)
	}
	if h, _ := s.Head(); h.Version != 0 {
		t.Fatalf("a refused release was written: %+v", h)
	}
	if _, err := BandedCorrelation(4, 3, 2, 1); !errors.Is(err, ErrInvalid) {
		t.Errorf("BandedCorrelation with separation below the band: %v", err)
	}
}

// TestBandedVerifyDamage checks that Verify and NoiseState catch a damaged
// record (one flipped byte), a missing record and a record left over after
// the stream ended; and that Verify's pattern check catches a participation
// closer than the separation (an entry Release would have refused).
func TestBandedVerifyDamage(t *testing.T) {
	for _, dmg := range []struct {
		name  string
		apply func(s *Store) error
		want  string
	}{
		{"flipped byte", func(s *Store) error {
			v, err := s.get(noiseKey(5))
			if err != nil {
				return err
			}
			v[len(noiseMagic)+40] ^= 1
			return s.setRawSync(noiseKey(5), v)
		}, "checksum mismatch"},
		{"missing record", func(s *Store) error {
			b := s.db.NewBatch()
			defer b.Close()
			b.Delete(noiseKey(4), nil)
			return s.commitBatch(b)
		}, "needs exactly"},
		{"record swapped with a valid one of another version", func(s *Store) error {
			v, err := s.get(noiseKey(4))
			if err != nil {
				return err
			}
			return s.setRawSync(noiseKey(5), v)
		}, "says version 4"},
	} {
		t.Run(dmg.name, func(t *testing.T) {
			s, _ := openTemp(t)
			for v := uint64(1); v <= 5; v++ {
				if err := bandedRelease(t, s, v, 3, 10, 1, 3, 1, fmt.Sprintf("u%d", v)); err != nil {
					t.Fatal(err)
				}
			}
			mustVerify(t, s)
			if err := dmg.apply(s); err != nil {
				t.Fatal(err)
			}
			r, err := s.Verify()
			if err != nil || r.OK() || !strings.Contains(strings.Join(r.Problems, "; "), dmg.want) {
				t.Fatalf("verify: %v %v, want a problem naming %q", err, r.Problems, dmg.want)
			}
			if _, err := s.NoiseState(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("noise state: %v, want ErrCorrupt", err)
			}
		})
	}
	// Pattern: a user in versions 1 and 2 of a 3-band stream.
	c, _ := BandedCorrelation(3, 3, 10, 1)
	u := UserKey{1}
	users := map[UserKey]*UserState{u: {Updates: 1, SumInvZ2: 1, LastVersion: 1}}
	var problems []string
	problem := func(f string, a ...any) { problems = append(problems, fmt.Sprintf(f, a...)) }
	prev := Entry{Kind: KindRelease, PolicyVersion: 1, Z: 1, S: 0.05, K: 1, Correlation: c}
	verifyCorrelation(Entry{Seq: 2, Kind: KindRelease, PolicyVersion: 2, Z: 1, S: 0.05, K: 1, Correlation: c, Users: []UserKey{u}}, &prev, users, problem)
	if len(problems) != 1 || !strings.Contains(problems[0], "less than 3 releases later") {
		t.Fatalf("pattern problems %v", problems)
	}
	// Stream continuity: a z change without a new stream.
	problems = nil
	verifyCorrelation(Entry{Seq: 2, Kind: KindRelease, PolicyVersion: 2, Z: 2, S: 0.05, K: 1, Correlation: c}, &prev, users, problem)
	if len(problems) != 1 || !strings.Contains(problems[0], "continues") {
		t.Fatalf("continuity problems %v", problems)
	}
}

// TestBandedCorrelationSensitivity checks the recorded sensitivity: sqrt(k)
// (the separation equals the band), factor ||c||.
func TestBandedCorrelationSensitivity(t *testing.T) {
	for _, tc := range []struct{ band, k int }{{1, 1}, {4, 10}, {100, 30}, {1000, 1 << 20}} {
		c, err := BandedCorrelation(tc.band, tc.band, tc.k, 1)
		if err != nil {
			t.Fatal(err)
		}
		want := math.Sqrt(float64(tc.k))
		if c.Sensitivity < want || c.Sensitivity > want*(1+2e-6) {
			t.Errorf("band %d, k %d: sensitivity %v, want sqrt(k) %v", tc.band, tc.k, c.Sensitivity, want)
		}
		if f := bandsens.ColumnNorm(bandsens.SqrtCoefficients(tc.band)); c.Factor != f {
			t.Errorf("band %d: factor %v, want %v", tc.band, c.Factor, f)
		}
	}
}

// filesHolding returns the files under dir whose bytes contain needle.
func filesHolding(t *testing.T, dir string, needle []byte) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, needle) {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBackupEndsNoiseStream: a backup of a ledger in the middle of a 4-band
// stream holds no noise record (no file of the copy contains one, while the
// original's do) and the stream's end marker instead; the restored ledger
// verifies (noting the end), has no noise state, refuses a release that
// continues the old stream past the backup's head and accepts one that
// starts a new stream, whose batch removes the marker. A backup of the
// restored ledger before that release keeps the marker. Damage to the
// marker is caught.
func TestBackupEndsNoiseStream(t *testing.T) {
	s, dir := openTemp(t)
	const band, k, n = 4, 10, 3
	for v := uint64(1); v <= 5; v++ {
		if err := bandedRelease(t, s, v, band, k, 1, n, 1, fmt.Sprintf("u%d", v)); err != nil {
			t.Fatal(err)
		}
	}
	if got := filesHolding(t, dir, []byte(noiseMagic)); len(got) == 0 {
		t.Fatal("the original's files hold no noise record: the check below would prove nothing")
	}
	res, err := s.Backup(filepath.Join(t.TempDir(), "b"))
	if err != nil || res.Head.Version != 5 {
		t.Fatalf("backup: %+v %v", res, err)
	}
	if got := filesHolding(t, res.Dir, []byte(noiseMagic)); len(got) > 0 {
		t.Fatalf("the backup holds noise records in %v", got)
	}
	// The original goes on: row 6 of the stream from version 1 is published.
	if err := bandedRelease(t, s, 6, band, k, 1, n, 1, "u6"); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, s)

	r, err := Open(res.Dir, Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep := mustVerify(t, r)
	if !strings.Contains(strings.Join(rep.Notes, "; "), "from version 1 ended at version 5 (backup)") {
		t.Fatalf("verify notes %v", rep.Notes)
	}
	ns, err := r.NoiseState()
	if err != nil || ns.Version != 0 || len(ns.X) != 0 || ns.EndedAt != 5 {
		t.Fatalf("restored noise state %+v %v, want none, ended at 5", ns, err)
	}
	// A backup of the restored ledger keeps the marker.
	res2, err := r.Backup(filepath.Join(t.TempDir(), "b2"))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Open(res2.Dir, Options{MustExist: true, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if ns, err := r2.NoiseState(); err != nil || ns.EndedAt != 5 {
		t.Fatalf("backup of the restored ledger: %+v %v", ns, err)
	}
	r2.Close()
	// Row 6 of the old stream again: refused.
	if err := bandedRelease(t, r, 6, band, k, 1, n, 1, "u6"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "no noise record") {
		t.Fatalf("continuing the ended stream: %v, want refused", err)
	}
	if err := bandedRelease(t, r, 6, band, k, 6, n, 1, "u6"); err != nil {
		t.Fatalf("a new stream from version 6: %v", err)
	}
	if v, err := r.get(keyNoiseEnd); err != nil || v != nil {
		t.Fatalf("the end marker after the new stream's first release: %q %v", v, err)
	}
	ns, err = r.NoiseState()
	if err != nil || ns.StreamStart != 6 || ns.Version != 6 || len(ns.X) != 1 || ns.EndedAt != 0 {
		t.Fatalf("new stream's state %+v %v", ns, err)
	}
	mustVerify(t, r)

	// Damage: a marker naming another version, or left beside records.
	for _, tc := range []struct {
		name string
		end  noiseEnd
		want string
	}{
		{"stale marker beside records", noiseEnd{Version: 6, StreamStart: 6, Entry: lastHash(t, r), Reason: "backup"}, "records remain"},
		{"marker of another version", noiseEnd{Version: 5, StreamStart: 1, Entry: lastHash(t, r), Reason: "backup"}, "end marker names version 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := json.Marshal(tc.end)
			if err := r.setRawSync(keyNoiseEnd, b); err != nil {
				t.Fatal(err)
			}
			rep, err := r.Verify()
			if err != nil || rep.OK() || !strings.Contains(strings.Join(rep.Problems, "; "), tc.want) {
				t.Fatalf("verify: %v %v, want %q", err, rep.Problems, tc.want)
			}
			if _, err := r.NoiseState(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("noise state: %v, want ErrCorrupt", err)
			}
		})
	}
}

// lastHash is the hash of the store's last entry.
func lastHash(t *testing.T, s *Store) string {
	t.Helper()
	h, err := s.Head()
	if err != nil {
		t.Fatal(err)
	}
	return h.Hash
}

// TestEndNoiseStreamAfterPlainCopy: a plain copy of a data directory in the
// middle of a stream holds its noise records, and opens like a restart (the
// stream would continue). EndNoiseStream ends it without moving the head:
// the ledger verifies, has no noise state, refuses to continue the stream
// and accepts a new one; a second call has nothing to end.
func TestEndNoiseStreamAfterPlainCopy(t *testing.T) {
	s, dir := openTemp(t)
	for v := uint64(1); v <= 4; v++ {
		if err := bandedRelease(t, s, v, 3, 10, 1, 2, 1, fmt.Sprintf("u%d", v)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	cp := filepath.Join(t.TempDir(), "copy")
	testutil.MustCopyTree(t, dir, cp)
	c, err := Open(cp, Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ns, err := c.NoiseState(); err != nil || ns.Version != 4 || ns.StreamStart != 1 {
		t.Fatalf("the plain copy's state %+v %v: want the live stream", ns, err)
	}
	before, _ := c.Head()
	v, err := c.EndNoiseStream()
	if err != nil || v != 4 {
		t.Fatalf("end stream: %d %v, want 4", v, err)
	}
	if after, _ := c.Head(); after != before {
		t.Fatalf("the head moved: %+v -> %+v", before, after)
	}
	if ns, err := c.NoiseState(); err != nil || ns.Version != 0 || ns.EndedAt != 4 {
		t.Fatalf("state after the end %+v %v", ns, err)
	}
	rep := mustVerify(t, c)
	if !strings.Contains(strings.Join(rep.Notes, "; "), "ended at version 4 (restore)") {
		t.Fatalf("notes %v", rep.Notes)
	}
	if v, err := c.EndNoiseStream(); err != nil || v != 0 {
		t.Fatalf("second end: %d %v, want nothing to end", v, err)
	}
	if err := bandedRelease(t, c, 5, 3, 10, 1, 2, 1, "u5"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("continuing the ended stream: %v", err)
	}
	if err := bandedRelease(t, c, 5, 3, 10, 5, 2, 1, "u5"); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, c)
}
