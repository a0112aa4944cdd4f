package ledger

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"dprl/ledger/accountant"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"
)

// Errors of the ledger. Test with errors.Is.
var (
	// ErrCorrupt marks a damaged or tampered store.
	ErrCorrupt = errors.New("ledger: corrupt store")
	// ErrIncompatibleSpec is returned when a restart brings a policy spec
	// that differs from the one fixed at the first start.
	ErrIncompatibleSpec = errors.New("ledger: incompatible policy spec")
	// ErrBudgetExceeded is returned when a charge would exceed a cap.
	ErrBudgetExceeded = errors.New("ledger: budget exceeded")
	// ErrNotFound is returned for a missing snapshot or store.
	ErrNotFound = errors.New("ledger: not found")
	// ErrInvalid marks an invalid argument.
	ErrInvalid = errors.New("ledger: invalid argument")
	// ErrClosed is returned by a closed store.
	ErrClosed = errors.New("ledger: closed")
)

// File names inside the data directory.
const (
	pebbleDir   = "ledger"
	userKeyFile = "user.key"
)

// Key prefixes of the Pebble store.
var (
	keySpec    = []byte("m/spec")
	keyHead    = []byte("m/head")
	prefEntry  = []byte("e/")
	prefSnap   = []byte("s/")
	prefUser   = []byte("u/")
	prefBudget = []byte("b/") // dataset budgets, by dataset id
	prefRecord = []byte("r/") // record index: record hash -> seq of the entry that registered it
	prefFile   = []byte("f/") // file index: file content id -> the dataset it was first registered in
	userKeyLen = 32
)

// Options configure Open. The zero value opens (or creates) a store on the
// operating system's file system.
type Options struct {
	// FS is the file system; nil means the operating system's. Tests pass
	// vfs.NewCrashableMem() to simulate crashes.
	FS vfs.FS
	// Logger receives the store's log lines; the zero value discards them.
	Logger zerolog.Logger
	// MustExist refuses to create a new store (for show, verify, export).
	MustExist bool
	// ReadOnly opens the store without writing to it.
	ReadOnly bool
	// Now is the clock for entry times; nil means time.Now.
	Now func() time.Time
}

// Store is the ledger of one data directory. Its methods are safe for
// concurrent use; appends are serialised.
type Store struct {
	db      *pebble.DB
	fs      vfs.FS
	dir     string
	userKey []byte
	log     zerolog.Logger
	now     func() time.Time

	mu     sync.Mutex // serialises appends and guards closed
	closed bool
}

// Open opens the ledger in dir, creating the store and the user-key secret on
// first start (unless MustExist). A damaged store is reported with ErrCorrupt.
func Open(dir string, o Options) (*Store, error) {
	fs := o.FS
	if fs == nil {
		fs = vfs.Default
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	pdir := filepath.Join(dir, pebbleDir)
	_, statErr := fs.Stat(pdir)
	exists := statErr == nil
	_, keyErr := fs.Stat(filepath.Join(dir, userKeyFile))
	switch {
	case !exists && keyErr == nil:
		// The store directory is synced before the key is written, so a key
		// without a store means the store was lost, not never created.
		return nil, fmt.Errorf("%w: %s has a user key but no store: the ledger was lost or moved", ErrCorrupt, dir)
	case !exists && (o.MustExist || o.ReadOnly):
		return nil, fmt.Errorf("%w: no ledger in %s", ErrNotFound, dir)
	case !exists:
		if err := mkdirAllSync(fs, pdir); err != nil {
			return nil, fmt.Errorf("ledger: create %s: %w", pdir, err)
		}
	}
	db, err := pebble.Open(pdir, &pebble.Options{
		FS:               fs,
		ErrorIfNotExists: exists,
		ReadOnly:         o.ReadOnly,
		Logger:           pebbleLogger{o.Logger},
	})
	if err != nil {
		if pebble.IsCorruptionError(err) {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, pdir, err)
		}
		return nil, fmt.Errorf("%w: open %s: %v", ErrCorrupt, pdir, err)
	}
	if !exists {
		// Make the new store's directory entry durable before the key.
		if err := syncDir(fs, dir); err != nil {
			db.Close()
			return nil, fmt.Errorf("ledger: sync %s: %w", dir, err)
		}
	}
	s0 := &Store{db: db, fs: fs, dir: dir, log: o.Logger, now: now}
	h, err := s0.Head()
	if err != nil {
		db.Close()
		return nil, err
	}
	spec, _, err := s0.Spec()
	if err != nil {
		db.Close()
		return nil, err
	}
	used := h.Seq > 0 || spec != nil
	key, err := loadOrCreateUserKey(fs, dir, used, o.ReadOnly)
	if err != nil {
		db.Close()
		return nil, err
	}
	s0.userKey = key
	return s0, nil
}

