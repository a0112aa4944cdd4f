package sessionlog

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// countingReader is an endless log: head, then good records forever. It
// counts the bytes it hands out.
type countingReader struct {
	head []byte
	tail []byte
	pos  int
	read int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		var src []byte
		if c.pos < len(c.head) {
			src = c.head[c.pos:]
		} else {
			src = c.tail[(c.pos-len(c.head))%len(c.tail):]
		}
		k := copy(p[n:], src)
		n += k
		c.pos += k
	}
	c.read += int64(n)
	return n, nil
}

// TestScanStopsAtBadLine checks that a log bad at line 2 is refused at line
// 2, naming the line and the field, after reading a bounded prefix: the
// reader asks for at most its 64 KiB buffer beyond the bad line, even when
// the log goes on forever.
func TestScanStopsAtBadLine(t *testing.T) {
	good := `{"session":"a","steps":[{"obs":[1,2],"action":0,"reward":1,"prob":0.5}],"terminal":true}` + "\n"
	cases := []struct {
		name, line2, want string
		check             func(*Session) error
	}{
		{"syntax", `{"session":"b",` + "\n", "in.jsonl:2: sessionlog: bad session record", nil},
		{"duplicate key", `{"session":"b","steps":[{"obs":[1,2],"obs":[3,4],"action":0,"reward":1,"prob":0.5}],"terminal":true}` + "\n",
			`in.jsonl:2: sessionlog: bad session record: steps[0]: duplicate key "obs"`, nil},
		{"missing prob", `{"session":"b","steps":[{"obs":[1,2],"action":0,"reward":1}],"terminal":true}` + "\n",
			"in.jsonl:2: sessionlog: bad session record: steps[0].prob: missing", nil},
		{"caller's check", `{"session":"b","steps":[{"obs":[1,2],"action":0,"reward":1,"prob":0.5}],"terminal":false}` + "\n",
			"in.jsonl:2: not terminal", func(s *Session) error {
				if !s.Terminal {
					return errors.New("not terminal")
				}
				return nil
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &countingReader{head: []byte(good + c.line2), tail: []byte(good)}
			_, err := scanIndex(r, ReaderOptions{Name: "in.jsonl"}, c.check)
			var le *LineError
			if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want a LineError at line 2 containing %q", err, c.want)
			}
			if limit := int64(len(good) + len(c.line2) + 64<<10); r.read > limit {
				t.Errorf("read %d bytes, want at most %d", r.read, limit)
			}
		})
	}
}

