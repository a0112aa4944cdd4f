package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"dprl/cmd/dprl/cliflags"
	"dprl/ledger"
	"dprl/offline/budget"
	"dprl/policy"
	"dprl/policy/lincb"

	"github.com/spf13/cobra"
)

func newLedgerCmd(a *app) *cobra.Command {
	return groupCmd("ledger", "Inspect, verify and export the privacy ledger of a data directory",
		newLedgerShowCmd(a), newLedgerVerifyCmd(a), newLedgerHeadCmd(a), newLedgerExportCmd(a), newLedgerSnapshotCmd(a), newLedgerSetCapCmd(a), newLedgerLinkCmd(a), newLedgerBackupCmd(a), newLedgerEndStreamCmd(a))
}

// openLedger opens the existing ledger in dir, read-only unless write.
func openLedger(a *app, dir string, write bool) (*ledger.Store, error) {
	if dir == "" {
		return nil, usagef("--data is required")
	}
	return ledger.Open(dir, ledger.Options{MustExist: true, ReadOnly: !write, Logger: a.log})
}

// ledgerFlags adds --data and --json to c.
func ledgerFlags(c *cobra.Command, dir *string) {
	c.Flags().StringVar(dir, "data", "", "the agent's data directory (required)")
	c.Flags().Bool("json", false, "print the result as JSON")
}

// showLedger prints what f computes from the existing ledger in dir,
// opened read-only unless write.
func showLedger[R texter](a *app, dir string, write bool, f func(*ledger.Store) (R, error)) error {
	s, err := openLedger(a, dir, write)
	if err != nil {
		return err
	}
	defer s.Close()
	res, err := f(s)
	return emit(a, res, err)
}

// ledgerCmd completes c, a dprl ledger subcommand, with --data (into dir)
// and --json: it prints what f computes from the existing ledger in --data,
// opened read-only unless write, once check (nil: none) accepts the flags.
func ledgerCmd[R texter](a *app, c *cobra.Command, dir *string, write bool, check func() error, f func(*ledger.Store) (R, error)) *cobra.Command {
	ledgerFlags(c, dir)
	c.RunE = func(*cobra.Command, []string) error {
		if check != nil {
			if err := check(); err != nil {
				return err
			}
		}
		return showLedger(a, *dir, write, f)
	}
	return c
}

func newLedgerShowCmd(a *app) *cobra.Command {
	var dir string
	var delta float64
	c := ledgerCmd(a, &cobra.Command{
		Use:   "show --data DIR",
		Short: "List the ledger's entries, each dataset's per-unit totals and caps, and the most-used user",
	}, &dir, false, nil, func(s *ledger.Store) (ledger.Summary, error) { return s.Summary(delta) })
	c.Flags().Float64Var(&delta, "delta", 1e-5, "delta at which per-user epsilons are shown (a dataset's totals are shown at its cap's delta)")
	return c
}

func newLedgerVerifyCmd(a *app) *cobra.Command {
	var dir, expect string
	c := &cobra.Command{
		Use:   "verify --data DIR [--expect-head SEQ:HASH]",
		Short: "Recompute the hash chain and every epsilon, check the store against its head file; exit 1 on any problem",
		RunE: func(*cobra.Command, []string) error {
			var ref *ledger.HeadRef
			if expect != "" {
				r, err := ledger.ParseHeadRef(expect)
				if err != nil {
					return usageError{fmt.Errorf("--expect-head: %w", err)}
				}
				ref = &r
			}
			if dir == "" {
				return usagef("--data is required")
			}
			res, err := ledger.VerifyDir(dir, ledger.Options{Logger: a.log}, ref)
			if err := emit(a, res, err); err != nil || res.OK {
				return err
			}
			return fmt.Errorf("ledger verify: %d problems in %s: %s", len(res.Problems), dir, res.Problems[0])
		},
	}
	ledgerFlags(c, &dir)
	c.Flags().StringVar(&expect, "expect-head", "", "SEQ:HASH recorded earlier by dprl ledger head: the ledger must still hold that entry")
	return c
}

func newLedgerHeadCmd(a *app) *cobra.Command {
	var dir string
	return ledgerCmd(a, &cobra.Command{
		Use:     "head --data DIR",
		Short:   "Print the verified ledger's head as SEQ:HASH, to record outside the data directory",
		Example: `  dprl ledger head --data ./dprl-data >> ~/ledger-heads.txt`,
	}, &dir, false, nil, (*ledger.Store).VerifiedHead)
}

func newLedgerExportCmd(a *app) *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:     "export --data DIR",
		Short:   "Write every ledger entry as JSON Lines to stdout",
		Example: `  dprl ledger export --data ./dprl-data > ledger.jsonl`,
		RunE: func(*cobra.Command, []string) error {
			s, err := openLedger(a, dir, false)
			if err != nil {
				return err
			}
			defer s.Close()
			enc := json.NewEncoder(a.stdout)
			return s.Entries(func(e ledger.Entry) error { return enc.Encode(e) })
		},
	}
	c.Flags().StringVar(&dir, "data", "", "the agent's data directory (required)")
	c.Flags().Bool("json", true, "entries are always JSON Lines")
	return c
}

