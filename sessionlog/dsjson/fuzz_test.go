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

// FuzzDSJSON feeds arbitrary input to the reader (seeds: testdata/sample.dsjson's
// lines and testdata/fuzz/FuzzDSJSON). Whatever the input, the reader returns
// sessions or an error naming a line; every session it returns is one valid
// step (finite obs of the first decision's length, probability in (0, 1],
// action within the actions), and writing the sessions with sessionlog's
// writer and reading them back with its strict reader succeeds.
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