// loadOrCreateUserKey reads the HMAC secret, creating it (mode 0600, synced)
// for a new store. A store without its key cannot map users and is refused.
func loadOrCreateUserKey(fs vfs.FS, dir string, storeUsed, readOnly bool) ([]byte, error) {
	path := filepath.Join(dir, userKeyFile)
	f, err := fs.Open(path)
	if err == nil {
		defer f.Close()
		key, err := io.ReadAll(io.LimitReader(f, int64(userKeyLen)+1))
		if err != nil || len(key) != userKeyLen {
			return nil, fmt.Errorf("%w: %s: want a %d-byte secret", ErrCorrupt, path, userKeyLen)
		}
		if fs == vfs.Default {
			if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
				return nil, fmt.Errorf("ledger: %s is readable by others (mode %v); chmod 600 it", path, st.Mode().Perm())
			}
		}
		return key, nil
	}
	if storeUsed {
		return nil, fmt.Errorf("%w: %s is missing: user counters cannot be mapped without it", ErrCorrupt, path)
	}
	if readOnly {
		return nil, fmt.Errorf("%w: %s is missing", ErrNotFound, path)
	}
	key := make([]byte, userKeyLen)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("ledger: user key: %w", err)
	}
	if fs == vfs.Default {
		if err := writeFileSync(path, key, 0o600); err != nil {
			return nil, fmt.Errorf("ledger: write %s: %w", path, err)
		}
		return key, nil
	}
	w, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("ledger: write %s: %w", path, err)
	}
	if _, err := w.Write(key); err != nil {
		w.Close()
		return nil, err
	}
	if err := w.Sync(); err != nil {
		w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	if err := syncDir(fs, dir); err != nil {
		return nil, err
	}
	return key, nil
}

// mkdirAllSync creates dir and its missing parents, syncing each parent after
// creating a child in it so that the new directories survive a crash.
func mkdirAllSync(fs vfs.FS, dir string) error {
	dir = filepath.Clean(dir)
	if _, err := fs.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirAllSync(fs, parent); err != nil {
			return err
		}
	}
	if err := fs.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return syncDir(fs, parent)
}

// syncDir makes the directory's entries durable.
func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func writeFileSync(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Close closes the store. It is safe to call more than once.
func (s *Store) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.db.Close()
}

// UserKey identifies a user in the ledger: HMAC-SHA256 of the user id under
// the store's secret.
type UserKey [32]byte

// String returns the key in hex.
func (k UserKey) String() string { return hex.EncodeToString(k[:]) }

// MarshalText encodes the key in hex.
func (k UserKey) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText decodes a hex key.
func (k *UserKey) UnmarshalText(b []byte) error {
	if hex.DecodedLen(len(b)) != len(k) {
		return fmt.Errorf("%w: user key of %d hex digits", ErrInvalid, len(b))
	}
	_, err := hex.Decode(k[:], b)
	return err
}

// User returns the ledger key of a user id.
func (s *Store) User(id string) UserKey {
	m := hmac.New(sha256.New, s.userKey)
	m.Write([]byte(id))
	var k UserKey
	copy(k[:], m.Sum(nil))
	return k
}

// UserState is a user's participation so far.
type UserState struct {
	// Updates is the number of policy updates the user took part in.
	Updates int `json:"updates"`
	// SumInvZ2 is the sum of 1/z^2 over those updates: the user's updates
	// compose into one Gaussian mechanism with z = SumInvZ2^(-1/2).
	SumInvZ2 float64 `json:"sum_inv_z2"`
	// LastVersion is the policy version of the user's latest update.
	LastVersion uint64 `json:"last_version"`
}

// Epsilon returns the user's exact epsilon at delta (analytic Gaussian
// mechanism on the composed multiplier; 0 for a user never used).
func (u UserState) Epsilon(delta float64) (float64, error) {
	if u.Updates == 0 {
		return 0, nil
	}
	return accountant.GaussianEpsilon(1/math.Sqrt(u.SumInvZ2), delta)
}

