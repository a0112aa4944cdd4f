package ledger

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dprl/internal/testutil"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"
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
	if err := s.Close(); err != nil && (errors.Is(err, ErrCorrupt) || !errors.Is(err, ErrDiskFull)) {
		t.Errorf("close after a failed WAL write: %v", err)
	}
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

// fullCase is one disk-full case of the matrix: the error of the write
// the full disk failed, and what followed.
type fullCase struct {
	err      error
	inProc   bool // writes resumed in the same process once space was freed
	restart  bool // writes resumed after a reopen once space was freed
	verified bool // the ledger verified on the full disk, and after space was freed at the acknowledged head or one commit later
	hung     bool
}

// resumeAfterRestart closes s, frees fs, reopens dir (waiting out an
// abandoned open's lock), checks the ledger and one more release.
func resumeAfterRestart(t *testing.T, fs *testutil.FullFS, s *Store, dir string, acked uint64) (verified, resumed bool) {
	t.Helper()
	if s != nil {
		s.Close()
	}
	// dprl ledger verify, with the disk still full (but for an open this
	// process abandoned, which keeps the lock until its flush succeeds:
	// the agent's process exits on that error).
	if v, err := VerifyDir(dir, Options{FS: fs}, nil); !errors.Is(err, ErrLocked) && (err != nil || !v.OK) {
		t.Errorf("verify on the full disk: %+v %v", v, err)
		return false, false
	}
	fs.Free()
	var r *Store
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if r, err = Open(dir, Options{FS: fs}); err == nil || !errors.Is(err, ErrLocked) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Errorf("reopen with space: %v", err)
		return false, false
	}
	defer r.Close()
	rep, err := r.Verify()
	h, _ := r.Head()
	verified = err == nil && rep.OK() && (h.Version == acked || h.Version == acked+1)
	if !verified {
		t.Errorf("after a full disk: verify %v %v, head %d, acknowledged %d", rep.Problems, err, h.Version, acked)
	}
	_, err = r.Release(Release{Version: h.Version + 1, Snapshot: []byte("next"), Entry: releaseEntry(t, 1, 1, true), Users: []UserKey{r.User("next")}})
	return verified, err == nil
}

// resumeInProcess frees fs and waits for s to take writes again.
func resumeInProcess(t *testing.T, fs *testutil.FullFS, s *Store) bool {
	t.Helper()
	fs.Free()
	if testutil.Wait(10*time.Second, s.Writable) != nil {
		return false
	}
	h, _ := s.Head()
	_, err := s.Release(Release{Version: h.Version + 1, Snapshot: []byte("next"), Entry: releaseEntry(t, 1, 1, true), Users: []UserKey{s.User("next")}})
	return err == nil
}

// releaseUntilFull releases versions from h+1 on until one fails, and
// returns that error and the last acknowledged version.
func releaseUntilFull(t *testing.T, s *Store, size int) (error, uint64) {
	h, _ := s.Head()
	for v := h.Version + 1; v < h.Version+2000; v++ {
		_, err := s.Release(Release{Version: v, Snapshot: []byte(strings.Repeat("p", size)), Entry: releaseEntry(t, 1, 2, true), Users: []UserKey{s.User(fmt.Sprintf("a%d", v)), s.User(fmt.Sprintf("b%d", v))}})
		if err != nil {
			return err, v - 1
		}
	}
	return nil, h.Version + 2000
}

