package ledger

import (
	"os"
	"path/filepath"
	"testing"
)

// TestExists: a missing or empty directory and one of other files hold no
// ledger; a ledger's directory does, and so does one left with only its
// user key (a lost store is still a ledger's remains).
func TestExists(t *testing.T) {
	dir := t.TempDir()
	if ok, err := Exists(filepath.Join(dir, "missing")); ok || err != nil {
		t.Errorf("missing: %v %v", ok, err)
	}
	other := filepath.Join(dir, "other")
	os.MkdirAll(other, 0o700)
	os.WriteFile(filepath.Join(other, "notes.txt"), nil, 0o600)
	if ok, err := Exists(other); ok || err != nil {
		t.Errorf("other files: %v %v", ok, err)
	}
	led := filepath.Join(dir, "ledger")
	s, err := Open(led, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := Exists(led); !ok || err != nil {
		t.Errorf("open ledger: %v %v", ok, err)
	}
	s.Close()
	if err := os.RemoveAll(filepath.Join(led, pebbleDir)); err != nil {
		t.Fatal(err)
	}
	if ok, err := Exists(led); !ok || err != nil {
		t.Errorf("ledger without its store: %v %v", ok, err)
	}
}
