package sessionlog

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// ErrChanged marks a log that no longer holds the records it held when it
// was scanned (ScanLog): a record read again does not hash as it did, or
// the file has more or fewer records.
var ErrChanged = errors.New("sessionlog: the log changed since it was read")

// IndexBytesPerRecord is what an Index holds per record: its identity
// (ContentHash, 32 bytes), its exact hash (HashRecord, 32), the offset of
// its line (8) and the line's length (4). An Index of n records takes
// IndexBytesPerRecord * n bytes (plus at most one block of indexBlock
// records), whatever the records hold; building it needs 64 * n bytes more
// for a moment (the hashes are gathered into slices at the end) and
// RecordsID another 32 * n twice (its sorted copies).
const IndexBytesPerRecord = 32 + 32 + 8 + 4

// indexBlock is the number of records per block of an Index's storage:
// blocks fill without the copying and slack of a growing slice. (A
// variable for the tests.)
var indexBlock = 1 << 14

// block is indexBlock records' places and, while scanning, hashes.
type block struct {
	content, exact []RecordHash
	offs           []int64
	lens           []uint32
}

func newBlock() *block {
	return &block{content: make([]RecordHash, indexBlock), exact: make([]RecordHash, indexBlock),
		offs: make([]int64, indexBlock), lens: make([]uint32, indexBlock)}
}

// Index is a session log read once, streaming, and what later passes need
// to read it again: each record's identity (ContentHash, the dataset's
// identity in the ledger), its exact hash (HashRecord) and where its line
// lies in the file. It holds IndexBytesPerRecord bytes per record and
// nothing of the records themselves. Each re-reads the log in order and
// Open reads single records; both verify every record against its exact
// hash, so what a run computes on is exactly the data it was checked and
// charged for, behaviour probabilities and ids included (a log edited in the
// meantime is ErrChanged).
type Index struct {
	path   string
	opt    ReaderOptions // the options the log was scanned with
	spec   Spec          // the dimensions in force after the scan
	kind   int           // the action kind learned by the scan
	hashes []RecordHash  // every record's identity (ContentHash), in file order
	exact  []RecordHash  // every record's exact hash (HashRecord), in file order
	blocks []*block      // the records' places, indexBlock per block
	id     string
	legacy string
}

// place returns record i's line offset and length.
func (ix *Index) place(i int) (int64, int) {
	b := ix.blocks[i/indexBlock]
	return b.offs[i%indexBlock], int(b.lens[i%indexBlock])
}

// ScanLog reads the session log at path once, streaming, with the strict
// reader (opt; opt.Name defaults to path), and indexes it. check, if not
// nil, is called with every record as it is read, for the caller's own
// validation. ScanLog stops at the first malformed record, or the first
// error check returns (reported as a *LineError naming the record's line),
// without reading further: a log bad at line 2 is refused after reading
// its first two lines (and at most one read-ahead buffer of 64 KiB). The
// log must be a regular file (it is read again by Each and Open); an empty
// log gives an Index of no records.
func ScanLog(path string, opt ReaderOptions, check func(s *Session) error) (*Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("sessionlog: %s is not a regular file (a log is read more than once: give a file, not a pipe)", path)
	}
	if opt.Name == "" {
		opt.Name = path
	}
	ix, err := scanIndex(f, opt, check)
	if err != nil {
		return nil, err
	}
	ix.path = path
	return ix, nil
}

// scanIndex indexes the log read from r.
func scanIndex(r io.Reader, opt ReaderOptions, check func(s *Session) error) (*Index, error) {
	if opt.MaxLineBytes > math.MaxUint32 {
		opt.MaxLineBytes = math.MaxUint32
	}
	rd := NewReader(r, opt)
	ix := &Index{opt: rd.opt}
	n := 0
	for {
		s, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		h, x := ContentHash(&s), HashRecord(&s) // the record as read, whatever check does
		if check != nil {
			if err := check(&s); err != nil {
				return nil, lineError(rd, err)
			}
		}
		k := n % indexBlock
		if k == 0 {
			ix.blocks = append(ix.blocks, newBlock())
		}
		b := ix.blocks[len(ix.blocks)-1]
		b.content[k], b.exact[k], b.offs[k], b.lens[k] = h, x, rd.recOff, uint32(rd.recLen)
		n++
	}
	ix.hashes = make([]RecordHash, 0, n)
	ix.exact = make([]RecordHash, 0, n)
	for _, b := range ix.blocks {
		k := min(indexBlock, n-len(ix.hashes))
		ix.hashes = append(ix.hashes, b.content[:k]...)
		ix.exact = append(ix.exact, b.exact[:k]...)
		b.content, b.exact = nil, nil
	}
	ix.spec, ix.kind = rd.spec, rd.kind
	ix.id = RecordsID(ix.hashes)
	ix.legacy = RecordsID(ix.exact)
	return ix, nil
}

