package atomicfile

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// entries returns the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWrite(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB, several writes
	errBoom := errors.New("boom")
	tests := []struct {
		name    string
		old     []byte // existing content, nil: no file
		fn      func(w io.Writer) error
		perm    fs.FileMode
		wantErr error
		want    []byte // content after the call, nil: no file
	}{
		{name: "new file", fn: func(w io.Writer) error { _, err := w.Write(big); return err }, perm: 0o644, want: big},
		{name: "replaces", old: []byte("old"), fn: func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }, perm: 0o600, want: []byte("new")},
		{name: "empty", fn: func(io.Writer) error { return nil }, perm: 0o600, want: []byte{}},
		{name: "failing writer, no file", fn: func(w io.Writer) error { w.Write(big[:100]); return errBoom }, perm: 0o644, wantErr: errBoom},
		{name: "failing writer keeps old", old: []byte("old"), fn: func(w io.Writer) error { w.Write(big); return errBoom }, perm: 0o644, wantErr: errBoom, want: []byte("old")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "out.jsonl")
			if tt.old != nil {
				if err := os.WriteFile(path, tt.old, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := Write(path, tt.perm, tt.fn)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			got, rerr := os.ReadFile(path)
			switch {
			case tt.want == nil:
				if !errors.Is(rerr, fs.ErrNotExist) {
					t.Fatalf("file exists after a failed write (err %v, %d bytes)", rerr, len(got))
				}
			case rerr != nil:
				t.Fatal(rerr)
			case !bytes.Equal(got, tt.want):
				t.Fatalf("content: %d bytes, want %d", len(got), len(tt.want))
			}
			// Only the target (if any) is left: no temporary file.
			names := entries(t, dir)
			if wantN := map[bool]int{true: 0, false: 1}[tt.want == nil]; len(names) != wantN {
				t.Fatalf("directory holds %v", names)
			}
			if err == nil {
				st, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if st.Mode().Perm() != tt.perm {
					t.Fatalf("perm %v, want %v", st.Mode().Perm(), tt.perm)
				}
			}
		})
	}
}

func TestWriteMissingDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "out")
	if err := Write(path, 0o644, func(io.Writer) error { return nil }); err == nil {
		t.Fatal("no error for a missing directory")
	}
}

// TestCreateAbort checks the two-phase use: the temporary file exists
// between Create and Commit or Abort, and Abort removes it.
func TestCreateAbort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	f, err := Create(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("partial")); err != nil {
		t.Fatal(err)
	}
	if n := entries(t, dir); len(n) != 1 || n[0] == "out" {
		t.Fatalf("before commit: %v", n)
	}
	f.Abort()
	f.Abort() // idempotent
	if n := entries(t, dir); len(n) != 0 {
		t.Fatalf("after abort: %v", n)
	}
	if err := f.Commit(); err == nil {
		t.Fatal("commit after abort succeeded")
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("target exists after abort: %v", err)
	}

	g, err := Create(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(g, "done")
	if err := g.Commit(); err != nil {
		t.Fatal(err)
	}
	g.Abort() // no-op after commit
	if b, err := os.ReadFile(path); err != nil || string(b) != "done" {
		t.Fatalf("after commit: %q, %v", b, err)
	}
	if n := entries(t, dir); len(n) != 1 {
		t.Fatalf("after commit: %v", n)
	}
}

func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap")
	if err := WriteFile(path, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "abc" {
		t.Fatalf("%q, %v", b, err)
	}
}
