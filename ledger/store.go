package ledger

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"dprl/internal/jsonstrict"
	"dprl/ledger/accountant"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
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
	// ErrNotEmpty is returned by Open without Options.Init for a directory
	// that holds files but no ledger (a mistyped path would otherwise get
	// a fresh ledger, and every user a fresh budget).
	ErrNotEmpty = errors.New("ledger: directory holds no ledger and is not empty")
	// ErrLocked is returned by Open when another process (or another open
	// Store of this process) holds the data directory's lock: the directory
	// is in use, not damaged.
	ErrLocked = errors.New("ledger: data directory in use (its lock is held)")
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
	keySpec   = []byte("m/spec")
	keyHead   = []byte("m/head")
	keyPrev   = []byte("m/prev")   // the head seq before the last commit that moved it
	keyAnchor = []byte("m/anchor") // the store's format and user-key fingerprint
	// keyIdentity marks a store whose record index holds record identities
	// (content hashes) only: written with its first records. A store with
	// records and no mark also holds exact hashes (FileRecords).
	keyIdentity = []byte("m/identity")
	prefEntry   = []byte("e/")
	prefSnap    = []byte("s/")
	prefUser    = []byte("u/")
	prefBudget  = []byte("b/") // dataset budgets, by dataset id
	prefRecord  = []byte("r/") // record index: record hash -> seq of the entry that registered it
	prefFile    = []byte("f/") // file index: file content id -> the dataset it was first registered in
	prefLink    = []byte("l/") // links: record hash, seq of the linking entry -> seq of the entry whose records it joins
	userKeyLen  = 32
)

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
		if err := s.setRawSync(keySpec, spec); err != nil {
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
	return s.setRawSync(snapKey(0), snapshot)
}

// setRawSync writes one value, synced.
func (s *Store) setRawSync(key, v []byte) error {
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.Set(key, v, nil); err != nil {
		return err
	}
	return s.commitBatch(b)
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
	// Sessions are the keys of the sessions the release used (Store.Session),
	// recorded so that no session enters two releases (sessions.go); nil
	// where sessions cannot be redelivered (a single agent process).
	Sessions []SessionKey
	// Noise is the release's share of the state of its correlated-noise
	// stream (with Entry.Correlation; nil without), written in the same
	// batch (bandmf.go).
	Noise *NoiseStep
}

// Release writes the snapshot, its ledger entry, the users' counters, the
// noise record of a correlated-noise stream and the head pointer in one
// synced batch, and returns the entry as written. A release with
// Entry.Correlation is refused (ErrParticipation) if a user in it took part
// in MaxParticipations releases already or in one of the last
// MinSeparation - 1 versions.
func (s *Store) Release(r Release) (Entry, error) { return s.ReleaseWith(r, nil) }

// ReleaseWith is Release with before, if not nil, called with the entry
// as it will be written (sequence, time and chain complete) just before
// the batch commits: if before fails, nothing is written and its error is
// returned. A learner of a cluster appends the entry to the ledger of
// record there (package ledger/record), so that its own ledger never holds
// an entry the record refused.
func (s *Store) ReleaseWith(r Release, before func(Entry) error) (Entry, error) {
	return s.releaseAs(r, before, nil)
}

// Apply writes a release that another process wrote into the ledger of
// record, with the snapshot it paid for: e must be this ledger's next
// entry exactly as that process wrote it (its sequence, time, previous
// hash and hash: ErrInvalid otherwise), and every check of Release holds
// (version, users, participation). Releases with correlated noise are
// refused: their noise records are the writer's secret and never leave
// it, so a ledger that applies one could not continue its stream (see
// docs/privacy.md, section 3).
func (s *Store) Apply(e Entry, snapshot []byte) (Entry, error) {
	switch {
	case e.Kind == KindWriter:
		if fp := s.userKeyID(); e.UserKeyID != fp {
			return Entry{}, fmt.Errorf("%w: entry %d: the writer keys users with the secret %.12s, this ledger with %.12s: a cluster's processes must share one user key (copy the writer's %s), or each would count one user under its own key", ErrInvalid, e.Seq, e.UserKeyID, fp, userKeyFile)
		}
		return s.appendWriter(e.Writer, e.Lease, nil, &e)
	case e.Kind != KindRelease:
		return Entry{}, fmt.Errorf("%w: entry %d: applying a %s entry from the record is not supported", ErrInvalid, e.Seq, e.Kind)
	case e.Correlation != nil:
		return Entry{}, fmt.Errorf("%w: entry %d: a release with correlated noise cannot be applied from the record (its noise state stays with its writer)", ErrInvalid, e.Seq)
	}
	return s.releaseAs(Release{Version: e.PolicyVersion, Snapshot: snapshot, Entry: e, Users: e.Users, Sessions: e.Sessions}, nil, &e)
}

