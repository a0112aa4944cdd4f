// Package atomicfile writes files so that a reader, or the file system
// after a crash, sees either the old file or the complete new one, never a
// part of it.
//
// The content goes to a temporary file in the target's directory (a rename
// is atomic only within one file system), which is synced, given its
// permissions, renamed over the target, and the directory synced so that
// the rename itself is durable. On any failure the temporary file is
// removed and the target is left as it was.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Write writes path atomically with permissions perm: fn writes the
// content to w; the file appears at path, complete, only if fn and every
// step after it succeed. An existing file at path is replaced.
func Write(path string, perm fs.FileMode, fn func(w io.Writer) error) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := fn(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Commit()
}

// WriteFile writes data to path atomically with permissions perm: Write
// with a function that writes data, shaped like os.WriteFile.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// File is a pending atomic write: a temporary file that becomes path on
// Commit. Create it early to find out, before any work, that the target's
// directory is writable. It is not safe for concurrent use.
type File struct {
	path string
	perm fs.FileMode
	f    *os.File
	done bool // committed or aborted
}

// Create creates the temporary file of an atomic write of path (in path's
// directory, named "."+base+".tmp*") that Commit will give permissions
// perm.
func Create(path string, perm fs.FileMode) (*File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &File{path: path, perm: perm, f: f}, nil
}

// Write writes p to the temporary file.
func (a *File) Write(p []byte) (int, error) {
	if a.done {
		return 0, fmt.Errorf("write %s: %w", a.path, os.ErrClosed)
	}
	return a.f.Write(p)
}

// Commit syncs and closes the temporary file, sets its permissions, renames
// it to the target and syncs the directory. On failure before the rename
// the temporary file is removed and the target is untouched.
func (a *File) Commit() error {
	if a.done {
		return fmt.Errorf("write %s: %w", a.path, os.ErrClosed)
	}
	a.done = true
	tmp := a.f.Name()
	err := a.f.Sync()
	err = errors.Join(err, a.f.Close())
	if err == nil {
		err = os.Chmod(tmp, a.perm) // not subject to the umask
	}
	if err == nil {
		err = os.Rename(tmp, a.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	if err := syncDir(filepath.Dir(a.path)); err != nil {
		return fmt.Errorf("write %s: sync directory: %w", a.path, err)
	}
	return nil
}

// Abort closes and removes the temporary file; it does nothing after
// Commit or a previous Abort, so it can be deferred.
func (a *File) Abort() {
	if a.done {
		return
	}
	a.done = true
	a.f.Close()
	os.Remove(a.f.Name())
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}
