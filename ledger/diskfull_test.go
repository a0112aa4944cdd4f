package ledger

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dprl/internal/testutil"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Selectors of the files a full disk fails, by kind.
func isWAL(p string) bool      { return strings.HasSuffix(p, ".log") }
func isSST(p string) bool      { return strings.HasSuffix(p, ".sst") }
func isManifest(p string) bool { return strings.Contains(filepath.Base(p), "MANIFEST") }
func isHeads(p string) bool    { return filepath.Base(p) == headsFile }

// fullLedger is a ledger on a FullFS over the real disk, with releases
// 1..n written (and its memtable not flushed: the WAL holds them).
func fullLedger(t *testing.T, n int) (*testutil.FullFS, string, *Store) {
	t.Helper()
	fs := testutil.NewFullFS(vfs.Default)
	dir := t.TempDir()
	s, err := Open(dir, Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for v := 1; v <= n; v++ {
		doRelease(t, s, uint64(v), 1, fmt.Sprintf("u%d", v))
	}
	return fs, dir, s
}

// checkDiskFull fails the test unless err says the disk is full and is not
// corruption.
func checkDiskFull(t *testing.T, err error) {
	t.Helper()
	t.Log(err)
	switch {
	case err == nil:
		t.Fatal("no error on a full disk")
	case errors.Is(err, ErrCorrupt):
		t.Fatalf("a full disk reported as corruption: %v", err)
	case !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "disk is full") || !strings.Contains(err.Error(), "intact"):
		t.Fatalf("want ErrDiskFull saying the disk is full and the ledger intact, got %v", err)
	}
}

// verifyAt opens dir on the real disk and checks it verifies with head
// version want.
func verifyAt(t *testing.T, fs vfs.FS, dir string, want uint64) {
	t.Helper()
	s, err := Open(dir, Options{FS: fs})
	if err != nil {
		t.Fatalf("reopen after space was freed: %v", err)
	}
	defer s.Close()
	mustVerify(t, s)
	if h, _ := s.Head(); h.Version != want {
		t.Fatalf("head version %d, want %d", h.Version, want)
	}
}

// openWithin runs Open and fails the test if it takes longer than d.
func openWithin(t *testing.T, d time.Duration, dir string, o Options) (*Store, error) {
	t.Helper()
	type res struct {
		s   *Store
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := Open(dir, o)
		ch <- res{s, err}
	}()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-time.After(d):
		t.Fatalf("Open hangs on a full disk (more than %v)", d)
		return nil, nil
	}
}

// A WAL write that fails on a full disk is not corruption: the store says
// the disk is full, writes nothing, and after a restart with space the
// ledger verifies with every earlier release.
func TestDiskFullWAL(t *testing.T) {
	fs, dir, s := fullLedger(t, 3)
	fs.Fill(isWAL)
	_, err := s.Release(Release{Version: 4, Snapshot: []byte("policy-4"), Entry: releaseEntry(t, 1, 1, true), Users: []UserKey{s.User("u4")}})
	checkDiskFull(t, err)
	if err := s.Writable(); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Writable after a failed WAL write: %v", err)
	}
	s.Close()
	fs.Free()
	verifyAt(t, fs, dir, 3)
}

// A head record that cannot be written leaves its commit pending: later
// writes are refused as disk full (not as a version out of order), and
// once space is back the record is written and writes resume, in the same
// process.
func TestDiskFullHeadRecord(t *testing.T) {
	fs, dir, s := fullLedger(t, 3)
	fs.Fill(isHeads)
	_, err := s.Release(Release{Version: 4, Snapshot: []byte("policy-4"), Entry: releaseEntry(t, 1, 1, true), Users: []UserKey{s.User("u4")}})
	checkDiskFull(t, err)
	if h, _ := s.Head(); h.Version != 4 {
		t.Fatalf("head version %d: the release was committed before its head record", h.Version)
	}
	_, err = s.Release(Release{Version: 5, Snapshot: []byte("policy-5"), Entry: releaseEntry(t, 1, 1, true), Users: []UserKey{s.User("u5")}})
	checkDiskFull(t, err)
	if err := s.Writable(); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Writable while full: %v", err)
	}
	fs.Free()
	if err := s.Writable(); err != nil {
		t.Fatalf("Writable after space was freed: %v", err)
	}
	doRelease(t, s, 5, 1, "u5")
	mustVerify(t, s)
	s.Close()
	verifyAt(t, fs, dir, 5)
}

// A store whose write-ahead log must be flushed at open, on a disk that
// cannot take the table, fails within seconds with ErrDiskFull instead of
// retrying the flush forever, and opens once space is back.
func TestDiskFullOpenDoesNotHang(t *testing.T) {
	for _, c := range []struct {
		name  string
		match func(string) bool
	}{{"sst", isSST}, {"all", nil}} {
		t.Run(c.name, func(t *testing.T) {
			fs, dir, s := fullLedger(t, 20)
			s.Close()
			fs.Fill(c.match)
			s, err := openWithin(t, 10*time.Second, dir, Options{FS: fs})
			if err == nil {
				s.Close()
			}
			checkDiskFull(t, err)
			fs.Free()
			deadline := time.Now().Add(10 * time.Second)
			for {
				s, err := Open(dir, Options{FS: fs})
				if err == nil {
					mustVerify(t, s)
					s.Close()
					break
				}
				// An abandoned open may still hold the lock until its
				// flush, retried with backoff, succeeds.
				if !errors.Is(err, ErrLocked) || time.Now().After(deadline) {
					t.Fatal(err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			verifyAt(t, fs, dir, 20)
		})
	}
}
