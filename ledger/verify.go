package ledger

import (
	"fmt"
	"math"
	"reflect"
)

// Report is the result of Verify.
type Report struct {
	Head        Head     `json:"head"`
	Entries     int      `json:"entries"`
	Releases    int      `json:"releases"`
	OfflineRuns int      `json:"offline_runs"`
	Users       int      `json:"users"`
	Datasets    int      `json:"datasets"`
	Problems    []string `json:"problems"`
}

// OK reports whether Verify found no problem.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// epsTolerance is the relative difference allowed between a recorded and a
// recomputed epsilon (the computation is deterministic; this absorbs only
// the last bits of floating-point formatting).
const epsTolerance = 1e-9

// Verify recomputes the hash chain, every entry's epsilon from its recorded
// parameters, the head pointer, the snapshots the releases pay for, the user
// counters and the dataset totals, and lists every mismatch in the report.
// The error is for failures to read the store.
func (s *Store) Verify() (Report, error) {
	var r Report
	problem := func(format string, args ...any) { r.Problems = append(r.Problems, fmt.Sprintf(format, args...)) }
	head, err := s.Head()
	if err != nil {
		return r, err
	}
	r.Head = head
	users := map[UserKey]*UserState{}
	datasets := map[string]*DatasetState{}
	var prev Entry
	var version uint64
	err = s.Entries(func(e Entry) error {
		r.Entries++
		if e.Seq != prev.Seq+1 {
			problem("entry %d follows entry %d", e.Seq, prev.Seq)
		}
		if e.PrevHash != prev.Hash {
			problem("entry %d: prev_hash %.12s does not match entry %d's hash %.12s", e.Seq, e.PrevHash, prev.Seq, prev.Hash)
		}
		if h, err := e.computeHash(); err != nil || h != e.Hash {
			problem("entry %d: hash %.12s does not match its contents (%.12s)", e.Seq, e.Hash, h)
		}
		if eps, err := e.recompute(); err != nil {
			problem("entry %d: epsilon cannot be recomputed: %v", e.Seq, err)
		} else if math.Abs(eps-e.Epsilon) > epsTolerance*math.Max(eps, 1e-300) {
			problem("entry %d: recorded epsilon %.10g, recomputed %.10g from its parameters", e.Seq, e.Epsilon, eps)
		}
		switch e.Kind {
		case KindRelease:
			r.Releases++
			if e.PolicyVersion != version+1 {
				problem("entry %d: releases version %d after version %d", e.Seq, e.PolicyVersion, version)
			}
			version = e.PolicyVersion
			if _, err := s.Snapshot(e.PolicyVersion); err != nil {
				problem("entry %d: %v", e.Seq, err)
			}
			z, err := e.userZ()
			if err != nil {
				problem("entry %d: %v", e.Seq, err)
				break
			}
			for _, u := range e.Users {
				st := users[u]
				if st == nil {
					st = &UserState{}
					users[u] = st
				}
				st.Updates++
				st.SumInvZ2 += 1 / (z * z)
				st.LastVersion = e.PolicyVersion
			}
		case KindOffline:
			r.OfflineRuns++
			d := datasets[e.DatasetID]
			if d == nil {
				d = &DatasetState{}
				datasets[e.DatasetID] = d
			}
			d.Runs++
			d.Events = append(d.Events, e.Events...)
			d.Fixed = append(d.Fixed, e.Fixed...)
		default:
			problem("entry %d: unknown kind %q", e.Seq, e.Kind)
		}
		prev = e
		return nil
	})
	if err != nil {
		return r, err
	}
	if head.Seq != prev.Seq || head.Hash != prev.Hash {
		problem("head (seq %d, hash %.12s) does not point at the last entry (seq %d, hash %.12s)", head.Seq, head.Hash, prev.Seq, prev.Hash)
	}
	if head.Version != version {
		problem("head version %d, last released version %d", head.Version, version)
	}
	stored := map[UserKey]bool{}
	err = s.Users(func(k UserKey, st UserState) error {
		r.Users++
		stored[k] = true
		want := users[k]
		if want == nil {
			problem("user %s has a counter but no entry", k)
			return nil
		}
		if st.Updates != want.Updates || st.LastVersion != want.LastVersion ||
			math.Abs(st.SumInvZ2-want.SumInvZ2) > 1e-12*want.SumInvZ2 {
			problem("user %s: counter %+v, entries give %+v", k, st, *want)
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	for k := range users {
		if !stored[k] {
			problem("user %s took part in releases but has no counter", k)
		}
	}
	for id, want := range datasets {
		r.Datasets++
		got, err := s.Dataset(id)
		if err != nil {
			return r, err
		}
		if got.Runs != want.Runs || !reflect.DeepEqual(got.Events, want.Events) || !reflect.DeepEqual(got.Fixed, want.Fixed) {
			problem("dataset %s: stored total (%d runs) does not match its entries (%d runs)", id, got.Runs, want.Runs)
		}
	}
	return r, nil
}
