package ledger

import (
	"cmp"
	"crypto/hmac"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"
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
	// Init allows creating a new store in a directory that exists and is
	// not empty. Without it a new store is created only where the
	// directory is missing or empty (ErrNotEmpty otherwise).
	Init bool
	// ReadOnly opens the store without writing to it. A read-only open
	// checks the user key and the head file against the store but does not
	// run the full verification (Verify does).
	ReadOnly bool
	// ExpectHead, when set, refuses a store that does not hold this entry
	// (a head recorded outside the data directory): the one check that
	// catches an older copy of the whole directory restored.
	ExpectHead *HeadRef
	// Now is the clock for entry times; nil means time.Now.
	Now func() time.Time
	// UserKey, when set (32 bytes), is the user key a new store is
	// created with instead of a fresh secret: a cluster's processes share
	// one (see Entry.UserKeyID). An existing store with another key is
	// refused.
	UserKey []byte
	// LiveView, for a writable store on the operating system's file
	// system, lets other processes read the ledger while this one holds
	// it: a read-only Open from another process gets a consistent copy
	// this store makes on request (live.go says how and why). The agent
	// and the offline runs set it.
	LiveView bool
	// WaitLock, when > 0, makes Open wait up to this long for a lock
	// another process holds (an offline run on the same ledger) instead
	// of failing at once with ErrLocked. A read-only open reads a live
	// copy instead where the holder serves one.
	WaitLock time.Duration
}

// Store is the ledger of one data directory. Its methods are safe for
// concurrent use; appends are serialised.
type Store struct {
	db      *pebble.DB
	lock    *pebble.Lock
	fs      vfs.FS
	dir     string
	userKey []byte
	wantKey []byte // Options.UserKey: the key a new store is created with
	log     zerolog.Logger
	now     func() time.Time
	heads   *headsWriter // nil when read-only
	health  *health
	// pendingHead is a committed head whose record a full disk kept out of
	// the head file (diskfull.go); the next write writes it first.
	pendingHead *Head
	bg          *bgState
	// strayTables are the table files the store's MANIFEST does not
	// reference (a flush cut short), found by the read-only open.
	strayTables []string
	// notes are what Open found that is not damage (Verify reports them).
	notes []string
	// live serves copies to other processes (Options.LiveView); nil
	// otherwise.
	live *liveServer
	// liveConn, for a store that is a copy made by the process holding
	// the ledger (openLive), is the connection whose close tells that
	// process to remove the copy.
	liveConn io.Closer
	// afterCommit, when set (tests), runs between a commit and its head
	// record.
	afterCommit func()
	// noHeadRecord (benchmarks only) skips the head record, to measure the
	// write path without it.
	noHeadRecord bool

	mu       sync.Mutex // serialises appends and guards closed
	closed   bool
	dbClosed atomic.Bool // db is closed: reads return ErrClosed
}

// storeAnchor is the store's own record of its format and of the user key
// it was created with (written before anything else).
type storeAnchor struct {
	Format int `json:"format"`
	// KeyFingerprint is HMAC-SHA256 of a fixed label under the user key, in
	// hex: it identifies the key without revealing it.
	KeyFingerprint string `json:"key_fingerprint"`
}

func (a storeAnchor) fingerprint() ([32]byte, error) {
	var fp [32]byte
	b, err := hex.DecodeString(a.KeyFingerprint)
	if err != nil || len(b) != 32 || a.Format != headsFormat {
		return fp, fmt.Errorf("%w: anchor record %+v", ErrCorrupt, a)
	}
	copy(fp[:], b)
	return fp, nil
}

// health is a store's sticky failure: once Pebble reports corruption, a
// recovered panic, or a commit whose head record could not be written, the
// store refuses every later write.
type health struct {
	mu  sync.Mutex
	err error
}

func (h *health) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		h.err = err
	}
}