func writeLog(t *testing.T, path string, ss []Session, sep string) {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := range ss {
		if err := w.Write(&ss[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	data := strings.ReplaceAll(buf.String(), "\n", sep)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestIndex checks the index of a log: its id and records are those of the
// sessions written, Each and Open read back exactly those sessions (also
// with CRLF line ends and blank lines), and a log edited after the scan is
// ErrChanged, never read as different data.
func TestIndex(t *testing.T) {
	defer func(b int) { indexBlock = b }(indexBlock)
	indexBlock = 7 // 40 records: five full blocks and a partial one
	rng := rand.New(rand.NewPCG(5, 6))
	ss := randomSessions(rng, 40, 10, 3)
	wantID, wantContent := SessionsID(ss)
	wantRecs := SessionsExact(ss)
	for _, sep := range []string{"\n", "\r\n\n"} {
		path := filepath.Join(t.TempDir(), "log.jsonl")
		writeLog(t, path, ss, sep)
		ix, err := ScanLog(path, ReaderOptions{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ix.ID() != wantID || ix.Len() != len(ss) || ix.Spec().ObsDim != 3 {
			t.Fatalf("id %s len %d spec %+v, want %s %d", ix.ID(), ix.Len(), ix.Spec(), wantID, len(ss))
		}
		for i := range wantRecs {
			if ix.Records()[i] != wantContent[i] || ix.Exact()[i] != wantRecs[i] {
				t.Fatalf("record %d hash differs", i)
			}
		}
		n := 0
		if err := ix.Each(func(i int, s *Session) error {
			if i != n || HashRecord(s) != wantRecs[i] || s.Session != ss[i].Session {
				t.Fatalf("Each: record %d (%d) is %q", i, n, s.Session)
			}
			n++
			return nil
		}); err != nil || n != len(ss) {
			t.Fatalf("Each: %d records, %v", n, err)
		}
		rr, err := ix.Open()
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range []int{39, 0, 17, 17, 3, 34, 35, 6, 7} {
			s, err := rr.Read(i)
			if err != nil || HashRecord(&s) != wantRecs[i] {
				t.Fatalf("Read(%d): %q %v", i, s.Session, err)
			}
		}
		if _, err := rr.Read(40); err == nil {
			t.Error("Read past the end: no error")
		}
		// An error of the caller names the line.
		err = ix.Each(func(i int, s *Session) error {
			if i == 2 {
				return errors.New("stop here")
			}
			return nil
		})
		var le *LineError
		wantLine := 3
		if sep != "\n" {
			wantLine = 5
		}
		if !errors.As(err, &le) || le.Line != wantLine || !strings.Contains(err.Error(), "stop here") {
			t.Errorf("Each error: %v, want line %d", err, wantLine)
		}

		// Edit record 5 in place (same length, still valid) and append one.
		data, _ := os.ReadFile(path)
		lines := strings.SplitAfter(string(data), "\n")
		k := 5
		if sep != "\n" {
			k = 10
		}
		edited := strings.Replace(lines[k], `"s5"`, `"t5"`, 1)
		if edited == lines[k] {
			t.Fatalf("line %d: %q", k, lines[k])
		}
		lines[k] = edited
		if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := rr.Read(5); !errors.Is(err, ErrChanged) {
			t.Errorf("Read of an edited record: %v, want ErrChanged", err)
		}
		if _, err := rr.Read(4); err != nil {
			t.Errorf("Read of an unchanged record: %v", err)
		}
		if err := ix.Each(func(int, *Session) error { return nil }); !errors.Is(err, ErrChanged) {
			t.Errorf("Each over an edited log: %v, want ErrChanged", err)
		}
		rr.Close()
		writeLog(t, path, append(ss[:len(ss):len(ss)], ss[0]), sep)
		if err := ix.Each(func(int, *Session) error { return nil }); !errors.Is(err, ErrChanged) {
			t.Errorf("Each over a longer log: %v, want ErrChanged", err)
		}
	}
	if _, err := ScanLog(t.TempDir(), ReaderOptions{}, nil); err == nil || !strings.Contains(err.Error(), "regular file") {
		t.Errorf("a directory: %v", err)
	}
	if ix, err := scanIndex(strings.NewReader("\n\n"), ReaderOptions{}, nil); err != nil || ix.Len() != 0 {
		t.Errorf("empty log: %v", err)
	}
}

// BenchmarkHashRecord measures the record hash on CartPole-like sessions
// (64 steps, 4-dim observations).
func BenchmarkHashRecord(b *testing.B) {
	ss := randomSessions(rand.New(rand.NewPCG(3, 4)), 100, 64, 4)
	b.ReportAllocs()
	for b.Loop() {
		for i := range ss {
			HashRecord(&ss[i])
		}
	}
	b.ReportMetric(float64(b.N*len(ss))/b.Elapsed().Seconds(), "records/s")
}

// TestRecordHashGolden pins the records' identity and the dataset id, and
// the exact hash and the legacy id that ledgers written before ContentHash
// hold: a change of either encoding (or of what the reader parses) would
// give every dataset a fresh budget.
func TestRecordHashGolden(t *testing.T) {
	ix, err := ScanLog("testdata/good.jsonl", ReaderOptions{OptionalProb: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "records-sha256:a93287bc95e54d88338d60bef79546f424bc2ebf913aabc01ebefc67e1d9aa59"; ix.LegacyID() != want {
		t.Errorf("testdata/good.jsonl: legacy id %s, want %s", ix.LegacyID(), want)
	}
	if want := "records-sha256:18de34244aaf27683551f5f8b7bb35818f2db92f40e4a6a7b499aad0d570495c"; ix.ID() != want {
		t.Errorf("testdata/good.jsonl: id %s, want %s", ix.ID(), want)
	}
	ss := randomSessions(rand.New(rand.NewPCG(11, 12)), 20, 30, 3)
	ss[3].Expert = "e1"
	ss[4].Steps[0].NoProb = true
	ss[5].Steps[1].Action.Vec = []float64{0.5, -1}
	if id := RecordsID(SessionsExact(ss)); id != "records-sha256:98c6fd626803ba944c4179c6a8085afc7f2fd40776a98bb78e4945afc9f73ea2" {
		t.Errorf("random sessions, legacy: %s", id)
	}
	if id, _ := SessionsID(ss); id != "records-sha256:243d1c0b4cfa47fc12625dbdf6f682c77c73c84168ad273d76fb72056f29cb8f" {
		t.Errorf("random sessions: %s", id)
	}
}