// lineError locates a caller's error at the reader's last record, unless it
// is located already.
func lineError(rd *Reader, err error) error {
	var le *LineError
	if errors.As(err, &le) || errors.Is(err, ErrChanged) {
		return err
	}
	return &LineError{Name: rd.opt.Name, Line: rd.Line(), Err: err}
}

// Path is the file the log was read from.
func (ix *Index) Path() string { return ix.path }

// Len is the number of records.
func (ix *Index) Len() int { return len(ix.hashes) }

// ID is the log's content id (RecordsID of its records' identities).
func (ix *Index) ID() string { return ix.id }

// LegacyID is the content id ledgers written before ContentHash gave the
// log (RecordsID of its records' exact hashes).
func (ix *Index) LegacyID() string { return ix.legacy }

// Records are the records' identities (ContentHash) in file order. The
// slice is the index's own: do not modify it.
func (ix *Index) Records() []RecordHash { return ix.hashes }

// Exact are the records' exact hashes (HashRecord) in file order, parallel
// to Records. The slice is the index's own: do not modify it.
func (ix *Index) Exact() []RecordHash { return ix.exact }

// Spec is the dimensions in force after the scan: those given, completed
// with those learned from the records.
func (ix *Index) Spec() Spec { return ix.spec }

// Each reads the log again, in order, calling fn with each record's index
// and session. Every record is checked against its hash first; a record
// that differs, or a different number of records, is ErrChanged. An error
// fn returns stops the pass and is returned as a *LineError naming the
// record's line.
func (ix *Index) Each(fn func(i int, s *Session) error) error {
	f, err := os.Open(ix.path)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrChanged, err)
	}
	defer f.Close()
	rd := NewReader(f, ix.opt)
	for i := 0; ; i++ {
		s, err := rd.Next()
		if errors.Is(err, io.EOF) {
			if i != len(ix.hashes) {
				return fmt.Errorf("%w: %s has %d records, it had %d", ErrChanged, ix.path, i, len(ix.hashes))
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %w", ErrChanged, err)
		}
		if i >= len(ix.exact) || HashRecord(&s) != ix.exact[i] {
			return fmt.Errorf("%w: %s:%d is not the record it was", ErrChanged, ix.path, rd.Line())
		}
		if err := fn(i, &s); err != nil {
			return lineError(rd, err)
		}
	}
}

// Open returns a reader of single records by index. Close it when done.
func (ix *Index) Open() (*RecordReader, error) {
	f, err := os.Open(ix.path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrChanged, err)
	}
	p := newParser(ix.opt)
	p.spec, p.kind, p.known = ix.spec, ix.kind, true
	return &RecordReader{ix: ix, f: f, p: p}, nil
}

// RecordReader reads single records of an indexed log (Index.Open). It is
// not safe for concurrent use.
type RecordReader struct {
	ix  *Index
	f   *os.File
	p   *Reader
	buf []byte
}

// Len is the number of records.
func (rr *RecordReader) Len() int { return rr.ix.Len() }

// Read returns record i (0 <= i < Len), read from its place in the file and
// checked against its hash (ErrChanged if it differs). The session is the
// caller's.
func (rr *RecordReader) Read(i int) (Session, error) {
	ix := rr.ix
	if i < 0 || i >= len(ix.hashes) {
		return Session{}, fmt.Errorf("sessionlog: record %d of %d", i, len(ix.hashes))
	}
	off, n := ix.place(i)
	if cap(rr.buf) < n {
		rr.buf = make([]byte, n)
	}
	line := rr.buf[:n]
	if _, err := rr.f.ReadAt(line, off); err != nil {
		return Session{}, fmt.Errorf("%w: record %d: %w", ErrChanged, i, err)
	}
	s, err := rr.p.parse(line)
	if err != nil {
		return Session{}, fmt.Errorf("%w: record %d: %w", ErrChanged, i, err)
	}
	if HashRecord(&s) != ix.exact[i] {
		return Session{}, fmt.Errorf("%w: record %d is not the record it was", ErrChanged, i)
	}
	return s, nil
}

// Close closes the file.
func (rr *RecordReader) Close() error { return rr.f.Close() }
