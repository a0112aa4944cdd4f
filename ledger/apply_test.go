package ledger

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestApplyReplicates: a follower that applies a writer's entries, with
// their snapshots, holds the same ledger (every entry, hash and user
// counter), and both verify; an entry out of order, one whose contents
// were changed, and a correlated-noise release are refused without a
// write; a release whose hook fails writes nothing.
func TestApplyReplicates(t *testing.T) {
	w, _ := openTemp(t)
	f := openWithKey(t, w.userKey)
	type rec struct {
		e    Entry
		snap []byte
	}
	var log []rec
	appendTo := func(e Entry) error {
		snap := []byte(fmt.Sprintf("policy-%d", e.PolicyVersion))
		if e.Kind != KindRelease {
			snap = nil
		}
		log = append(log, rec{e, snap})
		return nil
	}
	if _, err := w.AppendWriter("learner-a", 7, appendTo); err != nil {
		t.Fatal(err)
	}
	for v := uint64(1); v <= 4; v++ {
		users := []UserKey{w.User("alice"), w.User(fmt.Sprint("user", v))}
		r := Release{Version: v, Snapshot: []byte(fmt.Sprintf("policy-%d", v)), Entry: releaseEntry(t, 1.5, 2, true), Users: users}
		if _, err := w.ReleaseWith(r, appendTo); err != nil {
			t.Fatal(err)
		}
	}
	// A release the record refuses (the hook fails) leaves no trace.
	before, _ := w.Head()
	fenced := errors.New("fenced")
	r := Release{Version: 5, Snapshot: []byte("policy-5"), Entry: releaseEntry(t, 1.5, 1, true), Users: []UserKey{w.User("alice")}}
	if _, err := w.ReleaseWith(r, func(Entry) error { return fenced }); !errors.Is(err, fenced) {
		t.Fatalf("refused release: %v", err)
	}
	if after, _ := w.Head(); after != before {
		t.Fatalf("head moved from %+v to %+v after a refused release", before, after)
	}
	if st, _ := w.UserState(w.User("alice")); st.Updates != 4 {
		t.Fatalf("alice counted %d updates, want 4", st.Updates)
	}

	// Out of order: entry 2 before entry 1.
	if _, err := f.Apply(log[1].e, log[1].snap); !errors.Is(err, ErrInvalid) {
		t.Fatalf("out of order: %v", err)
	}
	// Changed contents: the hash no longer matches.
	bad := log[0].e
	bad.Writer = "someone-else"
	if _, err := f.Apply(bad, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("tampered writer entry: %v", err)
	}
	for i, r := range log {
		if i == 2 {
			bad := r.e
			bad.Epsilon *= 0.5
			if _, err := f.Apply(bad, r.snap); !errors.Is(err, ErrInvalid) {
				t.Fatalf("tampered epsilon: %v", err)
			}
		}
		got, err := f.Apply(r.e, r.snap)
		if err != nil {
			t.Fatalf("apply %d: %v", r.e.Seq, err)
		}
		if got.Hash != r.e.Hash {
			t.Fatalf("applied %d with hash %s, written %s", r.e.Seq, got.Hash, r.e.Hash)
		}
	}
	hw, _ := w.Head()
	hf, _ := f.Head()
	if hw != hf {
		t.Fatalf("heads differ: writer %+v, follower %+v", hw, hf)
	}
	for _, u := range []UserKey{w.User("alice"), w.User("user3")} {
		a, _ := w.UserState(u)
		b, _ := f.UserState(u)
		if a != b {
			t.Fatalf("user %s: writer %+v, follower %+v", u, a, b)
		}
	}
	for _, s := range []*Store{w, f} {
		rep, err := s.Verify()
		if err != nil || !rep.OK() || rep.Entries != 5 || rep.Releases != 4 {
			t.Fatalf("verify: %+v %v", rep, err)
		}
	}
	snap, err := f.Snapshot(4)
	if err != nil || string(snap) != "policy-4" {
		t.Fatalf("follower snapshot: %q %v", snap, err)
	}
	// A correlated-noise release is not applied.
	corr, err := BandedCorrelation(2, 2, 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	e := releaseEntry(t, 1.5, 1, true)
	e.Kind, e.Seq, e.PolicyVersion, e.Correlation = KindRelease, 6, 5, corr
	if _, err := f.Apply(e, []byte("policy-5")); !errors.Is(err, ErrInvalid) {
		t.Fatalf("correlated release applied: %v", err)
	}
	// A writer entry needs a name and a lease.
	if _, err := w.AppendWriter("", 1, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("nameless writer: %v", err)
	}
	if _, err := w.AppendWriter("x", 0, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("writer without a lease: %v", err)
	}
}

// TestSessionsUsedOnce: a release's sessions are indexed; a later release
// (or the same one) with a used session is refused without a write, on
// the writer and on a follower applying the record; the index verifies,
// and a release that records no sessions changes nothing (single-process
// ledgers are as before).
func TestSessionsUsedOnce(t *testing.T) {
	w, _ := openTemp(t)
	f := openWithKey(t, w.userKey)
	var log []Entry
	rel := func(v uint64, user string, sessions ...string) Release {
		r := Release{Version: v, Snapshot: []byte(fmt.Sprint("policy-", v)), Entry: releaseEntry(t, 2, len(sessions), true)}
		for _, s := range sessions {
			r.Users = append(r.Users, w.User(user+s))
			r.Sessions = append(r.Sessions, w.Session(s))
		}
		return r
	}
	keep := func(e Entry) error { log = append(log, e); return nil }
	if _, err := w.ReleaseWith(rel(1, "u", "s1", "s2"), keep); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := w.SessionUsed(w.Session("s2")); err != nil || !ok || v != 1 {
		t.Fatalf("s2 used at %d, %v, %v", v, ok, err)
	}
	if w.Session("s1") == SessionKey(w.User("s1")) {
		t.Fatal("a session's key equals the user key of the same id")
	}
	head, _ := w.Head()
	for _, r := range []Release{rel(2, "v", "s3", "s1"), rel(2, "v", "s4", "s4")} {
		if _, err := w.Release(r); !errors.Is(err, ErrInvalid) {
			t.Fatalf("reused session: %v", err)
		}
	}
	if _, err := w.Release(rel(2, "v", "s1")); !errors.Is(err, ErrSessionUsed) {
		t.Fatalf("a used session: %v, want ErrSessionUsed", err)
	}
	if h, _ := w.Head(); h != head {
		t.Fatal("a refused release moved the head")
	}
	if _, ok, _ := w.SessionUsed(w.Session("s3")); ok {
		t.Fatal("a refused release indexed its sessions")
	}
	if _, err := w.ReleaseWith(rel(2, "v", "s3"), keep); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ReleaseWith(Release{Version: 3, Snapshot: []byte("policy-3"), Entry: releaseEntry(t, 2, 1, true), Users: []UserKey{w.User("z")}}, keep); err != nil {
		t.Fatal(err)
	}
	for _, e := range log {
		if _, err := f.Apply(e, []byte(fmt.Sprint("policy-", e.PolicyVersion))); err != nil {
			t.Fatal(err)
		}
	}
	if v, ok, _ := f.SessionUsed(w.Session("s3")); !ok || v != 2 {
		t.Fatalf("follower: s3 at %d, %v", v, ok)
	}
	for _, s := range []*Store{w, f} {
		if rep, err := s.Verify(); err != nil || !rep.OK() {
			t.Fatalf("verify: %+v %v", rep, err)
		}
	}
	// An entry that reuses a session cannot come from the record either.
	bad := log[1]
	bad.Sessions = append(bad.Sessions, w.Session("s1"))
	g := openWithKey(t, w.userKey)
	if _, err := g.Apply(log[0], []byte("policy-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Apply(bad, []byte("policy-2")); !errors.Is(err, ErrInvalid) {
		t.Fatalf("record entry reusing a session: %v", err)
	}
}

// openWithKey opens a new store in a temporary directory with the user key
// key.
func openWithKey(t *testing.T, key []byte) *Store {
	t.Helper()
	s, err := Open(t.TempDir(), Options{UserKey: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestSharedUserKey: stores created with one given user key key users and
// sessions alike; a writer entry from a ledger with another key is not
// applied (one user would be counted under two keys); a given key of the
// wrong length, or one that differs from an existing store's, is refused.
func TestSharedUserKey(t *testing.T) {
	key := make([]byte, 32)
	key[0] = 7
	a, b := openWithKey(t, key), openWithKey(t, key)
	if a.User("alice") != b.User("alice") || a.Session("s") != b.Session("s") {
		t.Fatal("stores with one key disagree on a user's key")
	}
	other, _ := openTemp(t)
	e, err := other.AppendWriter("x", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Apply(e, nil); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "share one user key") {
		t.Fatalf("writer entry keyed differently: %v", err)
	}
	w, err := b.AppendWriter("b", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Apply(w, nil); err != nil {
		t.Fatalf("writer entry with the same key: %v", err)
	}
	if _, err := Open(t.TempDir(), Options{UserKey: key[:16]}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a 16-byte key: %v", err)
	}
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, ro := range []bool{false, true} {
		if _, err := Open(dir, Options{UserKey: key, ReadOnly: ro}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("an existing store with another key (read-only %v): %v", ro, err)
		}
	}
}
