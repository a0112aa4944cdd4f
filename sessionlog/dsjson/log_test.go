package dsjson

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"dprl/sessionlog"
	"dprl/space"
)

// TestLogRefusals: the DSJSON session log refuses, with
// sessionlog.ErrUnsupported and a reason naming the session, every
// session that is not one terminal step with a discrete action in range
// and a behaviour probability, and writes nothing for it: the sessions it
// accepts are the only lines of the file.
func TestLogRefusals(t *testing.T) {
	one := func(id string, mod func(*sessionlog.Session)) sessionlog.Session {
		s := sessionlog.Session{Session: id, User: "u", Steps: []sessionlog.Step{{Obs: []float64{0.5, -1}, Action: space.Action{Index: 2}, Reward: 1, LogP: math.Log(0.25)}}, Terminal: true}
		if mod != nil {
			mod(&s)
		}
		return s
	}
	for _, tc := range []struct {
		name string
		s    sessionlog.Session
		want string // "" accepted
	}{
		{"bandit decision", one("ok", nil), ""},
		{"two steps (a CartPole episode)", one("two", func(s *sessionlog.Session) { s.Steps = append(s.Steps, s.Steps[0]) }), `session "two": 2 steps`},
		{"no step", one("none", func(s *sessionlog.Session) { s.Steps = nil }), `session "none": 0 steps`},
		{"not terminal", one("trunc", func(s *sessionlog.Session) { s.Terminal, s.FinalObs = false, []float64{1, 2} }), `session "trunc": not terminal`},
		{"continuous action", one("cont", func(s *sessionlog.Session) { s.Steps[0].Action = space.Action{Vec: []float64{0.1}} }), `session "cont": a continuous action`},
		{"no probability", one("np", func(s *sessionlog.Session) { s.Steps[0].NoProb, s.Steps[0].LogP = true, math.NaN() }), `session "np": no behaviour probability`},
		{"action outside", one("big", func(s *sessionlog.Session) { s.Steps[0].Action.Index = 4 }), `session "big": action 4 outside the 4 actions`},
		{"non-finite observation", one("nan", func(s *sessionlog.Session) { s.Steps[0].Obs[0] = math.Inf(1) }), `session "nan": obs[0]`},
		{"control character in the id", one("a\x01b", nil), `id: control or invalid character`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w, err := NewRotatingWriter(dir, 4, sessionlog.RotatingOptions{})
			if err != nil {
				t.Fatal(err)
			}
			err = w.Write(&tc.s)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (!errors.Is(err, sessionlog.ErrUnsupported) || !errors.Is(err, ErrExport) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want ErrUnsupported naming %q", err, tc.want)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			files, err := w.Files()
			if err != nil {
				t.Fatal(err)
			}
			var got []sessionlog.Session
			for _, f := range files {
				if !strings.HasSuffix(f, LogExt) {
					t.Errorf("file %s", f)
				}
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				ss, _, err := readAll(string(b), ReaderOptions{SharedOnly: true})
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ss...)
			}
			if tc.want != "" {
				if len(files) != 0 {
					t.Errorf("a refused session left files %v", files)
				}
				return
			}
			if len(got) != 1 || got[0].Session != "ok" || got[0].Steps[0].Action.Index != 2 || got[0].Steps[0].Reward != 1 || math.Abs(got[0].Steps[0].LogP-math.Log(0.25)) > 1e-15 {
				t.Errorf("read back %+v", got)
			}
		})
	}
	if _, err := NewRotatingWriter(t.TempDir(), 0, sessionlog.RotatingOptions{}); err == nil {
		t.Error("0 actions accepted")
	}
}

// TestLogRotates: the DSJSON log rotates by size like the
// dprl.sessions.v1 log (it is the same writer), every closed file holding
// whole decisions in order, and only its own files are listed.
func TestLogRotates(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w, err := NewRotatingWriter(dir, 3, sessionlog.RotatingOptions{MaxBytes: 1000, Now: func() time.Time { now = now.Add(time.Millisecond); return now }})
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	for i := range n {
		s := sessionlog.Session{Session: "s" + string(rune('A'+i)), Steps: []sessionlog.Step{{Obs: []float64{float64(i)}, Action: space.Action{Index: i % 3}, Reward: float64(i % 2), LogP: math.Log(0.5)}}, Terminal: true}
		if err := w.Write(&s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/sessions-other.jsonl", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	files, err := w.Files()
	if err != nil || len(files) < 2 {
		t.Fatalf("files %v, %v: want a rotation", files, err)
	}
	i := 0
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if len(b) > 1000+200 {
			t.Errorf("%s: %d bytes", f, len(b))
		}
		ss, _, err := readAll(string(b), ReaderOptions{SharedOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ss {
			if s.Steps[0].Obs[0] != float64(i) {
				t.Fatalf("decision %d: %+v", i, s)
			}
			i++
		}
	}
	if i != n {
		t.Errorf("%d decisions read back, want %d", i, n)
	}
}