// TestDiskFullMatrix fills the disk at every write the ledger makes — the
// write-ahead log, the head file, a table flushed at run time and at open,
// a backup, a new ledger, and after N bytes of releases (with the file
// system's free space reported, as when the ledger fills the disk itself,
// and without, as when another process does) — and checks every case:
// the error says the disk is full and is never ErrCorrupt, nothing hangs,
// the ledger verifies, and writes resume in the process or after a
// restart once space is freed. The counts are in docs/ledger.md (The ledger,
// Integrity).
func TestDiskFullMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	type row struct {
		name  string
		cases int
		run   func(t *testing.T, i int) fullCase
	}
	rows := []row{
		{"write-ahead log (a release)", 3, func(t *testing.T, i int) (c fullCase) {
			fs, dir, s := fullLedger(t, i)
			fs.Fill(isWAL)
			c.err, _ = releaseUntilFull(t, s, 64)
			c.verified, c.restart = resumeAfterRestart(t, fs, s, dir, uint64(i))
			return c
		}},
		{"head file (a release)", 3, func(t *testing.T, i int) (c fullCase) {
			fs, dir, s := fullLedger(t, i)
			fs.Fill(isHeads)
			c.err, _ = releaseUntilFull(t, s, 64)
			c.inProc = resumeInProcess(t, fs, s)
			c.verified, c.restart = resumeAfterRestart(t, fs, s, dir, uint64(i+2))
			return c
		}},
		{"table flushed at run time", 3, func(t *testing.T, i int) (c fullCase) {
			fs, dir, s := fullLedger(t, i)
			fs.Fill(isSST)
			if _, err := s.db.AsyncFlush(); err != nil {
				t.Fatal(err)
			}
			if testutil.Wait(5*time.Second, func() error {
				if s.Writable() == nil {
					return errors.New("still writable")
				}
				return nil
			}) != nil {
				c.hung = true
			}
			c.err, _ = releaseUntilFull(t, s, 64)
			c.inProc = resumeInProcess(t, fs, s)
			c.verified, c.restart = resumeAfterRestart(t, fs, s, dir, uint64(i+1))
			return c
		}},
		{"table flushed at open", 3, func(t *testing.T, i int) (c fullCase) {
			fs, dir, s := fullLedger(t, 5*i)
			s.Close()
			fs.Fill(isSST)
			done := make(chan struct{})
			go func() {
				defer close(done)
				var s2 *Store
				if s2, c.err = Open(dir, Options{FS: fs}); c.err == nil {
					s2.Close()
				}
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				c.hung = true
				return c
			}
			c.verified, c.restart = resumeAfterRestart(t, fs, nil, dir, uint64(5*i))
			return c
		}},
		{"backup", 3, func(t *testing.T, i int) (c fullCase) {
			fs, dir, s := fullLedger(t, i)
			dest := filepath.Join(t.TempDir(), "backup")
			fs.Fill(func(p string) bool { return strings.HasPrefix(p, filepath.Dir(dest)) })
			_, c.err = s.Backup(dest)
			c.inProc = resumeInProcess(t, fs, s)
			if _, err := s.Backup(dest); err != nil {
				t.Errorf("backup with space: %v", err)
				c.inProc = false
			}
			c.verified, c.restart = resumeAfterRestart(t, fs, s, dir, uint64(i+1))
			return c
		}},
		{"new ledger", 1, func(t *testing.T, i int) (c fullCase) {
			fs := testutil.NewFullFS(vfs.Default)
			dir := t.TempDir()
			fs.Fill(nil)
			var s *Store
			if s, c.err = Open(dir, Options{FS: fs}); c.err == nil {
				s.Close()
			}
			fs.Free()
			s, err := Open(dir, Options{FS: fs})
			if err != nil {
				t.Errorf("create with space: %v", err)
				return c
			}
			c.verified, c.restart = resumeAfterRestart(t, fs, s, dir, 0)
			return c
		}},
	}
	// Releases filling the disk after N bytes: the free space reported
	// (the reserve refuses the write before Pebble fails), and not (the
	// write-ahead log or the head file fails part-way through a record).
	for _, honest := range []bool{true, false} {
		name, budgets := "after N bytes, free space reported", []int64{writeReserve, writeReserve + 3000, writeReserve + 40_000, writeReserve + 200_000}
		if !honest {
			name, budgets = "after N bytes, free space not reported", nil
			for n := int64(0); n < 24_000; n += 2411 {
				budgets = append(budgets, n)
			}
		}
		rows = append(rows, row{name, len(budgets), func(t *testing.T, i int) (c fullCase) {
			fs, dir, s := fullLedger(t, 2)
			fs.FillAfter(budgets[i-1], honest)
			var acked uint64
			c.err, acked = releaseUntilFull(t, s, 1000)
			if !errors.Is(c.err, ErrNeedsRestart) {
				if c.inProc = resumeInProcess(t, fs, s); c.inProc {
					h, _ := s.Head()
					acked = h.Version // acknowledged by resumeInProcess
				}
			}
			c.verified, c.restart = resumeAfterRestart(t, fs, s, dir, acked)
			return c
		}})
	}
	var table strings.Builder
	fmt.Fprintf(&table, "| write point | cases | disk full, not corruption | resumed in process | resumed after restart | verify passes |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		var full, inProc, restart, verified int
		for i := 1; i <= r.cases; i++ {
			c := r.run(t, i)
			switch {
			case c.hung:
				t.Errorf("%s, case %d: hung", r.name, i)
			case errors.Is(c.err, ErrCorrupt), !errors.Is(c.err, ErrDiskFull):
				t.Errorf("%s, case %d: want ErrDiskFull, got %v", r.name, i, c.err)
			default:
				full++
			}
			if !c.verified {
				t.Errorf("%s, case %d: verify failed after the disk was freed", r.name, i)
			} else {
				verified++
			}
			if !c.restart {
				t.Errorf("%s, case %d: no write after a restart with space", r.name, i)
			} else {
				restart++
			}
			if c.inProc {
				inProc++
			}
		}
		fmt.Fprintf(&table, "| %s | %d | %d | %d | %d | %d |\n", r.name, r.cases, full, inProc, restart, verified)
	}
	t.Logf("\n%s", table.String())
}

