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
// reports no space left when every file is selected; FillAfter fills it
// after a number of bytes instead. Creating, renaming
// and reading files keep working, as they do on a real full disk (a new
// file needs no data block). It needs no root, unlike a small tmpfs.
type FullFS struct {
	vfs.FS
	mu      sync.Mutex
	match   func(path string) bool // nil: not full
	all     bool
	budget  int64 // with limited: the bytes writes may still take
	limited bool
	honest  bool // GetDiskUsage reports the budget
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

// FillAfter lets writes take n more bytes: the write that crosses the
// limit writes what fits and fails with ENOSPC, and so does every later
// one. With honest, GetDiskUsage reports what is left, as when the
// writer itself fills the disk; without, it reports the inner file
// system's space, as when another process fills it between a check and
// a write.
func (f *FullFS) FillAfter(n int64, honest bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.budget, f.limited, f.honest = n, true, honest
}

// Free makes every write succeed again.
func (f *FullFS) Free() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.match, f.all, f.limited = nil, false, false
}

// take returns how many of n bytes a write to path may write, and
// whether it fails with ENOSPC (also when it writes part of them).
func (f *FullFS) take(path string, n int) (int, bool) {
	if f.full(path) {
		return 0, true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.limited {
		return n, false
	}
	if int64(n) <= f.budget {
		f.budget -= int64(n)
		return n, false
	}
	k := int(f.budget)
	f.budget = 0
	f.refused.Add(1)
	return k, true
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
	all, limited, budget := f.all, f.limited && f.honest, f.budget
	f.mu.Unlock()
	u, err := f.FS.GetDiskUsage(path)
	if limited && err == nil && uint64(budget) < u.AvailBytes {
		u.UsedBytes += u.AvailBytes - uint64(budget)
		u.AvailBytes = uint64(budget)
	}
	if all {
		if err != nil {
			u, err = vfs.DiskUsage{TotalBytes: 8 << 20, UsedBytes: 8 << 20}, nil
		}
		u.UsedBytes += u.AvailBytes
		u.AvailBytes = 0
	}
	return u, err
}

// Remove implements vfs.FS: after FillAfter, a removed file's bytes are
// free space again.
func (f *FullFS) Remove(name string) error {
	var size int64
	if st, err := f.FS.Stat(name); err == nil {
		size = st.Size()
	}
	if err := f.FS.Remove(name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.limited {
		f.budget += size
	}
	return nil
}

// Unwrap implements vfs.FS.
func (f *FullFS) Unwrap() vfs.FS { return f.FS }

type fullFile struct {
	vfs.File
	fs   *FullFS
	path string
}

func (f *fullFile) Write(p []byte) (int, error) {
	k, full := f.fs.take(f.path, len(p))
	if !full {
		return f.File.Write(p)
	}
	if k > 0 {
		if n, err := f.File.Write(p[:k]); err != nil {
			return n, err
		}
	}
	return k, noSpace("write", f.path)
}

func (f *fullFile) WriteAt(p []byte, off int64) (int, error) {
	k, full := f.fs.take(f.path, len(p))
	if !full {
		return f.File.WriteAt(p, off)
	}
	if k > 0 {
		if n, err := f.File.WriteAt(p[:k], off); err != nil {
			return n, err
		}
	}
	return k, noSpace("write", f.path)
}

// Preallocate fails only where a write would fail: it reserves blocks a
// later write takes from the budget.
func (f *fullFile) Preallocate(off, n int64) error {
	if f.fs.full(f.path) {
		return noSpace("fallocate", f.path)
	}
	return f.File.Preallocate(off, n)
}
