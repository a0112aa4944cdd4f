package ledger

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"dprl/internal/testutil"
)

// corruptBase is a closed ledger data directory with releases (and, when
// flushed, offline entries and a flushed SST), an older copy of it taken
// part-way, and what an intact store holds.
type corruptBase struct {
	name    string
	dir     string // the data directory
	older   string // a copy of the data directory taken earlier
	head    Head
	entries int
	probe   UserState // the counter of user u0
}

// buildCorruptBase writes a ledger: releases (users drawn from a small pool,
// so counters repeat), with flush: an offline run, a cap change and a flush
// of the memtable to an SST part-way, then more releases. An older copy of
// the whole data directory is kept after the third release.
func buildCorruptBase(t testing.TB, name string, releases int, flush bool) corruptBase {
	t.Helper()
	root := t.TempDir()
	b := corruptBase{name: name, dir: filepath.Join(root, "data"), older: filepath.Join(root, "older")}
	open := func() *Store {
		s, err := Open(b.dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	if err := s.InitSpec([]byte(`{"obs_dim":4}`), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.SetInitial([]byte("policy-0")); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for v := 1; v <= releases; v++ {
		users := []string{fmt.Sprintf("u%d", rng.IntN(6)), fmt.Sprintf("w%d", v), fmt.Sprintf("x%d", v)}
		if v == 1 {
			users[0] = "u0"
		}
		if _, err := s.Release(Release{Version: uint64(v), Snapshot: []byte(strings.Repeat(fmt.Sprintf("policy-%d;", v), 200)),
			Entry: releaseEntry(t.(*testing.T), 1+rng.Float64(), len(users), false), Users: keysOf(s, users)}); err != nil {
			t.Fatal(err)
		}
		if v == 3 {
			s.Close()
			testutil.MustCopyTree(t, b.dir, b.older)
			s = open()
		}
		if flush && v == releases/2 {
			run := gpopeRun(t.(*testing.T))
			if _, err := s.ChargeOffline(OfflineRun{File: "F", Records: recs("f", 50), Entry: run, Cap: Cap{Epsilon: 100, Delta: 1e-5}, CapGiven: true}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.SetCap("F", UnitTrajectory, Cap{Epsilon: 200, Delta: 1e-5}, "test"); err != nil {
				t.Fatal(err)
			}
			if err := s.db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	var err error
	if b.head, err = s.Head(); err != nil {
		t.Fatal(err)
	}
	r, err := s.Verify()
	if err != nil || !r.OK() {
		t.Fatalf("base verify: %v %+v", err, r)
	}
	b.entries = r.Entries
	if b.probe, err = s.UserState(s.User("u0")); err != nil || b.probe.Updates == 0 {
		t.Fatalf("probe user: %+v %v", b.probe, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return b
}

func keysOf(s *Store, users []string) []UserKey {
	keys := make([]UserKey, len(users))
	for i, u := range users {
		keys[i] = s.User(u)
	}
	return keys
}

// damage is one corruption of a copy of a data directory.
type damage struct {
	file  string // relative to the data directory ("" for the directory)
	kind  string // flip, truncate, delete, older
	apply func(dir string) error
}

// damages lists the corruptions of every file of base: single-byte XORs at
// evenly spread offsets and a seeded random sample (perFile of each), and
// truncations, deletion and an older copy of each file; plus an older copy
// of the whole ledger/ directory.
func damages(t testing.TB, b corruptBase, spread, random int, rng *rand.Rand) []damage {
	t.Helper()
	var files []string
	filepath.WalkDir(b.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(b.dir, p)
			files = append(files, rel)
		}
		return nil
	})
	sort.Strings(files)
	var out []damage
	for _, f := range files {
		st, err := os.Stat(filepath.Join(b.dir, f))
		if err != nil {
			t.Fatal(err)
		}
		n := st.Size()
		var offs []int64
		if n > 0 {
			for i := 0; i < spread; i++ {
				offs = append(offs, int64(i)*(n-1)/int64(max(spread-1, 1)))
			}
			for i := 0; i < random; i++ {
				offs = append(offs, rng.Int64N(n))
			}
			offs = append(offs, n-1)
		}
		slices.Sort(offs)
		offs = slices.Compact(offs)
		for _, off := range offs {
			mask := byte(1 + rng.IntN(255))
			out = append(out, damage{file: f, kind: fmt.Sprintf("flip@%d^%#02x", off, mask), apply: func(dir string) error {
				p := filepath.Join(dir, f)
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				data[off] ^= mask
				return os.WriteFile(p, data, 0o600)
			}})
		}
		if n > 0 {
			for _, l := range slices.Compact([]int64{0, n / 2, n - 1, rng.Int64N(n)}) {
				out = append(out, damage{file: f, kind: fmt.Sprintf("truncate@%d", l), apply: func(dir string) error {
					return os.Truncate(filepath.Join(dir, f), l)
				}})
			}
		}
		out = append(out, damage{file: f, kind: "delete", apply: func(dir string) error { return os.Remove(filepath.Join(dir, f)) }})
		if old, err := os.ReadFile(filepath.Join(b.older, f)); err == nil {
			cur, _ := os.ReadFile(filepath.Join(b.dir, f))
			if string(old) != string(cur) {
				out = append(out, damage{file: f, kind: "older copy", apply: func(dir string) error {
					return os.WriteFile(filepath.Join(dir, f), old, 0o600)
				}})
			}
		}
	}
	out = append(out, damage{file: "ledger/", kind: "older copy", apply: func(dir string) error {
		if err := os.RemoveAll(filepath.Join(dir, pebbleDir)); err != nil {
			return err
		}
		testutil.MustCopyTree(t, filepath.Join(b.older, pebbleDir), filepath.Join(dir, pebbleDir))
		return nil
	}})
	out = append(out, damage{file: "ledger/", kind: "delete", apply: func(dir string) error {
		return os.RemoveAll(filepath.Join(dir, pebbleDir))
	}})
	return out
}

// Outcomes of a corruption.
const (
	outIntact   = "intact"    // verify OK with every entry and the same head; the store opens
	outDetected = "detected"  // verify fails with a reason and the store refuses to open for writing
	outSilent   = "SILENT"    // verify OK with a shorter or different ledger
	outPanic    = "PANIC"     // verify or open panicked
	outStarts   = "STARTS"    // verify fails but the store opens for writing (the agent would start)
	outRefuses  = "REFUSES"   // verify OK and intact but the store refuses to open for writing
	outKeyLost  = "CAPSRESET" // verify OK but a user's counter reads as another's (the user key changed)
	outUnclear  = "UNCLEAR"   // refused, but not with ErrCorrupt
	outResumes  = "SHORTER"   // the store opens for writing at a shorter head
)

// judge classifies a damaged data directory: verify on one copy (read-only,
// as dprl ledger verify), a writable open on another (as the agent).
func judge(b corruptBase, d damage, tmp string) (string, string) {
	vdir, adir := filepath.Join(tmp, "v"), filepath.Join(tmp, "a")
	for _, dir := range []string{vdir, adir} {
		if err := testutil.CopyTree(b.dir, dir); err != nil {
			return "ERROR", err.Error()
		}
		if err := d.apply(dir); err != nil {
			return "ERROR", err.Error()
		}
	}
	vOK, vHead, vEntries, vProbe, vMsg, vPanic := runVerify(vdir)
	aErr, aHead, aPanic := runAgentOpen(adir)
	switch {
	case vPanic || aPanic:
		return outPanic, vMsg
	case vOK && vProbe != b.probe:
		return outKeyLost, fmt.Sprintf("user u0: %+v, was %+v", vProbe, b.probe)
	case vOK && (vEntries != b.entries || vHead != b.head):
		return outSilent, fmt.Sprintf("verify OK with %d of %d entries, head %d", vEntries, b.entries, vHead.Seq)
	case vOK && aErr != nil:
		return outRefuses, aErr.Error()
	case vOK && aHead != b.head:
		return outResumes, fmt.Sprintf("opens at head %d of %d", aHead.Seq, b.head.Seq)
	case vOK:
		return outIntact, ""
	case aErr == nil && aHead != b.head:
		return outResumes, fmt.Sprintf("verify: %s; opens at head %d of %d", vMsg, aHead.Seq, b.head.Seq)
	case aErr == nil:
		return outStarts, vMsg
	case !errors.Is(aErr, ErrCorrupt):
		return outUnclear, aErr.Error()
	default:
		return outDetected, vMsg
	}
}

// runVerify is dprl ledger verify: a read-only open and Verify.
func runVerify(dir string) (ok bool, h Head, entries int, probe UserState, msg string, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			panicked, msg = true, fmt.Sprint(r)
		}
	}()
	s, err := Open(dir, Options{MustExist: true, ReadOnly: true})
	if err != nil {
		return false, Head{}, 0, probe, err.Error(), false
	}
	defer s.Close()
	r, err := s.Verify()
	if err != nil {
		return false, Head{}, 0, probe, err.Error(), false
	}
	if !r.OK() {
		return false, r.Head, r.Entries, probe, strings.Join(r.Problems, "; "), false
	}
	if probe, err = s.UserState(s.User("u0")); err != nil {
		return false, r.Head, r.Entries, probe, err.Error(), false
	}
	return true, r.Head, r.Entries, probe, "", false
}

// TestMain lets the test binary open a store for writing in a child process
// (DPRL_LEDGER_OPEN_CHILD=DIR), so that a panic on a background goroutine
// of the store is measured rather than ending the test.
func TestMain(m *testing.M) {
	if dir := os.Getenv("DPRL_LEDGER_OPEN_CHILD"); dir != "" {
		err, h, panicked := runAgentOpenInProcess(dir)
		switch {
		case panicked:
			fmt.Println("PANIC", err)
		case err != nil:
			fmt.Println("ERR", err)
		default:
			fmt.Println("OK", h.Seq, h.Hash, h.Version)
		}
		// Give background work (compactions) time to run into damage.
		time.Sleep(200 * time.Millisecond)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runAgentOpen opens the store for writing, as the agent does: in a child
// process when DPRL_CORRUPT_ISOLATE is set (to measure stores whose
// background goroutines panic), else in this process.
func runAgentOpen(dir string) (err error, h Head, panicked bool) {
	if os.Getenv("DPRL_CORRUPT_ISOLATE") == "" {
		return runAgentOpenInProcess(dir)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DPRL_LEDGER_OPEN_CHILD="+dir)
	out, runErr := cmd.Output()
	line := strings.TrimSpace(string(out))
	switch {
	case runErr != nil || strings.HasPrefix(line, "PANIC"):
		return fmt.Errorf("child: %v: %.200s", runErr, line), Head{}, true
	case strings.HasPrefix(line, "ERR "):
		return fmt.Errorf("%s", line[4:]), Head{}, false
	}
	fmt.Sscanf(line, "OK %d %s %d", &h.Seq, &h.Hash, &h.Version)
	return nil, h, false
}

// runAgentOpenInProcess opens the store for writing, as the agent does.
func runAgentOpenInProcess(dir string) (err error, h Head, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			panicked, err = true, fmt.Errorf("panic: %v", r)
		}
	}()
	s, err := Open(dir, Options{})
	if err != nil {
		return err, Head{}, false
	}
	defer s.Close()
	h, err = s.Head()
	return err, h, false
}

// TestCorruptionMatrix damages every file of a ledger's data directory
// (single-byte XORs at spread and random offsets, truncations, deletion,
// older copies) and requires each outcome to be intact or detected: never
// a silently shorter ledger, a panic, or an agent that starts on a store
// verify rejects. DPRL_LONG=1 tries many more offsets.
func TestCorruptionMatrix(t *testing.T) {
	spread, random := 6, 4
	if os.Getenv("DPRL_LONG") != "" {
		spread, random = 40, 60
	}
	seed := uint64(1)
	rng := rand.New(rand.NewPCG(seed, 17))
	for _, base := range []struct {
		name  string
		n     int
		flush bool
	}{{"wal-only", 8, false}, {"flushed", 10, true}} {
		b := buildCorruptBase(t, base.name, base.n, base.flush)
		counts := map[string]map[string]int{}
		var bad []string
		for i, d := range damages(t, b, spread, random, rng) {
			out, msg := judge(b, d, filepath.Join(t.TempDir(), fmt.Sprint(i)))
			f := fileClass(d.file)
			kind := strings.SplitN(d.kind, "@", 2)[0]
			k := f + " " + kind
			if counts[k] == nil {
				counts[k] = map[string]int{}
			}
			counts[k][out]++
			if out != outIntact && out != outDetected {
				msg, _, _ = strings.Cut(msg, "\n")
				bad = append(bad, fmt.Sprintf("%s %s %s: %s: %.300s", b.name, d.file, d.kind, out, msg))
			}
		}
		keys := make([]string, 0, len(counts))
		for k := range counts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		outs := []string{outIntact, outDetected, outSilent, outResumes, outStarts, outRefuses, outKeyLost, outUnclear, outPanic}
		t.Logf("%s: %-26s %s", b.name, "file kind", strings.Join(outs, " "))
		for _, k := range keys {
			var cells []string
			for _, o := range outs {
				cells = append(cells, fmt.Sprintf("%*d", len(o), counts[k][o]))
			}
			t.Logf("%s: %-26s %s", b.name, k, strings.Join(cells, " "))
		}
		for _, s := range bad {
			t.Errorf("%s", s)
		}
	}
}

// fileClass names a file by its kind (000004.log -> *.log).
func fileClass(f string) string {
	base := filepath.Base(f)
	switch {
	case strings.HasSuffix(base, ".log"):
		return "ledger/*.log"
	case strings.HasSuffix(base, ".sst"):
		return "ledger/*.sst"
	case strings.HasPrefix(base, "MANIFEST-"):
		return "ledger/MANIFEST-*"
	case strings.HasPrefix(base, "OPTIONS-"):
		return "ledger/OPTIONS-*"
	case strings.HasPrefix(base, "marker."):
		return "ledger/marker.*"
	}
	return f
}