// EpsilonAfter returns the user's epsilon at delta if they took part in one
// more update with noise multiplier z.
func (u UserState) EpsilonAfter(z, delta float64) (float64, error) {
	if z <= 0 || math.IsNaN(z) || math.IsInf(z, 0) {
		return 0, fmt.Errorf("%w: z = %v", ErrInvalid, z)
	}
	u.Updates++
	u.SumInvZ2 += 1 / (z * z)
	return u.Epsilon(delta)
}

// UserState returns the state of a user (the zero state for a new user).
func (s *Store) UserState(k UserKey) (UserState, error) {
	var u UserState
	ok, err := s.getJSON(userKey(k), &u)
	if err != nil || !ok {
		return UserState{}, err
	}
	return u, nil
}

// Head is the current end of the ledger.
type Head struct {
	// Seq is the number of entries (the last entry's sequence number).
	Seq uint64 `json:"seq"`
	// Hash is the last entry's hash ("" when empty).
	Hash string `json:"hash"`
	// Version is the latest released policy version (0: none yet).
	Version uint64 `json:"version"`
}

// Head returns the current head.
func (s *Store) Head() (Head, error) {
	var h Head
	if _, err := s.getJSON(keyHead, &h); err != nil {
		return Head{}, err
	}
	return h, nil
}

// Spec returns the policy spec fixed at the first start, if any.
func (s *Store) Spec() ([]byte, bool, error) {
	v, err := s.get(keySpec)
	if err != nil {
		return nil, false, err
	}
	return v, v != nil, nil
}

// InitSpec fixes the policy spec at the first start. On later starts it
// calls compatible with the stored spec and returns its error wrapped in
// ErrIncompatibleSpec (a nil compatible requires byte equality).
func (s *Store) InitSpec(spec []byte, compatible func(stored []byte) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	stored, err := s.get(keySpec)
	if err != nil {
		return err
	}
	if stored == nil {
		if err := s.db.Set(keySpec, spec, pebble.Sync); err != nil {
			return fmt.Errorf("ledger: write spec: %w", err)
		}
		return nil
	}
	if compatible == nil {
		if !bytes.Equal(stored, spec) {
			return fmt.Errorf("%w: stored %s, given %s", ErrIncompatibleSpec, stored, spec)
		}
		return nil
	}
	if err := compatible(stored); err != nil {
		return fmt.Errorf("%w: %v", ErrIncompatibleSpec, err)
	}
	return nil
}

// Snapshot returns the policy snapshot released as version.
func (s *Store) Snapshot(version uint64) ([]byte, error) {
	v, err := s.get(snapKey(version))
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, fmt.Errorf("%w: snapshot of version %d", ErrNotFound, version)
	}
	return v, nil
}

// SetInitial stores the data-independent initial policy as version 0. It
// costs no privacy, so it has no entry; it is refused once a version exists.
func (s *Store) SetInitial(snapshot []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	h, err := s.Head()
	if err != nil {
		return err
	}
	if h.Version != 0 {
		return fmt.Errorf("%w: initial policy after version %d", ErrInvalid, h.Version)
	}
	if len(snapshot) == 0 {
		return fmt.Errorf("%w: empty snapshot", ErrInvalid)
	}
	return s.db.Set(snapKey(0), snapshot, pebble.Sync)
}

// Release is one policy release: the new snapshot, the entry that pays for
// it, and the users whose sessions it used.
type Release struct {
	// Version is the new policy version; it must be the head version + 1.
	Version uint64
	// Snapshot is the encoded policy.
	Snapshot []byte
	// Entry is the cost; Seq, Time, Kind, PolicyVersion, PrevHash and Hash
	// are filled in by Release.
	Entry Entry
	// Users are the participating users (at most one session each).
	Users []UserKey
}