func (h *health) get() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Open opens the ledger in dir, creating the store, the user-key secret and
// the head file on first start (unless MustExist) where dir is missing or
// empty, or with Options.Init.
//
// An existing store is first opened read-only, so that Pebble's recovery
// rewrites nothing before it is checked: the user key must be the one the
// store was created with (its fingerprint is in the store and in the head
// file), and the store's head must match the head file (see the package's
// head file documentation). A writable open then runs the full Verify and
// refuses any problem. Every refusal wraps ErrCorrupt and says what was
// found; nothing is repaired except the one head record a crash between a
// commit and its record leaves out. A store created by an earlier version
// (no head file, no anchor) is verified and given both at its first
// writable open.
func Open(dir string, o Options) (*Store, error) {
	fs := o.FS
	if fs == nil {
		fs = vfs.Default
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	if o.UserKey != nil && len(o.UserKey) != userKeyLen {
		return nil, fmt.Errorf("%w: a user key of %d bytes, want %d", ErrInvalid, len(o.UserKey), userKeyLen)
	}
	s := &Store{fs: fs, dir: dir, log: o.Logger, now: now, health: &health{}, bg: newBGState(), wantKey: o.UserKey}
	pdir := filepath.Join(dir, pebbleDir)
	_, statErr := fs.Stat(pdir)
	exists := statErr == nil
	_, keyErr := fs.Stat(filepath.Join(dir, userKeyFile))
	_, headsErr := fs.Stat(filepath.Join(dir, headsFile))
	switch {
	case !exists && keyErr == nil:
		// The store directory is synced before the key is written, so a key
		// without a store means the store was lost, not never created.
		return nil, fmt.Errorf("%w: %s has a user key but no store: the ledger was lost or moved", ErrCorrupt, dir)
	case !exists && headsErr == nil:
		return nil, fmt.Errorf("%w: %s has a head file (%s) but no store: the ledger was lost or moved", ErrCorrupt, dir, headsFile)
	case !exists && (o.MustExist || o.ReadOnly):
		return nil, fmt.Errorf("%w: no ledger in %s", ErrNotFound, dir)
	case !exists:
		if !o.Init {
			if names, err := fs.List(dir); err == nil && len(names) > 0 {
				return nil, fmt.Errorf("%w: %s (holds %d entries; to create a new ledger there, initialise it explicitly)", ErrNotEmpty, dir, len(names))
			}
		}
		if err := mkdirAllSync(fs, pdir); err != nil {
			return nil, fmt.Errorf("ledger: create %s: %w", pdir, err)
		}
	}
	lock, live, err := s.lockDir(pdir, o)
	if err != nil || live != nil {
		return live, err
	}
	s.lock = lock
	if err := s.open(exists, keyErr == nil || headsErr == nil, o); err != nil {
		s.abort()
		return nil, err
	}
	if o.LiveView && !o.ReadOnly && fs == vfs.Default {
		if err := s.startLive(); err != nil {
			s.log.Warn().Err(err).Str("dir", dir).Msg("the ledger's live view is off: other processes cannot read the ledger while this one holds it")
		}
	}
	return s, nil
}

// lockPoll is how often Open retries a lock it waits for (Options.WaitLock).
const lockPoll = 250 * time.Millisecond

// lockDir takes the lock of the store in pdir for Open. Where another
// process holds it, a read-only open reads the copy that process makes
// (openLive: that copy's Store is returned as live, and no lock), and an
// open with Options.WaitLock waits for it, saying once who holds it.
func (s *Store) lockDir(pdir string, o Options) (lock *pebble.Lock, live *Store, err error) {
	deadline := time.Now().Add(o.WaitLock)
	for waited := false; ; waited = true {
		lock, err := pebble.LockDirectory(pdir, s.fs)
		if err == nil {
			return lock, nil, nil
		}
		lerr := lockError(s.dir, pdir, err)
		if !errors.Is(lerr, ErrLocked) {
			return nil, nil, lerr
		}
		if o.ReadOnly && s.fs == vfs.Default {
			if live, err := openLive(s.dir, o); !errors.Is(err, errNoLiveView) {
				return nil, live, err
			}
		}
		if !time.Now().Before(deadline) {
			return nil, nil, lerr
		}
		if !waited {
			var le *lockedError
			errors.As(lerr, &le)
			o.Logger.Warn().Str("dir", s.dir).Str("holder", cmp.Or(le.holder, le.by)).Str("wait_lock", o.WaitLock.String()).Msg("the ledger is in use: waiting for its lock")
		}
		time.Sleep(min(lockPoll, time.Until(deadline)))
	}
}

// CheckUnlocked reports ErrLocked if another process, or an open Store of
// this process, holds the lock of the ledger in dir. It creates nothing and
// leaves the lock free: a missing ledger is not locked. A caller that
// starts other things before Open (a server that binds a port) checks it
// first, so that a second agent on the same data directory is told that,
// not that its port is taken.
func CheckUnlocked(dir string) error {
	pdir := filepath.Join(dir, pebbleDir)
	if _, err := os.Stat(pdir); err != nil {
		return nil // no ledger yet, or Open will say what is wrong
	}
	lock, err := pebble.LockDirectory(pdir, vfs.Default)
	if err != nil {
		return lockError(dir, pdir, err)
	}
	return lock.Close()
}

// lockError is the error of Open when the store's lock cannot be taken:
// ErrLocked when another process holds it (fcntl's EAGAIN or EACCES) or
// another open Store of this process does (Pebble's own registry), else
// the failure to create the lock file (a permission, a read-only file
// system), which is neither a lock held nor damage.
func lockError(dir, pdir string, err error) error {
	var errno syscall.Errno
	var pe *iofs.PathError
	switch {
	case !errors.As(err, &pe) && errors.As(err, &errno) && (errno == syscall.EAGAIN || errno == syscall.EACCES):
		return &lockedError{dir: dir, by: "another process", holder: lockHolder(pdir)}
	case strings.Contains(err.Error(), "held by current process"):
		return &lockedError{dir: dir, by: "another store of this process"}
	}
	return fmt.Errorf("ledger: lock %s: %w", pdir, err)
}

// lockedError is ErrLocked naming the directory and its holder: by is
// "another process" or "another store of this process", holder the
// process ("pid 1234 (dprl agent)") where lockHolder could tell.
type lockedError struct{ dir, by, holder string }

func (e *lockedError) Error() string {
	h := ""
	if e.holder != "" {
		h = e.holder + "; "
	}
	return "ledger: data directory " + e.dir + " is in use by " + e.by + " (" + h + "its lock is held: a running agent or offline run; " +
		"wait for it to end (an offline run waits with --wait-lock DURATION), or read a copy: the agent's --backup-dir backups are ledgers every dprl ledger command opens)"
}

// Is makes the error ErrLocked for errors.Is.
func (e *lockedError) Is(target error) bool { return target == ErrLocked }

// open opens Pebble (read-only first for an existing store), checks the
// store against the key and the head file, and for a writable open
// finishes creation, adopts a store of an earlier version, or verifies and
// resumes an anchored one.
func (s *Store) open(exists, hasFiles bool, o Options) (err error) {
	defer s.recoverInto(&err)
	if exists {
		err := s.openPebble(o, true, false)
		switch {
		case errors.Is(err, pebble.ErrDBDoesNotExist) && !hasFiles && !o.ReadOnly && !o.MustExist:
			// A crash right after the directory was created: finish creating.
			exists = false
		case errors.Is(err, pebble.ErrDBDoesNotExist):
			return fmt.Errorf("%w: %s holds no Pebble store (its MANIFEST or marker files are missing)", ErrCorrupt, filepath.Join(s.dir, pebbleDir))
		case err != nil:
			return err
		}
	}
	if exists {
		st, err := s.inspect(o.ReadOnly)
		if err != nil {
			return err
		}
		if o.ReadOnly {
			s.userKey, s.notes = st.key, st.notes
			if err := s.checkWantKey(); err != nil {
				return err
			}
			if o.ExpectHead != nil {
				return s.CheckHead(*o.ExpectHead)
			}
			return nil
		}
		// Checked: now let Pebble recover for writing.
		s.strayTables = s.unreferencedTables()
		if err := s.closeDB(); err != nil {
			return err
		}
	}
	if err := s.openPebble(o, false, !exists); err != nil {
		return err
	}
	if !exists {
		// Make the new store's directory entry durable before the key.
		if err := syncDir(s.fs, s.dir); err != nil {
			return fmt.Errorf("ledger: sync %s: %w", s.dir, err)
		}
	}
	st, err := s.inspect(false)
	if err != nil {
		return err
	}
	switch st.state {
	case stateNew:
		err = s.create(st)
	case stateLegacy, stateAdopting:
		err = s.adopt(st)
	default:
		err = s.resume(st)
	}
	if err != nil {
		return err
	}
	if o.ExpectHead != nil {
		return s.CheckHead(*o.ExpectHead)
	}
	return nil
}

// ledgerFormat is the Pebble format new ledgers are created with. Opening
// never lowers a store's format and never raises it above this one, so an
// upgrade of dprl that only bumps its Pebble dependency leaves existing
// ledgers readable by the previous release (a rollback stays possible).
// It must be at least FormatWALSyncChunks (see openPebble); raising it is
// a format change: add a ledger of the new format to testdata/compat.
const ledgerFormat = pebble.FormatValueSeparation

// openPebble opens the Pebble store under the held lock.
func (s *Store) openPebble(o Options, readOnly, create bool) error {
	pdir := filepath.Join(s.dir, pebbleDir)
	lg := pebbleLogger{o.Logger}
	h, bg := s.health, s.bg
	if !readOnly && !create {
		if err := s.checkOpenSpace(pdir); err != nil {
			return err
		}
	}
	opts := &pebble.Options{
		FS:               s.fs,
		Lock:             s.lock,
		ErrorIfNotExists: !create,
		ReadOnly:         readOnly,
		// WAL chunks carry the offset synced so far, so that a damaged
		// record followed by a later 32 KiB block of the log is reported
		// as corruption instead of being taken for the log's torn end.
		// Damage in the log's last block is still read as a torn end (a
		// ledger's log is often one block: every such flip measured
		// truncated the store), which the head file catches. The version
		// is pinned (ledgerFormat), not FormatNewest, so that a newer
		// Pebble never ratchets a ledger's format by merely opening it.
		FormatMajorVersion: ledgerFormat,
		MemTableSize:       memTableSize,
		Logger:             lg,
		EventListener: &pebble.EventListener{
			// Pebble's default calls Fatalf (a panic); a damaged block is
			// also returned as an error by the read that found it, so
			// record it and refuse later writes instead.
			DataCorruption: func(info pebble.DataCorruptionInfo) {
				lg.Errorf("%s", info)
				h.fail(fmt.Errorf("%w: %s", ErrCorrupt, firstLine(info.String())))
			},
			BackgroundError: func(err error) {
				if isDiskFull(err) {
					// Not damage: Pebble retries (a flush at once and
					// without end), so log it and slow the retries down.
					lg.Errorf("background write failed, the disk is full (the ledger is intact; free space): %v", err)
					bg.backgroundFull(err)
					return
				}
				lg.Errorf("background error: %v", err)
				if pebble.IsCorruptionError(err) {
					h.fail(fmt.Errorf("%w: %s", ErrCorrupt, firstLine(err.Error())))
				}
			},
			FlushEnd: func(info pebble.FlushInfo) { bg.flushEnd(info.Err) },
		},
	}
	var db *pebble.DB
	var err error
	if readOnly {
		db, err = pebble.Open(pdir, opts)
	} else {
		db, err = s.openWatched(pdir, opts)
	}
	if err != nil && (errors.Is(err, pebble.ErrDBDoesNotExist) || errors.Is(err, ErrDiskFull)) {
		return err
	}
	if isDiskFull(err) {
		return s.diskFull("opening the ledger failed to write "+pdir, true, err)
	}
	if err != nil {
		return fmt.Errorf("%w: open %s: %s", ErrCorrupt, pdir, firstLine(err.Error()))
	}
	s.db = db
	s.dbClosed.Store(false)
	return nil
}

// The states inspect finds.
const (
	stateAnchored = iota // created by this version: anchor record and head file
	stateNew             // empty: new, or its creation did not finish
	stateLegacy          // created by an earlier version: no anchor, no head file
	stateAdopting        // an earlier version's store whose adoption did not finish
)

// openState is what inspect found.
type openState struct {
	state   int
	head    Head
	key     []byte // nil when user.key is missing
	heads   headsInfo
	hasHead bool // the head file exists
	pending bool // the store is one commit ahead of the head file
	notes   []string
}

// inspect reads the store's head and anchor, the user key and the head
// file, and refuses every combination that a crash cannot leave.
func (s *Store) inspect(readOnly bool) (openState, error) {
	var st openState
	var err error
	if st.head, err = s.Head(); err != nil {
		return st, err
	}
	var anchor storeAnchor
	anchored, err := s.getJSON(keyAnchor, &anchor)
	if err != nil {
		return st, err
	}
	empty, err := s.isEmpty()
	if err != nil {
		return st, err
	}
	keyPath, headsPath := filepath.Join(s.dir, userKeyFile), filepath.Join(s.dir, headsFile)
	if st.key, err = readUserKey(s.fs, keyPath); err != nil {
		return st, err
	}
	st.heads, err = scanHeads(s.fs, headsPath, nil)
	st.hasHead = err == nil
	if err != nil && !isNotExist(err) {
		return st, err
	}
	switch {
	case anchored:
		err = s.inspectAnchored(&st, anchor, keyPath, headsPath)
	case empty:
		err = st.inspectNew(readOnly, keyPath, headsPath)
	case st.hasHead:
		err = st.inspectAdopting(headsPath)
	default:
		err = st.inspectLegacy(keyPath)
	}
	return st, err
}

// inspectAnchored checks a store with an anchor record: the user key and
// the head file must be the ones it was created with, and the store's head
// the head file's last record or one commit ahead of it.
func (s *Store) inspectAnchored(st *openState, anchor storeAnchor, keyPath, headsPath string) error {
	fp, err := anchor.fingerprint()
	if err != nil {
		return err
	}
	switch {
	case st.key == nil:
		return fmt.Errorf("%w: %s is missing: the ledger was created with a user key (fingerprint %.16s) and cannot map users to their counters without it; restore that file", ErrCorrupt, keyPath, hex.EncodeToString(fp[:]))
	case keyFingerprint(st.key) != fp:
		got := keyFingerprint(st.key)
		return fmt.Errorf("%w: %s is not the key this ledger was created with (fingerprint %.16s, the file's %.16s): under another key every user's counter would start again from zero and the per-user caps would reset; restore the original user.key", ErrCorrupt, keyPath, hex.EncodeToString(fp[:]), hex.EncodeToString(got[:]))
	case !st.hasHead:
		return fmt.Errorf("%w: %s is missing: it records every committed head, and without it a store that lost entries cannot be told from an intact one", ErrCorrupt, headsPath)
	case st.heads.fingerprint != fp:
		return fmt.Errorf("%w: %s belongs to another ledger (its user-key fingerprint differs from the store's)", ErrCorrupt, headsPath)
	}
	if st.pending, err = s.compareHeads(st.head, st.heads, headsPath); err != nil {
		return err
	}
	st.state = stateAnchored
	return nil
}

// inspectNew checks an empty store: a head file beside it must record no
// commit and belong to the user key; a read-only open needs the key.
func (st *openState) inspectNew(readOnly bool, keyPath, headsPath string) error {
	switch {
	case st.hasHead && (st.heads.records > 0 || st.heads.torn > 0):
		return fmt.Errorf("%w: the store is empty but %s records commits up to entry %d: the store lost them (a damaged or deleted write-ahead log, or an older copy of ledger/ restored)", ErrCorrupt, headsPath, st.heads.last.Seq)
	case st.hasHead && st.key == nil:
		return fmt.Errorf("%w: %s exists but %s is missing", ErrCorrupt, headsPath, keyPath)
	case st.hasHead && keyFingerprint(st.key) != st.heads.fingerprint:
		return fmt.Errorf("%w: %s was written for another user key than %s", ErrCorrupt, headsPath, keyPath)
	case readOnly && st.key == nil:
		return fmt.Errorf("%w: %s is missing", ErrNotFound, keyPath)
	}
	st.state = stateNew
	return nil
}

// inspectAdopting checks a store without an anchor record but with a head
// file: only an adoption interrupted after writing the head file (with the
// current head) and before the anchor leaves that.
func (st *openState) inspectAdopting(headsPath string) error {
	h, err := headRecOf(st.head)
	if err != nil {
		return err
	}
	if st.key == nil || keyFingerprint(st.key) != st.heads.fingerprint || st.heads.records != 1 || st.heads.torn != 0 || st.heads.last != h || st.head.Seq == 0 {
		return fmt.Errorf("%w: the store has no anchor record but %s exists (last record entry %d, the store's head entry %d): the store lost its first records, or ledger/ was replaced", ErrCorrupt, headsPath, st.heads.last.Seq, st.head.Seq)
	}
	st.state = stateAdopting
	st.notes = append(st.notes, "the adoption of this ledger (created by an earlier version) did not finish; the next writable open finishes it")
	return nil
}

// inspectLegacy checks a store of an earlier version (no anchor record, no
// head file): it needs its user key.
func (st *openState) inspectLegacy(keyPath string) error {
	if st.key == nil {
		return fmt.Errorf("%w: %s is missing: user counters cannot be mapped without it", ErrCorrupt, keyPath)
	}
	st.state = stateLegacy
	st.notes = append(st.notes, fmt.Sprintf("no %s: the ledger was created by an earlier version, without head records; the next writable open verifies it and adds them", headsFile))
	return nil
}

// compareHeads checks the store's head against the head file's last intact
// record, and reports whether the store is one commit ahead (the only
// difference a crash leaves).
func (s *Store) compareHeads(h Head, hi headsInfo, path string) (bool, error) {
	last := hi.last
	switch {
	case h.Seq < last.Seq:
		return false, fmt.Errorf("%w: the store ends at entry %d but %s records entry %d (hash %.16s) as committed: entries %d to %d were lost (a damaged or deleted write-ahead log or MANIFEST, or an older copy of ledger/ restored)", ErrCorrupt, h.Seq, path, last.Seq, last.hash(), h.Seq+1, last.Seq)
	case h.Seq == last.Seq:
		if h.Hash != last.hash() || h.Version != last.Version {
			return false, fmt.Errorf("%w: the store's head (entry %d, hash %.16s, version %d) differs from %s's (hash %.16s, version %d): the store was replaced or rewritten", ErrCorrupt, h.Seq, h.Hash, h.Version, path, last.hash(), last.Version)
		}
		if hi.torn > 0 {
			return false, fmt.Errorf("%w: %s ends with %d bytes of a damaged record after entry %d, which is the store's head: no crash leaves that", ErrCorrupt, path, hi.torn, last.Seq)
		}
		return false, nil
	}
	var prev uint64
	v, err := s.get(keyPrev)
	if err != nil {
		return false, err
	}
	if len(v) == 8 {
		prev = be64Value(v)
	}
	if v == nil || len(v) != 8 || prev != last.Seq {
		return false, fmt.Errorf("%w: the store (entry %d) is more than one commit ahead of %s (entry %d): the head file lost records", ErrCorrupt, h.Seq, path, last.Seq)
	}
	if last.Seq > 0 {
		e, err := s.entry(last.Seq)
		if err != nil {
			return false, err
		}
		if e.Hash != last.hash() {
			return false, fmt.Errorf("%w: entry %d has hash %.16s, %s recorded %.16s", ErrCorrupt, last.Seq, e.Hash, path, last.hash())
		}
	}
	return true, nil
}

// create finishes a new store: the user key (if missing), the head file
// (if missing) and the anchor record, in that order, each synced; a crash
// between them leaves a state inspect finishes.
func (s *Store) create(st openState) error {
	key := st.key
	if key == nil {
		var err error
		if key, err = createUserKey(s.fs, s.dir, s.wantKey); err != nil {
			return err
		}
	}
	fp := keyFingerprint(key)
	if !st.hasHead {
		if err := createHeads(s.fs, s.dir, fp, nil); err != nil {
			return err
		}
		st.heads = headsInfo{fingerprint: fp, validLen: headsRecLen}
	}
	if err := s.setSync(keyAnchor, storeAnchor{Format: headsFormat, KeyFingerprint: hex.EncodeToString(fp[:])}); err != nil {
		return err
	}
	s.userKey = key
	if err := s.checkWantKey(); err != nil {
		return err
	}
	return s.openHeads(st.heads)
}

// adopt gives a store of an earlier version its head file and anchor after
// verifying it: the head file (with the current head) first, then the
// anchor, so that a crash between them is recognised (stateAdopting).
func (s *Store) adopt(st openState) error {
	s.userKey = st.key
	if err := s.checkWantKey(); err != nil {
		return err
	}
	if err := s.mustVerify(); err != nil {
		return err
	}
	fp := keyFingerprint(st.key)
	if st.state == stateLegacy {
		var first *Head
		if st.head.Seq > 0 {
			first = &st.head
		}
		if err := createHeads(s.fs, s.dir, fp, first); err != nil {
			return err
		}
		st.heads = headsInfo{fingerprint: fp, validLen: headsRecLen}
		if first != nil {
			st.heads.validLen += headsRecLen
		}
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := setJSON(b, keyAnchor, storeAnchor{Format: headsFormat, KeyFingerprint: hex.EncodeToString(fp[:])}); err != nil {
		return err
	}
	if err := b.Set(keyPrev, be64(nil, st.head.Seq), nil); err != nil {
		return err
	}
	if err := s.commitBatch(b); err != nil {
		return err
	}
	s.log.Warn().Str("dir", s.dir).Uint64("head", st.head.Seq).Msg("ledger created by an earlier version: verified, and given a head file and an anchor record")
	return s.openHeads(st.heads)
}

// resume verifies an anchored store and writes the head record a crash
// left out, if any.
func (s *Store) resume(st openState) error {
	s.userKey = st.key
	if err := s.checkWantKey(); err != nil {
		return err
	}
	if err := s.mustVerify(); err != nil {
		return err
	}
	if err := s.openHeads(st.heads); err != nil {
		return err
	}
	if st.pending {
		if err := s.heads.append(st.head); err != nil {
			return fmt.Errorf("ledger: write the head record of entry %d: %w", st.head.Seq, err)
		}
		s.log.Warn().Uint64("seq", st.head.Seq).Msg("wrote the head record of the last commit: the previous run stopped between the commit and its record")
	}
	return nil
}

// mustVerify runs Verify and turns any problem into an ErrCorrupt error.
func (s *Store) mustVerify() error {
	r, err := s.Verify()
	if err != nil {
		return err
	}
	if !r.OK() {
		const show = 5
		ps := r.Problems
		more := ""
		if len(ps) > show {
			ps, more = ps[:show], fmt.Sprintf("; and %d more (dprl ledger verify lists them)", len(r.Problems)-show)
		}
		return fmt.Errorf("%w: %s fails verification: %s%s", ErrCorrupt, filepath.Join(s.dir, pebbleDir), strings.Join(ps, "; "), more)
	}
	return nil
}

func (s *Store) openHeads(hi headsInfo) error {
	w, err := openHeadsWriter(s.fs, filepath.Join(s.dir, headsFile), hi.validLen)
	if err != nil {
		return err
	}
	s.heads = w
	return nil
}

// isEmpty reports whether the store holds no key at all.
func (s *Store) isEmpty() (bool, error) {
	empty := true
	err := s.scan(nil, nil, func(_, _ []byte) error {
		empty = false
		return errStop
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return empty, err
}

var errStop = errors.New("stop")

// readUserKey reads the HMAC secret; a missing file is (nil, nil).
func readUserKey(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if isNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: open %s: %w", path, err)
	}
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

// createUserKey writes a new HMAC secret (mode 0600, synced, the directory
// synced).
func createUserKey(fs vfs.FS, dir string, given []byte) ([]byte, error) {
	path := filepath.Join(dir, userKeyFile)
	key := make([]byte, userKeyLen)
	if given != nil {
		copy(key, given)
	} else if _, err := rand.Read(key); err != nil {
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
	// vfs.File.Write may modify its argument: write a copy.
	if _, err := w.Write(append([]byte(nil), key...)); err != nil {
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

// Close closes the store. It is safe to call more than once.
func (s *Store) Close() error {
	if s == nil {
		return nil
	}
	// Before the mutex: a copy being made for a reader takes it.
	s.live.stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.release()
	if s.liveConn != nil {
		s.liveConn.Close() // the holder removes the copy
		s.liveConn = nil
	}
	return err
}

// abort releases what a failed Open acquired.
func (s *Store) abort() {
	s.closed = true
	s.release()
}

func (s *Store) release() error {
	err := s.closeDB()
	if herr := s.heads.close(); err == nil {
		err = herr
	}
	s.heads = nil
	if s.lock != nil {
		if lerr := s.lock.Close(); err == nil {
			err = lerr
		}
		s.lock = nil
	}
	return err
}

// closeDB closes Pebble; a panic while closing a damaged store is returned
// as an error.
func (s *Store) closeDB() (err error) {
	if s.db == nil || s.dbClosed.Swap(true) {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			if isDiskFullText(fmt.Sprint(r)) {
				err = s.diskFull("closing the store", true, fmt.Errorf("%v", r))
				return
			}
			err = fmt.Errorf("%w: closing the store panicked: %v", ErrCorrupt, r)
		}
	}()
	if err := s.db.Close(); err != nil {
		if isDiskFull(err) {
			return s.diskFull("closing the store, its last writes failed", true, err)
		}
		return err
	}
	return nil
}

// recoverInto turns a panic inside Pebble (its Fatalf, or a damaged file
// that broke an invariant) into an ErrCorrupt error, and fails the store.
//
// A panic that says the disk is full (Pebble's fatal commit error after a
// write-ahead-log write failed) is not damage: it becomes an ErrDiskFull
// error that says to free space and restart, since Pebble's commit
// pipeline takes no write after it.
func (s *Store) recoverInto(err *error) {
	if r := recover(); r != nil {
		*err = s.panicError(r)
	}
}

// panicError is the error of a recovered Pebble panic; it fails the store.
func (s *Store) panicError(r any) error {
	msg := firstLine(fmt.Sprint(r))
	var e error
	if isDiskFullText(msg) {
		e = s.diskFull("a write to the store failed, and the store takes no more writes; the write in progress may or may not have been committed", true, errors.New(msg))
	} else {
		e = fmt.Errorf("%w: the store panicked: %s", ErrCorrupt, msg)
	}
	s.health.fail(e)
	return e
}

// pebbleFatal is the panic value of Pebble's Fatalf.
type pebbleFatal string

// pebbleLogger routes Pebble's log lines to zerolog. Pebble requires Fatalf
// not to return; it panics with pebbleFatal, which the store's entry
// points recover into an ErrCorrupt error.
type pebbleLogger struct{ l zerolog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug().Str("component", "pebble").Msgf(format, args...)
}
func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error().Str("component", "pebble").Msgf(format, args...)
}
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error().Str("component", "pebble").Msg(msg)
	if isDiskFullText(msg) {
		// In Pebble's own goroutines (a flush's MANIFEST write) this panic
		// ends the process: say why first.
		p.l.Error().Str("component", "pebble").Msg("the disk is full: Pebble stops on this failed write; the ledger is intact (dprl ledger verify passes): free space and restart")
	}
	if !strings.HasPrefix(msg, "pebble: ") {
		msg = "pebble: " + msg
	}
	panic(pebbleFatal(msg))
}

// firstLine returns s up to its first newline (Pebble's errors can carry
// stack traces).
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// setSync writes one JSON value, synced.
func (s *Store) setSync(key []byte, v any) error {
	b := s.db.NewBatch()
	defer b.Close()
	if err := setJSON(b, key, v); err != nil {
		return err
	}
	return s.commitBatch(b)
}

// commitBatch commits a batch, synced; a Pebble panic fails the store.
func (s *Store) commitBatch(b *pebble.Batch) (err error) {
	if err := s.writable(len(b.Repr())); err != nil {
		return err
	}
	defer s.recoverInto(&err)
	if err := b.Commit(pebble.Sync); err != nil {
		if isDiskFull(err) {
			return s.diskFull("the commit could not be written", false, err)
		}
		return fmt.Errorf("ledger: commit: %w", err)
	}
	return nil
}

// commit writes a batch that moves the head from prev to h: the batch with
// the new head and the previous head's seq (m/prev), synced; then the head
// record, synced. See the head file's documentation for why this order is
// crash-safe.
func (s *Store) commit(b *pebble.Batch, prev, h Head) error {
	if s.heads == nil {
		return fmt.Errorf("%w: the store is open read-only", ErrInvalid)
	}
	if err := b.Set(keyPrev, be64(nil, prev.Seq), nil); err != nil {
		return err
	}
	if err := setJSON(b, keyHead, h); err != nil {
		return err
	}
	if err := s.commitBatch(b); err != nil {
		return err
	}
	if s.afterCommit != nil {
		s.afterCommit()
	}
	if s.noHeadRecord {
		return nil
	}
	if err := s.heads.append(h); err != nil {
		if isDiskFull(err) {
			// Committed: the store is one commit ahead of the head file,
			// which a restart accepts. Hold every later write back until
			// the record is written (writable retries it).
			s.pendingHead = &h
			return s.diskFull(fmt.Sprintf("entry %d is committed but its head record could not be written to %s; no write is accepted before it is", h.Seq, headsFile), false, err)
		}
		err = fmt.Errorf("ledger: entry %d is committed but its head record could not be written to %s (the store refuses further writes; reopening writes the record): %w", h.Seq, headsFile, err)
		s.health.fail(err)
		return err
	}
	return nil
}

// checkWantKey refuses a store whose user key is not Options.UserKey.
func (s *Store) checkWantKey() error {
	if s.wantKey != nil && !hmac.Equal(s.wantKey, s.userKey) {
		return fmt.Errorf("%w: %s has another user key than the one given (a cluster's processes share one)", ErrInvalid, s.dir)
	}
	return nil
}
