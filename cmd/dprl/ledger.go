package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"dprl/ledger"
	"dprl/policy"

	"github.com/spf13/cobra"
)

func newLedgerCmd(a *app) *cobra.Command {
	return groupCmd("ledger", "Inspect, verify and export the privacy ledger of a data directory",
		newLedgerShowCmd(a), newLedgerVerifyCmd(a), newLedgerExportCmd(a), newLedgerSnapshotCmd(a))
}

// openLedger opens an existing ledger read-only.
func openLedger(a *app, dir string) (*ledger.Store, error) {
	if dir == "" {
		return nil, usagef("--data is required")
	}
	return ledger.Open(dir, ledger.Options{MustExist: true, ReadOnly: true, Logger: a.log})
}

type ledgerShow struct {
	Head     ledger.Head                    `json:"head"`
	Entries  []ledger.Entry                 `json:"entries"`
	Datasets map[string]ledgerShowDataset   `json:"datasets"`
	Users    int                            `json:"users"`
	MaxUser  *ledgerShowUser                `json:"max_user,omitempty"`
	ByKind   map[ledger.Kind]ledgerShowKind `json:"by_kind"`
}

type ledgerShowDataset struct {
	Runs    int     `json:"runs"`
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

type ledgerShowUser struct {
	Updates int     `json:"updates"`
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

type ledgerShowKind struct {
	Entries int `json:"entries"`
}

func newLedgerShowCmd(a *app) *cobra.Command {
	var dir string
	var asJSON bool
	var delta float64
	c := &cobra.Command{
		Use:   "show --data DIR",
		Short: "List the ledger's entries, offline charges per dataset and the most-used user",
		Example: `  dprl ledger show --data ./dprl-data
  dprl ledger show --data ./dprl-data --json`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			s, err := openLedger(a, dir)
			if err != nil {
				return err
			}
			defer s.Close()
			var res ledgerShow
			res.ByKind = map[ledger.Kind]ledgerShowKind{}
			res.Datasets = map[string]ledgerShowDataset{}
			if res.Head, err = s.Head(); err != nil {
				return err
			}
			err = s.Entries(func(e ledger.Entry) error {
				res.Entries = append(res.Entries, e)
				k := res.ByKind[e.Kind]
				k.Entries++
				res.ByKind[e.Kind] = k
				if e.Kind == ledger.KindOffline {
					res.Datasets[e.DatasetID] = ledgerShowDataset{Delta: delta}
				}
				return nil
			})
			if err != nil {
				return err
			}
			for id := range res.Datasets {
				d, err := s.Dataset(id)
				if err != nil {
					return err
				}
				eps, err := d.Spent(delta)
				if err != nil {
					return err
				}
				res.Datasets[id] = ledgerShowDataset{Runs: d.Runs, Epsilon: eps, Delta: delta}
			}
			err = s.Users(func(_ ledger.UserKey, u ledger.UserState) error {
				res.Users++
				if res.MaxUser == nil || u.Updates > res.MaxUser.Updates {
					eps, err := u.Epsilon(delta)
					if err != nil {
						return err
					}
					res.MaxUser = &ledgerShowUser{Updates: u.Updates, Epsilon: eps, Delta: delta}
				}
				return nil
			})
			if err != nil {
				return err
			}
			return emit(a.stdout, asJSON, res, func(w io.Writer) error {
				fmt.Fprintf(w, "head: %d entries, policy version %d, hash %.16s\n", res.Head.Seq, res.Head.Version, res.Head.Hash)
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SEQ\tTIME\tKIND\tUNIT\tEPSILON\tDELTA\tMETHOD\tZ\tPARTICIPANTS\tVERSION/DATASET\tNOISE")
				for _, e := range res.Entries {
					target := fmt.Sprint(e.PolicyVersion)
					if e.Kind == ledger.KindOffline {
						target = e.DatasetID
					}
					noise := "secure"
					if e.Seeded {
						noise = "seeded"
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.4g\t%g\t%s\t%g\t%d\t%s\t%s\n", e.Seq, e.Time.Format("2006-01-02 15:04:05"), e.Kind, e.Unit, e.Epsilon, e.Delta, e.Method, e.Z, e.Participants, target, noise)
				}
				tw.Flush()
				for id, d := range res.Datasets {
					fmt.Fprintf(w, "dataset %s: %d runs, epsilon %.4g at delta %g\n", id, d.Runs, d.Epsilon, d.Delta)
				}
				fmt.Fprintf(w, "users: %d", res.Users)
				if res.MaxUser != nil {
					fmt.Fprintf(w, "; most used: %d updates, epsilon %.4g at delta %g", res.MaxUser.Updates, res.MaxUser.Epsilon, delta)
				}
				_, err := fmt.Fprintln(w)
				return err
			})
		},
	}
	c.Flags().StringVar(&dir, "data", "", "the agent's data directory (required)")
	c.Flags().Float64Var(&delta, "delta", 1e-5, "delta at which per-user and per-dataset epsilons are shown")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

func newLedgerVerifyCmd(a *app) *cobra.Command {
	var dir string
	var asJSON bool
	c := &cobra.Command{
		Use:   "verify --data DIR",
		Short: "Recompute the hash chain and every epsilon; exit 1 on any mismatch",
		Long: `Recomputes the ledger's hash chain, every entry's epsilon from its recorded
parameters, the head pointer, the snapshots the releases pay for, the per-user
counters and the per-dataset totals. Any mismatch is listed and the exit
status is 1.`,
		Example: `  dprl ledger verify --data ./dprl-data`,
		Args:    noArgs,
		RunE: func(*cobra.Command, []string) error {
			s, err := openLedger(a, dir)
			if err != nil {
				return err
			}
			defer s.Close()
			r, err := s.Verify()
			if err != nil {
				return err
			}
			if r.Problems == nil {
				r.Problems = []string{}
			}
			err = emit(a.stdout, asJSON, struct {
				OK bool `json:"ok"`
				ledger.Report
			}{r.OK(), r}, func(w io.Writer) error {
				for _, p := range r.Problems {
					fmt.Fprintln(w, "problem:", p)
				}
				status := "OK"
				if !r.OK() {
					status = fmt.Sprintf("FAILED (%d problems)", len(r.Problems))
				}
				_, err := fmt.Fprintf(w, "ledger %s: %d entries (%d releases, %d offline runs), %d users, %d datasets, head version %d\n",
					status, r.Entries, r.Releases, r.OfflineRuns, r.Users, r.Datasets, r.Head.Version)
				return err
			})
			if err != nil {
				return err
			}
			if !r.OK() {
				return fmt.Errorf("ledger verify: %d problems in %s", len(r.Problems), dir)
			}
			return nil
		},
	}
	c.Flags().StringVar(&dir, "data", "", "the agent's data directory (required)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return c
}

func newLedgerExportCmd(a *app) *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:     "export --data DIR",
		Short:   "Write every ledger entry as JSON Lines to stdout",
		Example: `  dprl ledger export --data ./dprl-data > ledger.jsonl`,
		Args:    noArgs,
		RunE: func(*cobra.Command, []string) error {
			s, err := openLedger(a, dir)
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

// ledgerSnapshotResult is what "dprl ledger snapshot" wrote.
type ledgerSnapshotResult struct {
	Version uint64 `json:"version"`
	Out     string `json:"out"`
	Bytes   int    `json:"bytes"`
	Params  int    `json:"params"`
}

func newLedgerSnapshotCmd(a *app) *cobra.Command {
	var (
		dir, out      string
		version       int64
		force, asJSON bool
	)
	c := &cobra.Command{
		Use:   "snapshot --data DIR --out FILE [--version N]",
		Short: "Write a released policy (default: the serving one) as a snapshot file",
		Long: `Writes a policy the agent released, in the policy snapshot format (versioned,
checksummed), so that it can be evaluated offline (dprl offline gtd2 --target
snapshot:FILE), used as a behaviour policy (dprl sims generate --behavior
policy:FILE) or inspected. A released policy is differentially private output:
exporting it costs no privacy.`,
		Example: `  dprl ledger snapshot --data ./dprl-data --out policy.snap
  dprl ledger snapshot --data ./dprl-data --version 12 --out v12.snap --json`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			if out == "" {
				return usagef("--out is required")
			}
			if version < -1 {
				return usagef("--version %d: want a released version (>= 0), or -1 for the serving one", version)
			}
			if !force {
				if _, err := os.Stat(out); err == nil {
					return usagef("%s exists (--force overwrites it)", out)
				}
			}
			s, err := openLedger(a, dir)
			if err != nil {
				return err
			}
			defer s.Close()
			v := uint64(version)
			if version == -1 {
				h, err := s.Head()
				if err != nil {
					return err
				}
				v = h.Version
			}
			b, err := s.Snapshot(v)
			if err != nil {
				return fmt.Errorf("version %d: %w", v, err)
			}
			snap, err := policy.UnmarshalSnapshot(b)
			if err != nil {
				return fmt.Errorf("version %d: stored snapshot: %w", v, err)
			}
			if err := writeFileAtomic(out, b); err != nil {
				return err
			}
			res := ledgerSnapshotResult{Version: v, Out: out, Bytes: len(b), Params: len(snap.Theta)}
			return emit(a.stdout, asJSON, res, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "wrote policy version %d (%d parameters, %d bytes) to %s\n", v, res.Params, res.Bytes, out)
				return err
			})
		},
	}
	c.Flags().StringVar(&dir, "data", "", "the agent's data directory (required)")
	c.Flags().StringVar(&out, "out", "", "snapshot file to write (required)")
	c.Flags().Int64Var(&version, "version", -1, "released policy version (0 is the initial policy); -1: the serving one")
	c.Flags().BoolVar(&force, "force", false, "overwrite --out")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

// writeFileAtomic writes b to path through a synced temporary file renamed
// into place, so a crash leaves either the old file or the new one.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
