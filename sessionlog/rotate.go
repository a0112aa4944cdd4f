package sessionlog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// RotatingOptions configure a RotatingWriter.
type RotatingOptions struct {
	// MaxBytes rotates the current file once it reaches this size; 0 means
	// 64 MiB.
	MaxBytes int64
	// MaxAge rotates the current file once it is this old; 0 means 1 hour.
	MaxAge time.Duration
	// Keep is the number of closed files retained (oldest deleted first);
	// 0 keeps them all.
	Keep int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Encoder writes each session's record; nil means AppendSession
	// (dprl.sessions.v1). A session it refuses is not written (Write
	// returns ErrUnsupported and the encoder's error).
	Encoder Encoder
	// Ext is the files' extension, dot included; "" means ".jsonl".
	Ext string
}

// ErrUnsupported marks a session a RotatingWriter's encoder refused: the
// log's format cannot hold it (a multi-step session in a DSJSON log) or
// its values cannot be written (a non-finite number). Nothing of it was
// written; the log goes on.
var ErrUnsupported = errors.New("sessionlog: session not written: the log's format cannot hold it")

// RotatingWriter appends sessions to sessions-<UTC time>.jsonl files in a
// directory (another extension with RotatingOptions.Ext), each record
// written by its encoder (RotatingOptions.Encoder), rotating by size and
// age. A file is fsynced and closed on
// rotation and on Close, so every closed file is complete; the current file
// may lose its unsynced tail in a crash, never a closed one. Retention: the
// newest Keep closed files stay, older ones are deleted. Safe for concurrent
// use.
type RotatingWriter struct {
	dir string
	opt RotatingOptions

	mu      sync.Mutex
	f       *os.File
	buf     []byte // the record being written
	opened  time.Time
	counter *countWriter
}

type countWriter struct {
	f *os.File
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.f.Write(p)
	c.n += int64(n)
	return n, err
}

// NewRotatingWriter creates dir (0700) if needed.
func NewRotatingWriter(dir string, opt RotatingOptions) (*RotatingWriter, error) {
	if opt.MaxBytes <= 0 {
		opt.MaxBytes = 64 << 20
	}
	if opt.MaxAge <= 0 {
		opt.MaxAge = time.Hour
	}
	if opt.Keep < 0 {
		return nil, fmt.Errorf("sessionlog: keep = %d, want >= 0", opt.Keep)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Encoder == nil {
		opt.Encoder = AppendSession
	}
	if opt.Ext == "" {
		opt.Ext = ".jsonl"
	}
	if !strings.HasPrefix(opt.Ext, ".") || strings.ContainsAny(opt.Ext, `/\`) {
		return nil, fmt.Errorf("sessionlog: extension %q, want a dot and no path separator", opt.Ext)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sessionlog: session log dir: %w", err)
	}
	return &RotatingWriter{dir: dir, opt: opt}, nil
}

// Write appends one session, rotating first when due. A session the
// encoder refuses touches no file: the error wraps ErrUnsupported and the
// encoder's error.
func (r *RotatingWriter) Write(s *Session) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, err := r.opt.Encoder(r.buf[:0], s)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	r.buf = b
	now := r.opt.Now()
	if r.f != nil && (r.counter.n >= r.opt.MaxBytes || now.Sub(r.opened) >= r.opt.MaxAge) {
		if err := r.closeCurrent(); err != nil {
			return err
		}
	}
	if r.f == nil {
		if err := r.open(now); err != nil {
			return err
		}
	}
	start := r.counter.n
	if _, err := r.counter.Write(b); err != nil {
		r.cutBack(start)
		return err
	}
	return nil
}

// cutBack drops what a failed write (a full disk) left of its record: the
// file is cut back to its last whole record, so the log goes on with
// whole records once space is back. A file that cannot be cut is closed;
// the next write opens a new one.
func (r *RotatingWriter) cutBack(start int64) {
	if err := r.f.Truncate(start); err == nil {
		if _, err := r.f.Seek(start, io.SeekStart); err == nil {
			r.counter.n = start
			return
		}
	}
	r.f.Close()
	r.f = nil
}

func (r *RotatingWriter) open(now time.Time) error {
	name := filepath.Join(r.dir, "sessions-"+now.UTC().Format("20060102T150405.000000000Z")+r.opt.Ext)
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("sessionlog: open session log: %w", err)
	}
	r.f, r.opened = f, now
	r.counter = &countWriter{f: f}
	return nil
}

// closeCurrent syncs and closes the current file and applies retention.
func (r *RotatingWriter) closeCurrent() error {
	if r.f == nil {
		return nil
	}
	err := errors.Join(r.f.Sync(), r.f.Close())
	r.f = nil
	if err != nil {
		return fmt.Errorf("sessionlog: close session log: %w", err)
	}
	return r.retain()
}

func (r *RotatingWriter) retain() error {
	if r.opt.Keep == 0 {
		return nil
	}
	files, err := r.Files()
	if err != nil {
		return err
	}
	for len(files) > r.opt.Keep {
		if err := os.Remove(files[0]); err != nil {
			return fmt.Errorf("sessionlog: retention: %w", err)
		}
		files = files[1:]
	}
	return nil
}

// Files lists the closed log files (of the writer's extension), oldest
// first.
func (r *RotatingWriter) Files() ([]string, error) {
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, "sessions-") || !strings.HasSuffix(n, r.opt.Ext) {
			continue
		}
		p := filepath.Join(r.dir, n)
		if r.f != nil && p == r.f.Name() {
			continue
		}
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

// Close syncs and closes the current file.
func (r *RotatingWriter) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closeCurrent()
}
