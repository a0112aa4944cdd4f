package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestBackupWhileReleasing takes backups of a store while another goroutine
// keeps releasing: every backup must open as a ledger on its own (the
// agent's writable open verifies it in full), hold a head the original
// passed through, with the user key and the head file of that moment, and
// accept the next release as the original did.
func TestBackupWhileReleasing(t *testing.T) {
	s, dir := openTemp(t)
	if err := s.SetInitial([]byte("policy-0")); err != nil {
		t.Fatal(err)
	}
	const releases = 40
	root := t.TempDir()
	first, err := s.Backup(filepath.Join(root, "nested", "before")) // no release yet: head 0
	if err != nil || first.Head.Seq != 0 {
		t.Fatalf("backup before the first release: %+v %v", first, err)
	}
	backups := []BackupResult{first}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for v := uint64(1); v <= releases; v++ {
			doRelease(t, s, v, 1, fmt.Sprintf("u%d", v%7), fmt.Sprintf("w%d", v))
		}
	}()
	for i := 0; i < 8; i++ {
		b, err := s.Backup(filepath.Join(root, "nested", fmt.Sprintf("b%d", i)))
		if err != nil {
			t.Fatalf("backup %d: %v", i, err)
		}
		backups = append(backups, b)
		t.Logf("backup %d at head %d", i, b.Head.Seq)
	}
	wg.Wait()
	for _, b := range backups {
		if st, err := os.Stat(filepath.Join(b.Dir, userKeyFile)); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: user key %v %v", b.Dir, st, err)
		}
		var expect *HeadRef // a backup taken before the first release has no head to expect
		if b.Head.Seq > 0 {
			expect = &HeadRef{Seq: b.Head.Seq, Hash: b.Head.Hash}
		}
		c, err := Open(b.Dir, Options{MustExist: true, ExpectHead: expect})
		if err != nil {
			t.Fatalf("open backup at head %d: %v", b.Head.Seq, err)
		}
		if c.User("u1") != s.User("u1") {
			t.Fatal("the backup's user key differs")
		}
		if b.Head.Seq > 0 {
			e, err := s.entry(b.Head.Seq)
			if err != nil || e.Hash != b.Head.Hash {
				t.Fatalf("backup head %+v is not an entry of the original (%v)", b.Head, err)
			}
		}
		doRelease(t, c, b.Head.Version+1, 1, "u1")
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if backups[len(backups)-1].Head.Seq > releases {
		t.Fatalf("backup beyond the last release: %+v", backups[len(backups)-1].Head)
	}
	// The original is untouched by its backups.
	if rep, err := s.Verify(); err != nil || len(rep.Problems) > 0 {
		t.Fatalf("original after backups: %v %v", err, rep.Problems)
	}
	entries, err := os.ReadDir(filepath.Join(root, "nested"))
	if err != nil || len(entries) != len(backups) {
		t.Fatalf("backup root holds %d entries (%v), want %d (no partial directories left)", len(entries), err, len(backups))
	}
	_ = dir
}

// TestBackupRefusals: an existing destination is refused, so is a closed
// store, and nothing is left behind.
func TestBackupRefusals(t *testing.T) {
	s, _ := openTemp(t)
	dest := t.TempDir()
	if _, err := s.Backup(dest); !errors.Is(err, ErrInvalid) {
		t.Fatalf("existing destination: %v, want ErrInvalid", err)
	}
	s.Close()
	dest = filepath.Join(t.TempDir(), "b")
	if _, err := s.Backup(dest); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed store: %v, want ErrClosed", err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(dest)); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
}

// TestBackupCopiesEveryKey: a backup of a store larger than one copy batch
// (4 MiB) holds every snapshot byte for byte and verifies.
func TestBackupCopiesEveryKey(t *testing.T) {
	s, _ := openTemp(t)
	snaps := make([][]byte, 4)
	for v := range snaps {
		snaps[v] = bytes.Repeat([]byte{byte(v + 1)}, 3<<20)
		if _, err := s.Release(Release{Version: uint64(v + 1), Snapshot: snaps[v], Entry: releaseEntry(t, 1, 1, true), Users: []UserKey{s.User(fmt.Sprint(v))}}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := s.Backup(filepath.Join(t.TempDir(), "b"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Open(res.Dir, Options{MustExist: true, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for v, want := range snaps {
		got, err := c.get(snapKey(uint64(v + 1)))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("snapshot %d: %d bytes, %v", v+1, len(got), err)
		}
	}
	mustVerify(t, c)
}
