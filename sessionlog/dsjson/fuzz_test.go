package dsjson

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"strings"
	"testing"

	"dprl/sessionlog"
)

// roundTrip exports s over k actions and imports it again (SharedOnly):
// the same session, its probability within rounding.
func roundTrip(t *testing.T, s *sessionlog.Session, k int) {
	var b bytes.Buffer
	w := NewWriter(&b, k)
	if err := w.Write(s); err != nil {
		t.Fatalf("export of %+v: %v", s, err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got, err := NewReader(&b, ReaderOptions{SharedOnly: true}).Next()
	if err != nil {
		t.Fatalf("import of the export %s: %v", b.String(), err)
	}
	a, g := s.Steps[0], got.Steps[0]
	if got.Session != s.Session || len(g.Obs) != len(a.Obs) || g.Action.Index != a.Action.Index || g.Reward != a.Reward || math.Abs(g.LogP-a.LogP) > 1e-9*math.Max(1, -a.LogP) {
		t.Fatalf("round trip: %+v, then %+v", s, got)
	}
	for i := range a.Obs {
		if g.Obs[i] != a.Obs[i] {
			t.Fatalf("round trip: obs %v, then %v", a.Obs, g.Obs)
		}
	}
}

// FuzzDSJSON feeds arbitrary input to the reader (seeds: testdata/sample.dsjson's
// lines and testdata/fuzz/FuzzDSJSON). Whatever the input, the reader returns
// sessions or an error naming a line; every session it returns is one valid
// step (finite obs of the first decision's length, probability in (0, 1],
// action within the actions), exporting it and importing the export gives
// it back, and writing the sessions with sessionlog's writer and reading
// them back with its strict reader succeeds.
func FuzzDSJSON(f *testing.F) {
	b, err := os.ReadFile("testdata/sample.dsjson")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	for _, l := range strings.Split(string(b), "\n") {
		f.Add([]byte(l))
	}
	f.Add([]byte(base + "\n" + base))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, opt := range []ReaderOptions{{}, {IgnoreUnknown: true, SharedOnly: true}} {
			r := NewReader(bytes.NewReader(data), opt)
			var log bytes.Buffer
			w := sessionlog.NewWriter(&log)
			n := 0
			for {
				s, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					var le *sessionlog.LineError
					if !errors.As(err, &le) || le.Line < 1 {
						t.Fatalf("error without a line: %v", err)
					}
					break
				}
				n++
				st := s.Steps[0]
				if len(s.Steps) != 1 || len(st.Obs) != len(r.Features()) || !(st.LogP <= 0) || math.IsInf(st.LogP, 0) {
					t.Fatalf("bad session %+v", s)
				}
				if k := r.Actions(); st.Action.Index < 0 || (k > 0 && st.Action.Index >= k) {
					t.Fatalf("action %d of %d", st.Action.Index, k)
				}
				if err := w.Write(&s); err != nil {
					t.Fatal(err)
				}
				if k := max(r.Actions(), st.Action.Index+1); k <= 64 {
					roundTrip(t, &s, k) // each line lists all k actions
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			rd := sessionlog.NewReader(&log, sessionlog.ReaderOptions{})
			for m := 0; ; m++ {
				if _, err := rd.Next(); errors.Is(err, io.EOF) {
					if m != n {
						t.Fatalf("wrote %d sessions, read %d", n, m)
					}
					break
				} else if err != nil {
					t.Fatalf("written log unreadable: %v", err)
				}
			}
		}
	})
}
