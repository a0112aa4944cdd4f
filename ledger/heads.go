package ledger

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The head file (DIR/ledger.heads) is an append-only record of every head
// the store committed, kept outside Pebble's recovery: it says how long the
// ledger must be. Each commit syncs its Pebble batch, then appends and syncs
// its record; Open accepts a store at most one commit ahead of the file and
// writes the missing record. Why this keeps a ledger from being served
// shorter, and what it does not cover: docs/privacy.md, section 11.
//
// # Format
//
// The file is a sequence of 64-byte records. The first is the header
// (kind 'H': the format version and the user key's fingerprint); each later
// one (kind 'C') is the head after one commit: the last entry's sequence
// number, the latest policy version and the last entry's hash. A record is
//
//	[0:4)   magic "dphd"
//	[4]     kind 'H' or 'C'
//	[5:8)   zero
//	[8:16)  seq (header: format version), big endian
//	[16:24) policy version (header: 0), big endian
//	[24:56) entry hash (header: the user key's fingerprint)
//	[56:64) the first 8 bytes of SHA-256 over [0:56)
const headsFile = "ledger.heads"

const (
	headsRecLen      = 64
	headsMagic       = "dphd"
	headsFormat      = 1
	kindHeader       = 'H'
	kindCommit       = 'C'
	fingerprintLabel = "dprl ledger user-key fingerprint v1"
)

// keyFingerprint identifies a user key without revealing it: HMAC-SHA256 of
// a fixed label under the key.
func keyFingerprint(key []byte) [32]byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(fingerprintLabel))
	var fp [32]byte
	copy(fp[:], m.Sum(nil))
	return fp
}

// headRec is one commit's head in the head file.
type headRec struct {
	Seq     uint64
	Version uint64
	Hash    [32]byte
}

func headRecOf(h Head) (headRec, error) {
	r := headRec{Seq: h.Seq, Version: h.Version}
	if h.Seq == 0 {
		return r, nil
	}
	b, err := hex.DecodeString(h.Hash)
	if err != nil || len(b) != 32 {
		return r, fmt.Errorf("%w: head hash %q", ErrCorrupt, h.Hash)
	}
	copy(r.Hash[:], b)
	return r, nil
}

func (r headRec) hash() string {
	if r.Seq == 0 {
		return ""
	}
	return hex.EncodeToString(r.Hash[:])
}

func encodeHeadsRec(kind byte, a, b uint64, h [32]byte) []byte {
	rec := make([]byte, headsRecLen)
	copy(rec, headsMagic)
	rec[4] = kind
	binary.BigEndian.PutUint64(rec[8:], a)
	binary.BigEndian.PutUint64(rec[16:], b)
	copy(rec[24:56], h[:])
	sum := sha256.Sum256(rec[:56])
	copy(rec[56:], sum[:8])
	return rec
}

// decodeHeadsRec checks a record's magic, zero bytes and checksum.
func decodeHeadsRec(rec []byte) (kind byte, a, b uint64, h [32]byte, ok bool) {
	if len(rec) != headsRecLen || string(rec[:4]) != headsMagic || rec[5] != 0 || rec[6] != 0 || rec[7] != 0 {
		return 0, 0, 0, h, false
	}
	sum := sha256.Sum256(rec[:56])
	if !bytes.Equal(sum[:8], rec[56:]) {
		return 0, 0, 0, h, false
	}
	copy(h[:], rec[24:56])
	return rec[4], binary.BigEndian.Uint64(rec[8:]), binary.BigEndian.Uint64(rec[16:]), h, true
}

// headsInfo is what scanning the head file found.
type headsInfo struct {
	fingerprint [32]byte
	records     int
	last        headRec // the last intact record (zero when none)
	validLen    int64   // bytes of the header and the intact records
	torn        int64   // bytes after them: 0, or one record at most
}

// scanHeads reads the head file, calling fn (if not nil) for each intact
// commit record in order. A missing file is reported with os.ErrNotExist.
// A bad header, records out of order, or a damaged record followed by more
// than one record's worth of bytes is ErrCorrupt; a damaged or partial
// record at the very end is reported in torn, for the caller to judge.
func scanHeads(fs vfs.FS, path string, fn func(headRec) error) (headsInfo, error) {
	var hi headsInfo
	f, err := fs.Open(path)
	if err != nil {
		return hi, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return hi, err
	}
	size := st.Size()
	r := bufio.NewReaderSize(f, 64<<10)
	rec := make([]byte, headsRecLen)
	if _, err := io.ReadFull(r, rec); err != nil {
		return hi, fmt.Errorf("%w: %s: %d bytes, no header", ErrCorrupt, path, size)
	}
	kind, format, _, fp, ok := decodeHeadsRec(rec)
	if !ok || kind != kindHeader || format != headsFormat {
		return hi, fmt.Errorf("%w: %s: damaged header", ErrCorrupt, path)
	}
	hi.fingerprint = fp
	hi.validLen = headsRecLen
	for {
		n, err := io.ReadFull(r, rec)
		if err == io.EOF {
			return hi, nil
		}
		if err != nil && err != io.ErrUnexpectedEOF {
			return hi, fmt.Errorf("ledger: read %s: %w", path, err)
		}
		kind, seq, ver, h, ok := decodeHeadsRec(rec[:n])
		if !ok || kind != kindCommit {
			if rest := size - hi.validLen; rest > headsRecLen {
				return hi, fmt.Errorf("%w: %s: damaged record at offset %d, followed by %d more bytes", ErrCorrupt, path, hi.validLen, rest-headsRecLen)
			}
			hi.torn = size - hi.validLen
			return hi, nil
		}
		if seq <= hi.last.Seq {
			return hi, fmt.Errorf("%w: %s: record at offset %d has seq %d after seq %d", ErrCorrupt, path, hi.validLen, seq, hi.last.Seq)
		}
		hi.last = headRec{Seq: seq, Version: ver, Hash: h}
		hi.records++
		hi.validLen += headsRecLen
		if fn != nil {
			if err := fn(hi.last); err != nil {
				return hi, err
			}
		}
	}
}

