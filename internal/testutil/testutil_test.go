package testutil

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestCopyTree(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "copy")
	if err := os.MkdirAll(filepath.Join(src, "a", "b"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "a", "b", "f"), []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	MustCopyTree(t, src, dst)
	b, err := os.ReadFile(filepath.Join(dst, "a", "b", "f"))
	if err != nil || string(b) != "data" {
		t.Fatalf("copy: %q, %v", b, err)
	}
	info, err := os.Stat(filepath.Join(dst, "a", "b", "f"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", info.Mode(), err)
	}
	if err := CopyTree(filepath.Join(src, "missing"), dst); err == nil {
		t.Fatal("copying a missing tree succeeded")
	}
}

func TestWait(t *testing.T) {
	n := 0
	if err := Wait(time.Second, func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	}); err != nil || n != 3 {
		t.Fatalf("Wait = %v after %d checks, want nil after 3", err, n)
	}
	start := time.Now()
	err := Wait(20*time.Millisecond, func() error { return errors.New("never") })
	if err == nil || err.Error() != "never" || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("Wait on a false condition = %v after %v", err, time.Since(start))
	}
}

func TestLockedBuffer(t *testing.T) {
	var b LockedBuffer
	done := make(chan struct{})
	for range 4 {
		go func() {
			b.Write([]byte("line\n"))
			done <- struct{}{}
		}()
	}
	for range 4 {
		<-done
	}
	if b.Lines() != 4 || len(b.String()) != 20 {
		t.Fatalf("%d lines, %q", b.Lines(), b.String())
	}
}
