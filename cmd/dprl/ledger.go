package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"dprl/internal/atomicfile"
	"dprl/ledger"
	"dprl/policy"
	"dprl/sessionlog"

	"github.com/spf13/cobra"
)

func newLedgerCmd(a *app) *cobra.Command {
	return groupCmd("ledger", "Inspect, verify and export the privacy ledger of a data directory",
		newLedgerShowCmd(a), newLedgerVerifyCmd(a), newLedgerHeadCmd(a), newLedgerExportCmd(a), newLedgerSnapshotCmd(a), newLedgerSetCapCmd(a))
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

// ledgerShowDataset is a dataset's budget per protected unit and the files
// registered as derived from it.
type ledgerShowDataset struct {
	Units        map[ledger.Unit]ledgerShowUnit `json:"units"`
	DerivedFiles []ledgerShowDerived            `json:"derived_files,omitempty"`
}

// ledgerShowUnit is a dataset's total at one unit: the composed epsilon of
// the runs charged at that unit, at the cap's delta.
type ledgerShowUnit struct {
	Runs       int     `json:"runs"`
	Epsilon    float64 `json:"epsilon"`
	Delta      float64 `json:"delta"`
	CapEpsilon float64 `json:"cap_epsilon"`
}

type ledgerShowDerived struct {
	File string `json:"file"`
	Note string `json:"note"`
	From uint64 `json:"from_entry"`
}

// unitsNote says what the per-unit totals mean.
const unitsNote = "each unit's total is the composed epsilon, at that unit, of the runs charged at that unit only: totals at different units are never added or converted into one another"

// printBudgets writes a dataset's per-unit totals.
func printBudgets(w io.Writer, id string, d ledgerShowDataset) {
	units := make([]ledger.Unit, 0, len(d.Units))
	for u := range d.Units {
		units = append(units, u)
	}
	slices.Sort(units)
	fmt.Fprintf(w, "dataset %s:\n", id)
	for _, u := range units {
		x := d.Units[u]
		fmt.Fprintf(w, "  unit %s: %d runs, epsilon %.4g of cap %g at delta %g\n", u, x.Runs, x.Epsilon, x.CapEpsilon, x.Delta)
	}
	for _, f := range d.DerivedFiles {
		fmt.Fprintf(w, "  derived file %s (%s, entry %d)\n", f.File, f.Note, f.From)
	}
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
		Short: "List the ledger's entries, each dataset's per-unit totals and caps, and the most-used user",
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
				if e.Kind == ledger.KindDerived {
					d := res.Datasets[e.DatasetID]
					d.DerivedFiles = append(d.DerivedFiles, ledgerShowDerived{File: e.File, Note: e.Mechanism, From: e.DerivedFrom})
					res.Datasets[e.DatasetID] = d
				}
				return nil
			})
			if err != nil {
				return err
			}
			err = s.Datasets(func(id string, st ledger.DatasetState) error {
				d := res.Datasets[id]
				d.Units = map[ledger.Unit]ledgerShowUnit{}
				for u, b := range st.Units {
					eps, err := b.Spent()
					if err != nil {
						return fmt.Errorf("dataset %s at unit %s: %w", id, u, err)
					}
					d.Units[u] = ledgerShowUnit{Runs: b.Runs, Epsilon: eps, Delta: b.Cap.Delta, CapEpsilon: b.Cap.Epsilon}
				}
				res.Datasets[id] = d
				return nil
			})
			if err != nil {
				return err
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
					if e.Kind != ledger.KindRelease {
						target = e.DatasetID
					}
					noise := "secure"
					if e.Seeded {
						noise = "seeded"
					}
					eps, del := fmt.Sprintf("%.4g", e.Epsilon), fmt.Sprint(e.Delta)
					switch e.Kind {
					case ledger.KindCap:
						eps, del = fmt.Sprintf("cap %g", e.Cap.Epsilon), fmt.Sprint(e.Cap.Delta)
					case ledger.KindDerived:
						eps, del = "-", "-"
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%g\t%d\t%s\t%s\n", e.Seq, e.Time.Format("2006-01-02 15:04:05"), e.Kind, e.Unit, eps, del, e.Method, e.Z, e.Participants, target, noise)
				}
				tw.Flush()
				ids := make([]string, 0, len(res.Datasets))
				for id := range res.Datasets {
					ids = append(ids, id)
				}
				slices.Sort(ids)
				for _, id := range ids {
					printBudgets(w, id, res.Datasets[id])
				}
				if len(ids) > 0 {
					fmt.Fprintln(w, "("+unitsNote+")")
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
	c.Flags().Float64Var(&delta, "delta", 1e-5, "delta at which per-user epsilons are shown (a dataset's totals are shown at its cap's delta)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

// ledgerVerifyResult is what "dprl ledger verify" prints.
type ledgerVerifyResult struct {
	OK bool `json:"ok"`
	ledger.Report
}

func newLedgerVerifyCmd(a *app) *cobra.Command {
	var dir, expect string
	var asJSON bool
	c := &cobra.Command{
		Use:   "verify --data DIR [--expect-head SEQ:HASH]",
		Short: "Recompute the hash chain and every epsilon, check the store against its head file; exit 1 on any problem",
		Long: `Recomputes the ledger's hash chain, every entry's epsilon from its recorded
parameters, the head pointer, the snapshots the releases pay for, the per-user
counters, each dataset's cap and total per unit (replaying its runs and cap
changes, and checking that no run was charged above the cap in force), and the
record index that ties files to datasets. It also checks the store against
DIR/ledger.heads, the fsynced record of every committed head kept outside the
store's own recovery (a store that lost committed entries, or an older copy of
ledger/ restored, fails), and user.key against the key the ledger was created
with. Prints the recomputed per-unit totals; any problem is listed and the exit
status is 1. A store too damaged to open is reported the same way.

An older copy of the whole data directory restored cannot be detected from
inside it: record the head elsewhere (dprl ledger head) and pass it as
--expect-head; the ledger must still hold that entry with that hash.`,
		Example: `  dprl ledger verify --data ./dprl-data
  dprl ledger verify --data ./dprl-data --expect-head "$(cat head-recorded-yesterday)"`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			var ref *ledger.HeadRef
			if expect != "" {
				r, err := ledger.ParseHeadRef(expect)
				if err != nil {
					return usageError{fmt.Errorf("--expect-head: %w", err)}
				}
				ref = &r
			}
			var res ledgerVerifyResult
			s, err := openLedger(a, dir)
			switch {
			case errors.Is(err, ledger.ErrCorrupt):
				res.Problems = []string{err.Error()}
			case err != nil:
				return err
			default:
				defer s.Close()
				if res.Report, err = s.Verify(); err != nil {
					if !errors.Is(err, ledger.ErrCorrupt) {
						return err
					}
					res.Problems = append(res.Problems, err.Error())
				}
				if ref != nil {
					if err := s.CheckHead(*ref); err != nil {
						res.Problems = append(res.Problems, err.Error())
					}
				}
			}
			if res.Problems == nil {
				res.Problems = []string{}
			}
			if res.Budgets == nil {
				res.Budgets = []ledger.DatasetBudget{}
			}
			res.OK = len(res.Problems) == 0
			r := res.Report
			err = emit(a.stdout, asJSON, res, func(w io.Writer) error {
				for _, b := range r.Budgets {
					if b.Cap.Delta == 0 {
						fmt.Fprintf(w, "dataset %s unit %s: %d runs, no cap\n", b.Dataset, b.Unit, b.Runs)
						continue
					}
					fmt.Fprintf(w, "dataset %s unit %s: %d runs, epsilon %.4g of cap %g at delta %g\n", b.Dataset, b.Unit, b.Runs, b.Epsilon, b.Cap.Epsilon, b.Cap.Delta)
				}
				for _, n := range r.Notes {
					fmt.Fprintln(w, "note:", n)
				}
				for _, p := range r.Problems {
					fmt.Fprintln(w, "problem:", p)
				}
				status := "OK"
				if !res.OK {
					status = fmt.Sprintf("FAILED (%d problems)", len(r.Problems))
				}
				_, err := fmt.Fprintf(w, "ledger %s: %d entries (%d releases, %d offline runs, %d cap changes, %d derived files), %d users, %d datasets, head version %d\n",
					status, r.Entries, r.Releases, r.OfflineRuns, r.CapChanges, r.DerivedFiles, r.Users, r.Datasets, r.Head.Version)
				return err
			})
			if err != nil {
				return err
			}
			if !res.OK {
				return fmt.Errorf("ledger verify: %d problems in %s: %s", len(r.Problems), dir, r.Problems[0])
			}
			return nil
		},
	}
	c.Flags().StringVar(&dir, "data", "", "the agent's data directory (required)")
	c.Flags().StringVar(&expect, "expect-head", "", "SEQ:HASH recorded earlier by dprl ledger head: the ledger must still hold that entry")
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return c
}

// ledgerHeadResult is what "dprl ledger head" prints.
type ledgerHeadResult struct {
	Seq     uint64 `json:"seq"`
	Hash    string `json:"hash"`
	Version uint64 `json:"version"`
	// Ref is SEQ:HASH, the form verify --expect-head takes.
	Ref string `json:"ref"`
}

func newLedgerHeadCmd(a *app) *cobra.Command {
	var dir string
	var asJSON bool
	c := &cobra.Command{
		Use:   "head --data DIR",
		Short: "Print the verified ledger's head as SEQ:HASH, to record outside the data directory",
		Long: `Verifies the ledger (as dprl ledger verify) and prints its head: the last
entry's sequence number and hash, as SEQ:HASH. Record it somewhere the data
directory's host cannot rewrite (a ticket, another machine, a signed log):
dprl ledger verify --expect-head SEQ:HASH later fails if the ledger no longer
holds that entry, which is the only way to catch an older copy of the whole
data directory restored. The hash is a digest of the operator's own audit
trail, not a release to users.`,
		Example: `  dprl ledger head --data ./dprl-data >> ~/ledger-heads.txt`,
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
			if !r.OK() {
				return fmt.Errorf("ledger %s fails verification (%d problems; dprl ledger verify lists them): %s", dir, len(r.Problems), r.Problems[0])
			}
			if r.Head.Seq == 0 {
				return fmt.Errorf("ledger %s has no entry yet: no head to record", dir)
			}
			res := ledgerHeadResult{Seq: r.Head.Seq, Hash: r.Head.Hash, Version: r.Head.Version, Ref: ledger.HeadRef{Seq: r.Head.Seq, Hash: r.Head.Hash}.String()}
			return emit(a.stdout, asJSON, res, func(w io.Writer) error {
				_, err := fmt.Fprintln(w, res.Ref)
				return err
			})
		},
	}
	c.Flags().StringVar(&dir, "data", "", "the agent's data directory (required)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the head as JSON")
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

// ledgerSetCapResult is what "dprl ledger set-cap" wrote.
type ledgerSetCapResult struct {
	Dataset string      `json:"dataset"`
	Unit    ledger.Unit `json:"unit"`
	Old     ledger.Cap  `json:"old_cap"`
	Cap     ledger.Cap  `json:"cap"`
	Reason  string      `json:"reason"`
	Seq     uint64      `json:"ledger_seq"`
	Runs    int         `json:"runs"`
	Spent   float64     `json:"spent_epsilon"`
}

func newLedgerSetCapCmd(a *app) *cobra.Command {
	var (
		dir, dataset, file, unit, reason string
		eps, delta                       float64
		asJSON                           bool
	)
	c := &cobra.Command{
		Use:   "set-cap --data DIR (--dataset ID | --file LOG) [--unit U] --epsilon E --delta D --reason TEXT",
		Short: "Change a dataset's stored privacy cap at one unit, with a logged ledger entry",
		Long: `A dataset's cap is stored with it in the ledger: the first private offline run
at a unit (trajectory, user, expert) stores the run's --dataset-epsilon and
--dataset-delta, and later runs use the stored cap (a run giving another one is
refused). This command is the only way to change it: it writes a dataset_cap
entry with the new cap and the reason, hash-chained like every entry, so the
change is on the record and "dprl ledger verify" replays it. Raise a cap only
if the dataset's owner agreed to the larger budget. Lowering it below what is
spent is allowed and refuses every later run at that unit.

The dataset is named by its id (--dataset, as "dprl ledger show" lists them)
or by a log of its records (--file: the dataset a run on that log would be
charged to; nothing is registered). --unit defaults to the dataset's only
unit; a dataset with several needs it.`,
		Example: `  dprl ledger set-cap --data ~/.local/share/dprl/offline-ledger --file sessions.jsonl \
      --epsilon 20 --delta 1e-5 --reason "owner approved a second evaluation round (ticket 123)"
  dprl ledger set-cap --data ./led --dataset records-sha256:9f2c... --unit expert --epsilon 12 --delta 1e-3 --reason "..."`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case dir == "":
				return usagef("--data is required")
			case (dataset == "") == (file == ""):
				return usagef("give --dataset ID (the ids are listed by dprl ledger show) or --file LOG, one of them")
			case strings.TrimSpace(reason) == "":
				return usagef("--reason is required: a cap change is recorded with why it was made")
			case !cmd.Flags().Changed("epsilon") || !cmd.Flags().Changed("delta"):
				return usagef("--epsilon and --delta are required")
			case !(eps > 0) || math.IsInf(eps, 0):
				return usagef("--epsilon %v: want > 0", eps)
			case !(delta > 0 && delta < 1):
				return usagef("--delta %v: want in (0, 1)", delta)
			}
			s, err := ledger.Open(dir, ledger.Options{MustExist: true, Logger: a.log})
			if err != nil {
				return err
			}
			defer s.Close()
			what := dataset
			if file != "" {
				id, recs, err := sessionlog.ScanRecords(file)
				if err != nil {
					return fmt.Errorf("--file: %w", err)
				}
				if len(recs) == 0 {
					return fmt.Errorf("--file %s: no sessions", file)
				}
				if dataset, err = s.ResolveDataset(id, recs); err != nil {
					return fmt.Errorf("--file %s: %w", file, err)
				}
				what = "for the records of " + file
			}
			d, ok, err := s.Dataset(dataset)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("no dataset %s in the ledger %s (no private run has read them; the ids are listed by dprl ledger show)", what, dir)
			}
			u := ledger.Unit(unit)
			if unit == "" {
				if len(d.Units) != 1 {
					names := make([]string, 0, len(d.Units))
					for u := range d.Units {
						names = append(names, string(u))
					}
					slices.Sort(names)
					return usagef("dataset %s has budgets at units %s: give --unit", dataset, strings.Join(names, ", "))
				}
				for k := range d.Units {
					u = k
				}
			}
			old := d.Units[u]
			e, err := s.SetCap(dataset, u, ledger.Cap{Epsilon: eps, Delta: delta}, reason)
			if err != nil {
				if errors.Is(err, ledger.ErrInvalid) {
					return usageError{err}
				}
				return err
			}
			nd, _, err := s.Dataset(dataset)
			if err != nil {
				return err
			}
			res := ledgerSetCapResult{Dataset: dataset, Unit: u, Old: old.Cap, Cap: *e.Cap, Reason: e.Reason, Seq: e.Seq, Runs: nd.Units[u].Runs}
			if res.Spent, err = nd.Units[u].Spent(); err != nil {
				return err
			}
			return emit(a.stdout, asJSON, res, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "dataset %s unit %s: cap (epsilon %g, delta %g) -> (epsilon %g, delta %g), ledger entry %d; spent epsilon %.4g in %d runs\n",
					dataset, u, res.Old.Epsilon, res.Old.Delta, res.Cap.Epsilon, res.Cap.Delta, res.Seq, res.Spent, res.Runs)
				return err
			})
		},
	}
	c.Flags().StringVar(&dir, "data", "", "the ledger's directory (an offline --ledger directory or an agent's --data) (required)")
	c.Flags().StringVar(&dataset, "dataset", "", "the dataset's id")
	c.Flags().StringVar(&file, "file", "", "a session log whose records belong to the dataset (instead of --dataset)")
	c.Flags().StringVar(&unit, "unit", "", "the protected unit: trajectory, user or expert (default: the dataset's only unit)")
	c.Flags().Float64Var(&eps, "epsilon", 0, "the new cap's epsilon (required)")
	c.Flags().Float64Var(&delta, "delta", 0, "the new cap's delta (required)")
	c.Flags().StringVar(&reason, "reason", "", "why the cap changes, recorded in the entry (required)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
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
			if err := atomicfile.WriteFile(out, b, 0o644); err != nil {
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