// Release writes the snapshot, its ledger entry, the users' counters and the
// head pointer in one synced batch, and returns the entry as written.
func (s *Store) Release(r Release) (Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Entry{}, ErrClosed
	}
	h, err := s.Head()
	if err != nil {
		return Entry{}, err
	}
	if r.Version != h.Version+1 {
		return Entry{}, fmt.Errorf("%w: release version %d after head version %d", ErrInvalid, r.Version, h.Version)
	}
	if len(r.Snapshot) == 0 {
		return Entry{}, fmt.Errorf("%w: empty snapshot", ErrInvalid)
	}
	e := r.Entry
	e.Kind = KindRelease
	e.PolicyVersion = r.Version
	e.Users = r.Users
	if err := e.validate(); err != nil {
		return Entry{}, err
	}
	z, err := e.userZ()
	if err != nil {
		return Entry{}, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	seen := make(map[UserKey]bool, len(r.Users))
	for _, u := range r.Users {
		if seen[u] {
			return Entry{}, fmt.Errorf("%w: user %s twice in one update", ErrInvalid, u)
		}
		seen[u] = true
		st, err := s.UserState(u)
		if err != nil {
			return Entry{}, err
		}
		st.Updates++
		st.SumInvZ2 += 1 / (z * z)
		st.LastVersion = r.Version
		if err := setJSON(b, userKey(u), st); err != nil {
			return Entry{}, err
		}
	}
	if err := b.Set(snapKey(r.Version), r.Snapshot, nil); err != nil {
		return Entry{}, err
	}
	e, err = s.appendEntry(b, h, e)
	if err != nil {
		return Entry{}, err
	}
	h = Head{Seq: e.Seq, Hash: e.Hash, Version: r.Version}
	if err := setJSON(b, keyHead, h); err != nil {
		return Entry{}, err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return Entry{}, fmt.Errorf("ledger: commit release %d: %w", r.Version, err)
	}
	return e, nil
}

// appendEntry completes e (sequence, time, chain) and adds it to the batch.
func (s *Store) appendEntry(b *pebble.Batch, h Head, e Entry) (Entry, error) {
	e.Seq = h.Seq + 1
	e.Time = s.now().UTC()
	e.PrevHash = h.Hash
	e.Hash = ""
	sum, err := e.computeHash()
	if err != nil {
		return Entry{}, err
	}
	e.Hash = sum
	if err := setJSON(b, entryKey(e.Seq), e); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// Entries calls fn for every entry in sequence order.
func (s *Store) Entries(fn func(Entry) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefEntry, UpperBound: prefixEnd(prefEntry)})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		var e Entry
		if err := decodeStrict(it.Value(), &e); err != nil {
			return fmt.Errorf("%w: entry key %x: %v", ErrCorrupt, it.Key(), err)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return it.Error()
}

// Users calls fn for every user counter.
func (s *Store) Users(fn func(UserKey, UserState) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefUser, UpperBound: prefixEnd(prefUser)})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()[len(prefUser):]
		if len(k) != userKeyLen {
			return fmt.Errorf("%w: user key of length %d", ErrCorrupt, len(k))
		}
		var uk UserKey
		copy(uk[:], k)
		var st UserState
		if err := decodeStrict(it.Value(), &st); err != nil {
			return fmt.Errorf("%w: user %s: %v", ErrCorrupt, uk, err)
		}
		if err := fn(uk, st); err != nil {
			return err
		}
	}
	return it.Error()
}

func (s *Store) get(key []byte) ([]byte, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: read %q: %w", key, err)
	}
	out := append([]byte(nil), v...)
	closer.Close()
	return out, nil
}

func (s *Store) getJSON(key []byte, v any) (bool, error) {
	b, err := s.get(key)
	if err != nil || b == nil {
		return false, err
	}
	if err := decodeStrict(b, v); err != nil {
		return false, fmt.Errorf("%w: %q: %v", ErrCorrupt, key, err)
	}
	return true, nil
}

func setJSON(b *pebble.Batch, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Set(key, data, nil)
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}

func be64(prefix []byte, n uint64) []byte {
	k := make([]byte, len(prefix)+8)
	copy(k, prefix)
	binary.BigEndian.PutUint64(k[len(prefix):], n)
	return k
}

func entryKey(seq uint64) []byte    { return be64(prefEntry, seq) }
func snapKey(version uint64) []byte { return be64(prefSnap, version) }
func userKey(k UserKey) []byte      { return append(append([]byte(nil), prefUser...), k[:]...) }
func budgetKey(id string) []byte    { return append(append([]byte(nil), prefBudget...), id...) }
func recordKey(h RecordHash) []byte { return append(append([]byte(nil), prefRecord...), h[:]...) }
func fileKey(id string) []byte      { return append(append([]byte(nil), prefFile...), id...) }

// prefixEnd returns the smallest key after every key with the prefix.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// pebbleLogger routes Pebble's log lines to zerolog.
type pebbleLogger struct{ l zerolog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug().Str("component", "pebble").Msgf(format, args...)
}
func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error().Str("component", "pebble").Msgf(format, args...)
}
func (p pebbleLogger) Fatalf(format string, args ...any) {
	p.l.Error().Str("component", "pebble").Msgf(format, args...)
	panic(fmt.Sprintf("pebble: "+format, args...))
}