// releaseAs is Release; with want, the entry must come out exactly as want
// (its time is kept).
func (s *Store) releaseAs(r Release, before func(Entry) error, want *Entry) (Entry, error) {
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
	e.Kind, e.Released = KindRelease, false
	e.PolicyVersion = r.Version
	e.Users = r.Users
	e.Sessions = r.Sessions
	if err := e.validate(); err != nil {
		return Entry{}, err
	}
	z, err := e.userZ()
	if err != nil {
		return Entry{}, err
	}
	if e.Correlation != nil {
		if err := checkCorrelation(e.Correlation, r.Version, 0); err != nil {
			return Entry{}, err
		}
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
		if err := e.checkParticipation(st, u, r.Version); err != nil {
			return Entry{}, err
		}
		st.Updates++
		st.SumInvZ2 += 1 / (z * z)
		st.LastVersion = r.Version
		if err := setJSON(b, userKey(u), st); err != nil {
			return Entry{}, err
		}
	}
	if err := s.putSessions(b, r.Sessions, r.Version); err != nil {
		return Entry{}, err
	}
	if err := b.Set(snapKey(r.Version), r.Snapshot, nil); err != nil {
		return Entry{}, err
	}
	e, err = s.appendEntryAs(b, h, e, want)
	if err != nil {
		return Entry{}, err
	}
	if err := s.putNoise(b, r, e); err != nil {
		return Entry{}, err
	}
	if before != nil {
		if err := before(e); err != nil {
			return Entry{}, err
		}
	}
	if err := s.commit(b, h, Head{Seq: e.Seq, Hash: e.Hash, Version: r.Version}); err != nil {
		return Entry{}, fmt.Errorf("ledger: release %d: %w", r.Version, err)
	}
	return e, nil
}

// appendEntry completes e (sequence, time, chain) and adds it to the batch.
func (s *Store) appendEntry(b *pebble.Batch, h Head, e Entry) (Entry, error) {
	return s.appendEntryAs(b, h, e, nil)
}

