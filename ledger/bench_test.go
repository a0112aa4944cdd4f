package ledger

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkRelease measures one release (K = 32 users, a 20 KB snapshot)
// on the operating system's file system: the synced Pebble batch and the
// synced head record, against the same path without the head record (the
// write path before the head file existed), in the same run.
func BenchmarkRelease(b *testing.B) {
	for _, c := range []struct {
		name     string
		noRecord bool
	}{{"with-head-record", false}, {"without-head-record", true}} {
		b.Run(c.name, func(b *testing.B) {
			s, err := Open(b.TempDir(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			s.noHeadRecord = c.noRecord
			snap := make([]byte, 20<<10)
			entry := releaseEntry(&testing.T{}, 1, 32, false)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				users := make([]UserKey, 32)
				for j := range users {
					users[j] = s.User(fmt.Sprintf("u%d", (i*32+j)%5000))
				}
				if _, err := s.Release(Release{Version: uint64(i + 1), Snapshot: snap, Entry: entry, Users: users}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHeadRecord measures appending and syncing one head record alone.
func BenchmarkHeadRecord(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	h := Head{Seq: 1, Hash: fmt.Sprintf("%064x", 1), Version: 1}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.Seq++
		if err := s.heads.append(h); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen measures opening a ledger with n releases: writable (the
// read-only check, Pebble's recovery and the full Verify it runs) and
// read-only (the check of the head file and the user key only).
func BenchmarkOpen(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("releases=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			s, err := Open(dir, Options{})
			if err != nil {
				b.Fatal(err)
			}
			snap := make([]byte, 20<<10)
			entry := releaseEntry(&testing.T{}, 1, 32, false)
			start := time.Now()
			for i := 0; i < n; i++ {
				users := make([]UserKey, 32)
				for j := range users {
					users[j] = s.User(fmt.Sprintf("u%d", (i*32+j)%5000))
				}
				if _, err := s.Release(Release{Version: uint64(i + 1), Snapshot: snap, Entry: entry, Users: users}); err != nil {
					b.Fatal(err)
				}
			}
			s.Close()
			b.Logf("%d releases written in %v", n, time.Since(start))
			for _, ro := range []bool{false, true} {
				b.Run(fmt.Sprintf("read-only=%v", ro), func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						s, err := Open(dir, Options{ReadOnly: ro})
						if err != nil {
							b.Fatal(err)
						}
						s.Close()
					}
				})
			}
		})
	}
}

// BenchmarkLineage measures looking a file of 20000 records up in a ledger
// holding them, per record: by identity, as a charge does in a ledger
// written with content identity, and by identity and exact hash, as a
// public input's check does.
func BenchmarkLineage(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const n = 20000
	content, exact := recs("c", n), recs("x", n)
	if _, err := s.ChargeOffline(OfflineRun{File: "F", Records: content, Exact: exact, Entry: gpopeRun(&testing.T{}), Cap: Cap{Epsilon: 10, Delta: 1e-5}}); err != nil {
		b.Fatal(err)
	}
	for _, public := range []bool{false, true} {
		b.Run(fmt.Sprintf("public=%v", public), func(b *testing.B) {
			f := FileRecords{ID: "F", Records: content, Exact: exact, Public: public}
			for b.Loop() {
				if _, err := s.LineageOf(f); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
	}
}
