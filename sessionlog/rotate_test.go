package sessionlog

import (
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRotatingWriter(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w, err := NewRotatingWriter(dir, RotatingOptions{MaxBytes: 4000, MaxAge: time.Minute, Keep: 3, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	in := randomSessions(rand.New(rand.NewPCG(1, 1)), 60, 10, 4)
	for i := range in {
		now = now.Add(time.Second)
		if err := w.Write(&in[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := w.Files()
	if err != nil || len(files) != 3 {
		t.Fatalf("files %v %v, want 3 retained", files, err)
	}
	// Every retained file is complete and readable; sessions are in order.
	last := -1
	total := 0
	for _, f := range files {
		st, _ := os.Stat(f)
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v", f, st.Mode().Perm())
		}
		fh, _ := os.Open(f)
		r := NewReader(fh, ReaderOptions{Name: f})
		for {
			s, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			var idx int
			for i := range in {
				if in[i].Session == s.Session {
					idx = i
				}
			}
			if idx <= last {
				t.Errorf("order: %d after %d", idx, last)
			}
			last = idx
			total++
		}
		fh.Close()
	}
	if last != 59 || total == 0 || total >= 60 {
		t.Errorf("last %d, total %d", last, total)
	}
	// Age rotation: a minute later the next write opens a new file.
	w2, _ := NewRotatingWriter(t.TempDir(), RotatingOptions{MaxAge: time.Minute, Now: func() time.Time { return now }})
	w2.Write(&in[0])
	now = now.Add(2 * time.Minute)
	w2.Write(&in[1])
	w2.Close()
	if f, _ := w2.Files(); len(f) != 2 {
		t.Errorf("age rotation: %d files", len(f))
	}
}

// TestRotatingWriterFullDisk: a write that fails on a full disk (the
// current file is /dev/full) does not poison the writer: the next write,
// once space is back, lands whole in a new file. Before, the writer's
// buffer kept the error and every write failed until the file rotated
// (an hour by default).
func TestRotatingWriterFullDisk(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full")
	}
	dir := t.TempDir()
	w, err := NewRotatingWriter(dir, RotatingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in := randomSessions(rand.New(rand.NewPCG(2, 2)), 3, 200, 4)
	if err := w.Write(&in[0]); err != nil {
		t.Fatal(err)
	}
	// The disk fills: the current file now fails every write.
	w.mu.Lock()
	w.f.Close()
	w.f, w.counter.f = full, full
	w.mu.Unlock()
	if err := w.Write(&in[1]); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on a full disk: %v", err)
	}
	if err := w.Write(&in[2]); err != nil {
		t.Fatalf("write after the failed one: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := w.Files()
	var got []string
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		r := NewReader(fh, ReaderOptions{Name: f})
		for {
			s, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, s.Session)
		}
		fh.Close()
	}
	if len(got) != 2 || got[0] != in[0].Session || got[1] != in[2].Session {
		t.Fatalf("logged %v, want %s and %s", got, in[0].Session, in[2].Session)
	}
}

// TestRotatingWriterEncoder: a writer with its own encoder and extension
// writes the encoder's records to files of that extension, and a session
// the encoder refuses returns ErrUnsupported and touches no file (no file
// is opened for it, and the next session is written whole).
func TestRotatingWriterEncoder(t *testing.T) {
	dir := t.TempDir()
	enc := func(b []byte, s *Session) ([]byte, error) {
		if len(s.Steps) != 1 {
			return b, errors.New("one step only")
		}
		return append(append(b, s.Session...), '\n'), nil
	}
	w, err := NewRotatingWriter(dir, RotatingOptions{Encoder: enc, Ext: ".txt"})
	if err != nil {
		t.Fatal(err)
	}
	two := Session{Session: "two", Steps: make([]Step, 2)}
	if err := w.Write(&two); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "one step only") {
		t.Fatalf("refused session: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a refused session opened a file: %v", entries)
	}
	for _, id := range []string{"a", "b"} {
		if err := w.Write(&Session{Session: id, Steps: make([]Step, 1)}); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(&two); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("refused session: %v", err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := w.Files()
	if err != nil || len(files) != 1 || !strings.HasSuffix(files[0], ".txt") {
		t.Fatalf("files %v, %v", files, err)
	}
	if b, _ := os.ReadFile(files[0]); string(b) != "a\nb\n" {
		t.Errorf("file holds %q", b)
	}
	if _, err := NewRotatingWriter(dir, RotatingOptions{Ext: "txt"}); err == nil {
		t.Error("extension without a dot accepted")
	}
}
