package ledger

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// BackupResult is what Backup wrote: the backup's directory and the head
// it holds.
type BackupResult struct {
	Dir  string `json:"dir"`
	Head Head   `json:"head"`
}

// Backup writes a consistent copy of the ledger to dest, a directory that
// must not exist, while the store stays open (and, for a writable store,
// in use): every key of the Pebble store as of one moment between two
// commits (a Pebble snapshot, copied key by key into a new store), the
// user key and the head file of that moment, so the copy is a data
// directory the agent and the dprl ledger commands open like the original.
// Commits wait only while the snapshot is taken and the two files are
// copied. The copy is assembled in a temporary directory beside dest,
// synced, renamed into place and then verified read-only (the full
// Verify); a copy that fails verification is removed and reported.
//
// The copy leaves out the noise records of a correlated-noise stream and
// holds the stream's end marker instead (see the package's
// correlated-noise section): a ledger restored from it starts a new
// stream at its next release, and never draws a second time a row the
// original may have published after the backup. None of the exact means
// those records hold is in the copy's files.
//
// A backup is an older ledger as soon as the next commit lands: restoring
// it loses every later entry, and with them the counters of the users
// those releases were charged to. See docs/agent.md (Operating the agent,
// Backup and restore) for what an operator must do after a restore.
func (s *Store) Backup(dest string) (BackupResult, error) {
	if dest == "" {
		return BackupResult{}, fmt.Errorf("%w: empty backup directory", ErrInvalid)
	}
	if _, err := s.fs.Stat(dest); err == nil {
		return BackupResult{}, fmt.Errorf("%w: backup directory %s exists", ErrInvalid, dest)
	}
	parent := filepath.Dir(dest)
	if err := mkdirAllSync(s.fs, parent); err != nil {
		return BackupResult{}, fmt.Errorf("ledger: backup: %w", err)
	}
	var suffix [6]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return BackupResult{}, err
	}
	tmp := dest + ".partial-" + hex.EncodeToString(suffix[:])
	head, err := s.backupTo(tmp)
	if err != nil {
		_ = s.fs.RemoveAll(tmp)
		if isDiskFull(err) && !errors.Is(err, ErrDiskFull) {
			return BackupResult{}, &diskFullError{dir: parent, what: "the backup to " + dest + " could not be written and was removed; the ledger is unchanged", cause: causeText(err)}
		}
		return BackupResult{}, fmt.Errorf("ledger: backup to %s: %w", dest, err)
	}
	if err := s.fs.Rename(tmp, dest); err != nil {
		_ = s.fs.RemoveAll(tmp)
		return BackupResult{}, fmt.Errorf("ledger: backup: %w", err)
	}
	if err := syncDir(s.fs, parent); err != nil {
		return BackupResult{}, fmt.Errorf("ledger: backup: %w", err)
	}
	var ref *HeadRef // a ledger without entries has no head to check
	if head.Seq > 0 {
		ref = &HeadRef{Seq: head.Seq, Hash: head.Hash}
	}
	v, err := VerifyDir(dest, Options{FS: s.fs}, ref)
	if err == nil && !v.OK {
		err = fmt.Errorf("%w: %v", ErrCorrupt, v.Problems)
	}
	if err != nil {
		_ = s.fs.RemoveAll(dest)
		return BackupResult{}, fmt.Errorf("ledger: the backup in %s failed verification and was removed: %w", dest, err)
	}
	return BackupResult{Dir: dest, Head: head}, nil
}

// backupTo writes the copy into tmp: under the store's mutex (so that no
// commit falls between them) it takes a Pebble snapshot and copies the
// user key and the head file; then it copies the snapshot's keys.
func (s *Store) backupTo(tmp string) (Head, error) {
	snap, h, err := s.backupFiles(tmp)
	if err != nil {
		return Head{}, err
	}
	defer snap.Close()
	if err := s.copySnapshot(snap, filepath.Join(tmp, pebbleDir)); err != nil {
		return Head{}, err
	}
	return h, syncDir(s.fs, tmp)
}

// backupFiles takes the snapshot and copies the two files, under the mutex.
func (s *Store) backupFiles(tmp string) (_ *pebble.Snapshot, _ Head, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, Head{}, ErrClosed
	}
	if err := s.health.get(); err != nil {
		return nil, Head{}, fmt.Errorf("the store refuses writes after an earlier failure: %w", err)
	}
	h, err := s.Head()
	if err != nil {
		return nil, Head{}, err
	}
	if err := mkdirAllSync(s.fs, tmp); err != nil {
		return nil, Head{}, err
	}
	for _, f := range []string{userKeyFile, headsFile} {
		if err := copyFileSync(s.fs, filepath.Join(s.dir, f), filepath.Join(tmp, f)); err != nil {
			return nil, Head{}, err
		}
	}
	defer s.recoverInto(&err)
	return s.db.NewSnapshot(), h, nil
}

// copySnapshot writes every key of snap into a new Pebble store in dir,
// except the noise records, for which it writes the stream's end marker
// (from the last record's header). It syncs the store and closes it.
func (s *Store) copySnapshot(snap *pebble.Snapshot, dir string) (err error) {
	defer s.recoverInto(&err)
	db, err := pebble.Open(dir, &pebble.Options{FS: s.fs, FormatMajorVersion: ledgerFormat, ErrorIfExists: true, Logger: pebbleLogger{s.log}})
	if err != nil {
		return fmt.Errorf("create the copy's store: %w", err)
	}
	defer func() {
		if cerr := db.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	it, err := snap.NewIter(nil)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrCorrupt, firstLine(err.Error()))
	}
	b := db.NewBatch()
	defer func() { b.Close() }()
	var last []byte // the last noise record
	var end []byte  // the end marker of a stream that had already ended
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		if bytes.HasPrefix(k, prefNoise) {
			last = append(last[:0], it.Value()...)
			continue
		}
		if bytes.Equal(k, keyNoiseEnd) {
			end = append(end[:0], it.Value()...) // written below
			continue
		}
		if err := b.Set(k, it.Value(), nil); err != nil {
			it.Close()
			return err
		}
		if b.Len() >= 4<<20 {
			err := b.Commit(pebble.NoSync)
			b.Close()
			b = db.NewBatch()
			if err != nil {
				it.Close()
				return err
			}
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("%w: %s", ErrCorrupt, firstLine(err.Error()))
	}
	if last != nil {
		r, err := decodeNoise(last)
		if err != nil {
			return fmt.Errorf("%w: noise record: %v", ErrCorrupt, err)
		}
		end, err = json.Marshal(noiseEndOf(r, "backup"))
		if err != nil {
			return err
		}
	}
	if end != nil {
		if err := b.Set(keyNoiseEnd, end, nil); err != nil {
			return err
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return err
	}
	return db.Flush()
}

// copyFileSync copies src to a new file dst with mode 0600, synced.
func copyFileSync(fs vfs.FS, src, dst string) error {
	in, err := fs.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := fs.Create(dst, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return chmodPrivate(fs, dst)
}

// chmodPrivate makes a copied secret 0600 on the operating system's file
// system (other file systems, e.g. tests' in-memory one, have no modes).
func chmodPrivate(fs vfs.FS, path string) error {
	if fs != vfs.Default {
		return nil
	}
	return os.Chmod(path, 0o600)
}

// WriteText writes where the backup is and the head it holds.
func (r BackupResult) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "backup written and verified: %s (head %d:%s, policy version %d)\n", r.Dir, r.Head.Seq, r.Head.Hash, r.Head.Version)
	return err
}