// appendEntryAs is appendEntry; with want (an entry another process wrote)
// it keeps want's time and requires the completed entry to be want
// exactly: the same sequence, previous hash and hash.
func (s *Store) appendEntryAs(b *pebble.Batch, h Head, e Entry, want *Entry) (Entry, error) {
	e.Seq = h.Seq + 1
	e.Time = s.now().UTC()
	if want != nil {
		if want.Seq != e.Seq || want.PrevHash != h.Hash {
			return Entry{}, fmt.Errorf("%w: entry %d (after %.12s) does not follow this ledger's head, entry %d (%.12s)", ErrInvalid, want.Seq, want.PrevHash, h.Seq, h.Hash)
		}
		e.Time = want.Time
	}
	e.PrevHash = h.Hash
	e.Hash = ""
	sum, err := e.computeHash()
	if err != nil {
		return Entry{}, err
	}
	e.Hash = sum
	if want != nil && want.Hash != sum {
		return Entry{}, fmt.Errorf("%w: entry %d: hash %.12s recorded, %.12s recomputed: its contents differ from what this ledger would write", ErrInvalid, want.Seq, want.Hash, sum)
	}
	if err := setJSON(b, entryKey(e.Seq), e); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// Entries calls fn for every entry in sequence order.
func (s *Store) Entries(fn func(Entry) error) error {
	return s.scan(prefEntry, prefixEnd(prefEntry), func(k, v []byte) error {
		var e Entry
		if err := decodeStrict(v, &e); err != nil {
			return fmt.Errorf("%w: entry key %x: %v", ErrCorrupt, k, err)
		}
		return fn(e)
	})
}

// Users calls fn for every user counter.
func (s *Store) Users(fn func(UserKey, UserState) error) error {
	return s.scan(prefUser, prefixEnd(prefUser), func(key, v []byte) error {
		k := key[len(prefUser):]
		if len(k) != userKeyLen {
			return fmt.Errorf("%w: user key of length %d", ErrCorrupt, len(k))
		}
		var uk UserKey
		copy(uk[:], k)
		var st UserState
		if err := decodeStrict(v, &st); err != nil {
			return fmt.Errorf("%w: user %s: %v", ErrCorrupt, uk, err)
		}
		return fn(uk, st)
	})
}

// scan calls fn for every key in [lower, upper) (nil: unbounded). A read
// error is returned wrapping ErrCorrupt; a panic inside Pebble (a damaged
// file that broke one of its invariants) is recovered into one, and fails
// the store. A panic in fn is not recovered.
func (s *Store) scan(lower, upper []byte, fn func(k, v []byte) error) (err error) {
	if s.dbClosed.Load() {
		return ErrClosed
	}
	inFn := false
	defer func() {
		if r := recover(); r != nil {
			if inFn {
				panic(r)
			}
			err = fmt.Errorf("%w: reading the store panicked: %s", ErrCorrupt, firstLine(fmt.Sprint(r)))
			s.health.fail(err)
		}
	}()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("%w: %s", ErrCorrupt, firstLine(err.Error()))
	}
	for it.First(); it.Valid(); it.Next() {
		inFn = true
		err := fn(it.Key(), it.Value())
		inFn = false
		if err != nil {
			it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("%w: %s", ErrCorrupt, firstLine(err.Error()))
	}
	return nil
}

func (s *Store) get(key []byte) (_ []byte, err error) {
	if s.dbClosed.Load() {
		return nil, ErrClosed
	}
	defer s.recoverInto(&err)
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		if pebble.IsCorruptionError(err) {
			return nil, fmt.Errorf("%w: read %q: %s", ErrCorrupt, key, firstLine(err.Error()))
		}
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

// decodeStrict decodes a stored value: a repeated key, an unknown field or
// trailing data is an error (jsonstrict.Decode).
func decodeStrict(data []byte, v any) error { return jsonstrict.Decode(data, v) }

func be64(prefix []byte, n uint64) []byte {
	k := make([]byte, len(prefix)+8)
	copy(k, prefix)
	binary.BigEndian.PutUint64(k[len(prefix):], n)
	return k
}

func be64Value(v []byte) uint64 { return binary.BigEndian.Uint64(v) }

func entryKey(seq uint64) []byte     { return be64(prefEntry, seq) }
func snapKey(version uint64) []byte  { return be64(prefSnap, version) }
func userKey(k UserKey) []byte       { return append(append([]byte(nil), prefUser...), k[:]...) }
func budgetKey(id string) []byte     { return append(append([]byte(nil), prefBudget...), id...) }
func recordKey(h RecordHash) []byte  { return append(append([]byte(nil), prefRecord...), h[:]...) }
func fileKey(id string) []byte       { return append(append([]byte(nil), prefFile...), id...) }
func linkPrefix(h RecordHash) []byte { return append(append([]byte(nil), prefLink...), h[:]...) }
func linkKey(h RecordHash, seq uint64) []byte {
	return be64(linkPrefix(h), seq)
}

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

// userKeyID is the user key's fingerprint in hex.
func (s *Store) userKeyID() string {
	fp := keyFingerprint(s.userKey)
	return hex.EncodeToString(fp[:])
}

// AppendWriter appends a writer entry (KindWriter) naming writer, the
// lease revision it holds and its user key's fingerprint, calling before
// as ReleaseWith does.
func (s *Store) AppendWriter(writer string, lease uint64, before func(Entry) error) (Entry, error) {
	return s.appendWriter(writer, lease, before, nil)
}

// appendWriter is AppendWriter; with want, Apply's rules.
func (s *Store) appendWriter(writer string, lease uint64, before func(Entry) error, want *Entry) (Entry, error) {
	if strings.TrimSpace(writer) == "" || len(writer) > 256 || lease == 0 {
		return Entry{}, fmt.Errorf("%w: writer entry for %q at lease %d: want a name of 1 to 256 bytes and a lease revision", ErrInvalid, writer, lease)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Entry{}, ErrClosed
	}
	h, err := s.Head()
	if err != nil {
		return Entry{}, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	e := Entry{Kind: KindWriter, Mechanism: "writer: " + writer + " took the writer lease", Writer: writer, Lease: lease, UserKeyID: s.userKeyID()}
	if e, err = s.appendEntryAs(b, h, e, want); err != nil {
		return Entry{}, err
	}
	if before != nil {
		if err := before(e); err != nil {
			return Entry{}, err
		}
	}
	if err := s.commit(b, h, Head{Seq: e.Seq, Hash: e.Hash, Version: h.Version}); err != nil {
		return Entry{}, fmt.Errorf("ledger: writer entry: %w", err)
	}
	return e, nil
}