// createHeads writes a head file holding its header and, if first is not
// nil, that head's record, atomically (a synced temporary file renamed into
// place, then the directory synced).
func createHeads(fs vfs.FS, dir string, fp [32]byte, first *Head) error {
	path := filepath.Join(dir, headsFile)
	tmp := path + ".tmp"
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("ledger: create %s: %w", tmp, err)
	}
	data := encodeHeadsRec(kindHeader, headsFormat, 0, fp)
	if first != nil {
		r, err := headRecOf(*first)
		if err != nil {
			f.Close()
			return err
		}
		data = append(data, encodeHeadsRec(kindCommit, r.Seq, r.Version, r.Hash)...)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && fs == vfs.Default {
		err = os.Chmod(tmp, 0o600) // like the data directory's other files
	}
	if err == nil {
		err = fs.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(fs, dir)
	}
	if err != nil {
		return fmt.Errorf("ledger: create %s: %w", path, err)
	}
	return nil
}

// headsWriter appends commit records to the head file.
type headsWriter struct {
	f   vfs.File
	off int64
}

// openHeadsWriter opens the head file for appending at off, the end of its
// intact records (a torn record after it is overwritten).
func openHeadsWriter(fs vfs.FS, path string, off int64) (*headsWriter, error) {
	f, err := fs.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("ledger: open %s: %w", path, err)
	}
	return &headsWriter{f: f, off: off}, nil
}

// append writes one commit record and syncs it.
func (w *headsWriter) append(h Head) error {
	r, err := headRecOf(h)
	if err != nil {
		return err
	}
	if _, err := w.f.WriteAt(encodeHeadsRec(kindCommit, r.Seq, r.Version, r.Hash), w.off); err != nil {
		return err
	}
	if err := w.f.SyncData(); err != nil {
		return err
	}
	w.off += headsRecLen
	return nil
}

func (w *headsWriter) close() error {
	if w == nil {
		return nil
	}
	return w.f.Close()
}

// HeadRef names one entry of a ledger by its sequence number and hash, as
// "SEQ:HASH" (dprl ledger head prints it; verify --expect-head checks it).
type HeadRef struct {
	Seq  uint64
	Hash string
}

// String returns "SEQ:HASH".
func (r HeadRef) String() string { return fmt.Sprintf("%d:%s", r.Seq, r.Hash) }

// ParseHeadRef parses "SEQ:HASH" (the hash in full: 64 hex digits).
func ParseHeadRef(s string) (HeadRef, error) {
	seq, hash, ok := strings.Cut(strings.TrimSpace(s), ":")
	n, err := strconv.ParseUint(seq, 10, 64)
	if !ok || err != nil || n == 0 {
		return HeadRef{}, fmt.Errorf("%w: head %q: want SEQ:HASH with SEQ >= 1", ErrInvalid, s)
	}
	if b, err := hex.DecodeString(hash); err != nil || len(b) != 32 {
		return HeadRef{}, fmt.Errorf("%w: head %q: want the entry's full hash (64 hex digits)", ErrInvalid, s)
	}
	return HeadRef{Seq: n, Hash: strings.ToLower(hash)}, nil
}

// CheckHead reports whether the ledger holds the entry ref names: a head
// recorded earlier outside the data directory (dprl ledger head). The
// ledger may have grown since; an error wrapping ErrCorrupt means it was
// rolled back to before that entry, or replaced.
func (s *Store) CheckHead(ref HeadRef) error {
	h, err := s.Head()
	if err != nil {
		return err
	}
	if ref.Seq > h.Seq {
		return fmt.Errorf("%w: the recorded head is entry %d but the ledger ends at entry %d: it was rolled back (an older copy of the data directory restored?)", ErrCorrupt, ref.Seq, h.Seq)
	}
	e, err := s.entry(ref.Seq)
	if err != nil {
		return fmt.Errorf("%w: the recorded head is entry %d: %v", ErrCorrupt, ref.Seq, err)
	}
	if e.Hash != ref.Hash {
		return fmt.Errorf("%w: entry %d has hash %s, the recorded head says %s: the ledger was replaced or rewritten", ErrCorrupt, ref.Seq, e.Hash, ref.Hash)
	}
	return nil
}

// isNotExist reports whether err says a file does not exist (os or vfs).
func isNotExist(err error) bool {
	return errors.Is(err, os.ErrNotExist)
}
