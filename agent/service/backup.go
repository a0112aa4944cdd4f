package service

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"dprl/internal/fielderr"
	"dprl/ledger"
)

// Backups schedules online backups of the ledger while the agent serves
// (ledger.Store.Backup: a consistent copy taken between two commits).
type Backups struct {
	// Dir receives one subdirectory per backup, named by the time and the
	// ledger head it holds (20261125T101500Z-seq42); "" takes none.
	Dir string `flag:"backup-dir" usage:"write a verified online backup of the ledger into a new subdirectory of this directory every --backup-every while the head moved, keeping the newest --backup-keep (it holds user.key: protect it)"`
	// Every is the interval between backups; a backup is skipped when the
	// head has not moved since the newest one in Dir.
	Every time.Duration `flag:"backup-every" usage:"interval of --backup-dir backups, >= 1s"`
	// Keep is the number of backups kept in Dir; older ones are removed
	// after each new backup (only directories named like backups).
	Keep int `flag:"backup-keep" usage:"backups kept in --backup-dir, >= 1"`
}

// BackupFields are the fields Backups' errors name (fielderr).
var BackupFields = fielderr.Fields{"BackupDir", "BackupEvery", "BackupKeep"}

// Default backup schedule when only the directory is given.
const (
	DefaultBackupEvery = time.Hour
	DefaultBackupKeep  = 24
)

// Validate checks the schedule; the zero value (no backups) is valid.
func (b Backups) Validate() error {
	if b.Dir == "" {
		return nil
	}
	if b.Every < time.Second {
		return BackupFields.Errorf("{BackupEvery} %v: want at least 1s", b.Every)
	}
	if b.Keep < 1 {
		return BackupFields.Errorf("{BackupKeep} %d: want at least 1", b.Keep)
	}
	return nil
}

// backupName matches the directories runBackups writes.
var backupName = regexp.MustCompile(`^(\d{8}T\d{6}Z)-seq(\d+)$`)

// runBackups backs the store up every b.Every until ctx is done. A failed
// backup is logged and retried at the next tick; it never stops serving.
func runBackups(ctx context.Context, store *ledger.Store, b Backups, now func() time.Time, log zerolog.Logger) {
	t := time.NewTicker(b.Every)
	defer t.Stop()
	for {
		if _, err := backupOnce(store, b, now()); err != nil {
			log.Error().Err(err).Str("dir", b.Dir).Msg("ledger backup failed; retrying at the next interval")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// backupOnce writes one backup into b.Dir unless the newest there already
// holds the store's head, then removes all but the newest b.Keep. It
// returns the backup written (nil when skipped).
func backupOnce(store *ledger.Store, b Backups, at time.Time) (*ledger.BackupResult, error) {
	h, err := store.Head()
	if err != nil {
		return nil, err
	}
	names, err := listBackups(b.Dir)
	if err != nil {
		return nil, err
	}
	if n := len(names); n > 0 && names[n-1].seq == h.Seq {
		return nil, nil
	}
	name := fmt.Sprintf("%s-seq%d", at.UTC().Format("20060102T150405Z"), h.Seq)
	res, err := store.Backup(filepath.Join(b.Dir, name))
	if err != nil {
		return nil, err
	}
	if names, err = listBackups(b.Dir); err != nil {
		return &res, err
	}
	for len(names) > b.Keep {
		if err := os.RemoveAll(filepath.Join(b.Dir, names[0].name)); err != nil {
			return &res, fmt.Errorf("remove old backup: %w", err)
		}
		names = names[1:]
	}
	return &res, nil
}

type backupEntry struct {
	name, at string
	seq      uint64
}

// listBackups lists the backups in dir, oldest first (by time, then head).
func listBackups(dir string) ([]backupEntry, error) {
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []backupEntry
	for _, e := range ents {
		m := backupName.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		seq, err := strconv.ParseUint(m[2], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, backupEntry{e.Name(), m[1], seq})
	}
	slices.SortFunc(out, func(a, b backupEntry) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.seq, b.seq))
	})
	return out, nil
}

// backupRunner runs the backup schedules of a Service's ledgers.
type backupRunner struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startBackups starts the schedule of ServiceConfig.Backups for every
// policy: the ledger of a single-policy service is backed up into
// Backups.Dir, each model's into Backups.Dir/NAME.
func (s *Service) startBackups() {
	b := s.cfg.Backups
	if b.Dir == "" {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.backups.cancel = cancel
	for _, p := range s.policies {
		pb := b
		if p.name != "" {
			pb.Dir = filepath.Join(b.Dir, p.name)
		}
		s.backups.wg.Add(1)
		go func() {
			defer s.backups.wg.Done()
			runBackups(ctx, p.store, pb, time.Now, p.log)
		}()
	}
}

// stopBackups stops the schedules and waits for a backup in progress.
func (s *Service) stopBackups() {
	if s.backups.cancel != nil {
		s.backups.cancel()
		s.backups.wg.Wait()
	}
}