func newLedgerSetCapCmd(a *app) *cobra.Command {
	var (
		args budget.CapArgs
		fl   *cliflags.Flags
	)
	c := &cobra.Command{
		Use:   "set-cap --data DIR (--dataset ID | --file LOG) [--unit U] --epsilon E --delta D --reason TEXT",
		Short: "Change a dataset's stored privacy cap at one unit, with a logged ledger entry",
		RunE: func(cmd *cobra.Command, _ []string) error {
			change, err := args.Change(fl.FieldChanged)
			if err != nil {
				return usageError{fl.Rename(err)}
			}
			return showLedger(a, args.Data, true, func(s *ledger.Store) (ledger.CapChangeResult, error) {
				res, err := args.SetCap(s, change)
				if errors.As(err, new(*ledger.UnitError)) || errors.Is(err, ledger.ErrInvalid) {
					return res, usageError{fl.Rename(err)}
				}
				return res, fl.Rename(err)
			})
		},
	}
	fl = cliflags.New(c.Flags(), &args)
	fl.Bool("json", false, "print the result as JSON")
	return c
}

func newLedgerLinkCmd(a *app) *cobra.Command {
	var dir, file, reason string
	c := &cobra.Command{
		Use:     "link --data DIR --file LOG --reason TEXT",
		Short:   "Link a log's records to their dataset by content (ledgers written before content identity)",
		Example: `  dprl ledger link --data ./offline-ledger --file sessions.jsonl --reason "upgrade: link by content"`,
		RunE: func(*cobra.Command, []string) error {
			if dir == "" || file == "" || strings.TrimSpace(reason) == "" {
				return usagef("give --data, --file and --reason")
			}
			return showLedger(a, dir, true, func(s *ledger.Store) (budget.LinkResult, error) {
				res, err := budget.LinkFile(s, file, reason)
				if errors.Is(err, ledger.ErrNotFound) {
					return res, fmt.Errorf("--file %s: none of its records is in the ledger %s: %w", file, dir, err)
				}
				return res, err
			})
		},
	}
	c.Flags().StringVar(&dir, "data", "", "the ledger's directory (an offline --ledger directory) (required)")
	c.Flags().StringVar(&file, "file", "", "a session log of a dataset the ledger holds (required)")
	c.Flags().StringVar(&reason, "reason", "", "why, recorded in the entry (required)")
	c.Flags().Bool("json", false, "print the result as JSON")
	return c
}

func newLedgerSnapshotCmd(a *app) *cobra.Command {
	var (
		dir, out string
		version  int64
		force    bool
	)
	c := ledgerCmd(a, &cobra.Command{
		Use:   "snapshot --data DIR --out FILE [--version N]",
		Short: "Write a released policy (default: the serving one) as a snapshot file",
	}, &dir, false, func() error {
		if out == "" {
			return usagef("--out is required")
		}
		if version < -1 {
			return usagef("--version %d: want a released version (>= 0), or -1 for the serving one", version)
		}
		if _, err := os.Stat(out); err == nil && !force {
			return usagef("%s exists (--force overwrites it)", out)
		}
		return nil
	}, func(s *ledger.Store) (ledger.SnapshotExport, error) {
		return s.ExportSnapshot(version, out, snapshotParams)
	})
	c.Flags().StringVar(&out, "out", "", "snapshot file to write (required)")
	c.Flags().Int64Var(&version, "version", -1, "released policy version (0 is the initial policy); -1: the serving one")
	c.Flags().BoolVar(&force, "force", false, "overwrite --out")
	return c
}

func newLedgerBackupCmd(a *app) *cobra.Command {
	var dir, out string
	c := ledgerCmd(a, &cobra.Command{
		Use:     "backup --data DIR --out DEST",
		Short:   "Copy a ledger not in use to DEST, consistently, and verify the copy",
		Example: `  dprl ledger backup --data ./dprl-data --out /backups/dprl-$(date +%F)`,
	}, &dir, true, func() error {
		if dir == "" || out == "" {
			return usagef("--data and --out are required")
		}
		return nil
	}, func(s *ledger.Store) (ledger.BackupResult, error) {
		res, err := s.Backup(out)
		if errors.Is(err, ledger.ErrInvalid) {
			return res, usageError{err}
		}
		return res, err
	})
	c.Flags().StringVar(&out, "out", "", "the backup's directory, which must not exist (required)")
	return c
}

func newLedgerEndStreamCmd(a *app) *cobra.Command {
	var dir string
	return ledgerCmd(a, &cobra.Command{
		Use:     "end-stream --data DIR",
		Short:   "End the banded noise stream of a data directory restored from a plain copy, so that the next release starts a new one",
		Example: `  dprl ledger end-stream --data ./dprl-data`,
	}, &dir, true, nil, func(s *ledger.Store) (ledger.EndStreamResult, error) {
		v, err := s.EndNoiseStream()
		return ledger.EndStreamResult{Dir: dir, EndedAt: v}, err
	})
}

// snapshotParams checks a released snapshot, DPPG's or the linear
// contextual bandit's, and returns its number of parameters (the bandit's:
// its released statistics).
func snapshotParams(b []byte) (int, error) {
	if lincb.IsSnapshot(b) {
		s, err := lincb.UnmarshalSnapshot(b)
		return len(s.Stats), err
	}
	return policy.SnapshotParams(b)
}
