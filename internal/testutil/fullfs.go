package testutil

import (
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// FullFS is a Pebble file system whose writes fail with ENOSPC, as on a
// full disk, while it is filled: writes, positioned writes and
// preallocations of the files its match selects fail, and GetDiskUsage
// reports no space left when every file is selected. Creating, renaming
// and reading files keep working, as they do on a real full disk (a new
// file needs no data block). It needs no root, unlike a small tmpfs.
type FullFS struct {
	vfs.FS
	mu      sync.Mutex
	match   func(path string) bool // nil: not full
	all     bool
	refused atomic.Int64
}

// NewFullFS wraps inner (vfs.Default for the real disk).
func NewFullFS(inner vfs.FS) *FullFS { return &FullFS{FS: inner} }

// Fill makes writes to the files match selects fail with ENOSPC; a nil
// match selects every file.
func (f *FullFS) Fill(match func(path string) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.all = match == nil
	if match == nil {
		match = func(string) bool { return true }
	}
	f.match = match
}

// Free makes every write succeed again.
func (f *FullFS) Free() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.match, f.all = nil, false
}

// Refused is the number of writes refused so far.
func (f *FullFS) Refused() int64 { return f.refused.Load() }

// full reports whether a write to path fails now, and counts it.
func (f *FullFS) full(path string) bool {
	f.mu.Lock()
	m := f.match
	f.mu.Unlock()
	if m != nil && m(path) {
		f.refused.Add(1)
		return true
	}
	return false
}

func noSpace(op, path string) error { return &os.PathError{Op: op, Path: path, Err: syscall.ENOSPC} }

// Create implements vfs.FS.
func (f *FullFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.Create(name, c)
	if err != nil {
		return nil, err
	}
	return &fullFile{File: file, fs: f, path: name}, nil
}

// OpenReadWrite implements vfs.FS.
func (f *FullFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	file, err := f.FS.OpenReadWrite(name, c, opts...)
	if err != nil {
		return nil, err
	}
	return &fullFile{File: file, fs: f, path: name}, nil
}

// ReuseForWrite implements vfs.FS.
func (f *FullFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.ReuseForWrite(oldname, newname, c)
	if err != nil {
		return nil, err
	}
	return &fullFile{File: file, fs: f, path: newname}, nil
}

// GetDiskUsage implements vfs.FS: no space available while every file is
// selected.
func (f *FullFS) GetDiskUsage(path string) (vfs.DiskUsage, error) {
	f.mu.Lock()
	all := f.all
	f.mu.Unlock()
	u, err := f.FS.GetDiskUsage(path)
	if all {
		if err != nil {
			u, err = vfs.DiskUsage{TotalBytes: 8 << 20, UsedBytes: 8 << 20}, nil
		}
		u.UsedBytes += u.AvailBytes
		u.AvailBytes = 0
	}
	return u, err
}

// Unwrap implements vfs.FS.
func (f *FullFS) Unwrap() vfs.FS { return f.FS }

type fullFile struct {
	vfs.File
	fs   *FullFS
	path string
}

func (f *fullFile) Write(p []byte) (int, error) {
	if f.fs.full(f.path) {
		return 0, noSpace("write", f.path)
	}
	return f.File.Write(p)
}

func (f *fullFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.full(f.path) {
		return 0, noSpace("write", f.path)
	}
	return f.File.WriteAt(p, off)
}

func (f *fullFile) Preallocate(off, n int64) error {
	if f.fs.full(f.path) {
		return noSpace("fallocate", f.path)
	}
	return f.File.Preallocate(off, n)
}
