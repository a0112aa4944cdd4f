package ledger

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenInit: a new store is created in a missing or empty directory;
// a directory holding other files is refused with ErrNotEmpty unless
// Options.Init, and left as it was.
func TestOpenInit(t *testing.T) {
	for _, c := range []struct {
		name  string
		files []string
		init  bool
		want  error
	}{
		{"missing", nil, false, nil},
		{"empty", []string{}, false, nil},
		{"other files", []string{"notes.txt"}, false, ErrNotEmpty},
		{"other files with init", []string{"notes.txt"}, true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if c.files != nil {
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				for _, f := range c.files {
					if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			s, err := Open(dir, Options{Init: c.init})
			if !errors.Is(err, c.want) {
				t.Fatalf("Open: %v, want %v", err, c.want)
			}
			if err != nil {
				names, _ := os.ReadDir(dir)
				if len(names) != len(c.files) {
					t.Fatalf("a refused open left %d entries, want %d", len(names), len(c.files))
				}
				return
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			// Reopening the store it created needs no Init.
			s, err = Open(dir, Options{})
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			s.Close()
		})
	}
}
