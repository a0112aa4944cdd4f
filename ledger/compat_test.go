package ledger

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"dprl/internal/testutil"

	"github.com/cockroachdb/pebble/v2"
)

// TestOpensEarlierLedgers opens the data directories earlier versions of
// dprl wrote (testdata/compat, see its README): an upgrade must find every
// entry, user counter and dataset budget where the previous version left
// them, keep verifying, and accept new entries.
func TestOpensEarlierLedgers(t *testing.T) {
	const fixture = "testdata/compat/2026-11-25"
	type want struct {
		head     string
		version  uint64
		entries  int
		maxUser  int     // updates of the most-used user (0: no users)
		userEps  float64 // its epsilon at delta 1e-5
		dataset  string
		spent    float64 // the dataset's trajectory-unit total
		capEps   float64
		newEntry bool // write a cap change after the upgrade
	}
	for _, tc := range []struct {
		dir string
		w   want
	}{
		{"agent", want{head: "3:c33702b1bb549cc82a3edc017abca319c09390f2cbffff6c96cd2250a8e44380", version: 3, entries: 3, maxUser: 3, userEps: 8.385}},
		{"offline", want{head: "3:dc59b19c4c938d07cb8187d061f4d99caebec287f37e34dce20eeb9be736aba1", entries: 3,
			dataset: "records-sha256:b0c5cc24d4322b3631c2bc2e105a8a44df4ecb60f7f2a990a7b3322ec9b72bce", spent: 3.021, capEps: 8, newEntry: true}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), tc.dir)
			testutil.MustCopyTree(t, filepath.Join(fixture, tc.dir), dir)
			// A checkout does not keep modes; a backup restored with cp -a does.
			for _, f := range []string{"user.key", "ledger.heads"} {
				if err := os.Chmod(filepath.Join(dir, f), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			ref, err := ParseHeadRef(tc.w.head)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Open(dir, Options{MustExist: true, ExpectHead: &ref}) // a writable open verifies in full
			if err != nil {
				t.Fatalf("open the %s ledger: %v", fixture, err)
			}
			check := func(s *Store, entries int) {
				t.Helper()
				sum, err := s.Summary(1e-5)
				if err != nil {
					t.Fatal(err)
				}
				if sum.Head.Seq != uint64(entries) || len(sum.Entries) != entries || sum.Head.Version != tc.w.version {
					t.Fatalf("head %+v, %d entries; want seq %d, version %d", sum.Head, len(sum.Entries), entries, tc.w.version)
				}
				if tc.w.maxUser > 0 {
					if sum.MaxUser == nil || sum.MaxUser.Updates != tc.w.maxUser || math.Abs(sum.MaxUser.Epsilon-tc.w.userEps) > 1e-3 {
						t.Fatalf("most-used user %+v, want %d updates, epsilon %.3f", sum.MaxUser, tc.w.maxUser, tc.w.userEps)
					}
				}
				if tc.w.dataset != "" {
					u := sum.Datasets[tc.w.dataset].Units[UnitTrajectory]
					if u.Epsilon == nil || math.Abs(*u.Epsilon-tc.w.spent) > 1e-3 || u.CapEpsilon != tc.w.capEps {
						t.Fatalf("dataset unit %+v, want spent %.3f of cap %g", u, tc.w.spent, tc.w.capEps)
					}
				}
				rep, err := s.Verify()
				if err != nil || len(rep.Problems) > 0 {
					t.Fatalf("verify: %v %v", err, rep.Problems)
				}
			}
			check(s, tc.w.entries)
			entries := tc.w.entries
			if tc.w.newEntry {
				if _, err := s.SetCap(tc.w.dataset, UnitTrajectory, Cap{Epsilon: tc.w.capEps, Delta: 1e-5}, "after the upgrade"); err != nil {
					t.Fatal(err)
				}
				entries++
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(dir, Options{MustExist: true}); err != nil {
				t.Fatalf("reopen after the upgrade: %v", err)
			}
			defer s.Close()
			check(s, entries)
		})
	}
}

// TestLedgerFormatPinned keeps the pinned Pebble format at least the one
// whose WAL chunks carry the synced offset, which corruption detection
// relies on.
func TestLedgerFormatPinned(t *testing.T) {
	if ledgerFormat < pebble.FormatWALSyncChunks || ledgerFormat > pebble.FormatNewest {
		t.Fatalf("ledgerFormat %v: want FormatWALSyncChunks (%v) .. FormatNewest (%v)", ledgerFormat, pebble.FormatWALSyncChunks, pebble.FormatNewest)
	}
}