// A table file left by a flush cut short (a full disk, then SIGKILL) no
// longer blocks the next start: when the flush at open has no room, the
// store removes the table files its MANIFEST does not reference, then
// opens. Before, the partial table held the space the flush needed.
func TestDiskFullStrayTableRemoved(t *testing.T) {
	fs, dir, s := fullLedger(t, 20)
	s.Close()
	stray := filepath.Join(dir, pebbleDir, "000999.sst")
	if err := os.WriteFile(stray, make([]byte, 512<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	var wal int64
	names, _ := os.ReadDir(filepath.Join(dir, pebbleDir))
	for _, n := range names {
		if strings.HasSuffix(n.Name(), ".log") {
			st, _ := n.Info()
			wal += st.Size()
		}
	}
	fs.FillAfter(wal+spaceHeadroom-100<<10, true) // enough only without the stray table
	s, err := openWithin(t, 10*time.Second, dir, Options{FS: fs})
	if err != nil {
		t.Fatalf("open with a stray table on a nearly full disk: %v", err)
	}
	defer s.Close()
	mustVerify(t, s)
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("stray table still there: %v", err)
	}
}

// TestDiskFullManifestChild is the child of TestDiskFullManifest: it
// opens the ledger in $DPRL_DISKFULL_MANIFEST, fails every MANIFEST write
// and flushes, which ends the process from Pebble's flush goroutine.
func TestDiskFullManifestChild(t *testing.T) {
	dir := os.Getenv("DPRL_DISKFULL_MANIFEST")
	if dir == "" {
		t.Skip("child of TestDiskFullManifest")
	}
	fs := testutil.NewFullFS(vfs.Default)
	s, err := Open(dir, Options{FS: fs, Logger: zerolog.New(os.Stderr)})
	if err != nil {
		t.Fatal(err)
	}
	doRelease(t, s, 4, 1, "u4")
	fs.Fill(isManifest)
	if _, err := s.db.AsyncFlush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second)
	t.Fatal("still running")
}

// A MANIFEST write that fails on a full disk in Pebble's flush goroutine
// ends the process (Pebble allows no other outcome; the write reserve is
// what keeps the ledger's own writes from getting there): the last lines
// say the disk is full, the ledger verifies afterwards with every
// acknowledged release, and a restart with space resumes.
func TestDiskFullManifest(t *testing.T) {
	fs, dir, s := fullLedger(t, 3)
	s.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDiskFullManifestChild$")
	cmd.Env = append(os.Environ(), "DPRL_DISKFULL_MANIFEST="+dir)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "the disk is full") || strings.Contains(string(out), "still running") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	verified, resumed := resumeAfterRestart(t, fs, nil, dir, 4)
	if !verified || !resumed {
		t.Fatalf("after the child ended: verified %v, resumed %v", verified, resumed)
	}
}
