package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"dprl/offline/svt"
)

func newOfflineSVTCmd(a *app) *cobra.Command {
	var f offlineFlags[svt.ReleaseConfig]
	r := &f.cfg
	c := &cobra.Command{
		Use:   "svt --data FILE --experts DIR --epsilon E1 --delta D1 --queries T --out-stable FILE [--out-unstable FILE]",
		Short: "Release the stable trajectory prefixes of an expert log with expert-level DP (SVT)",
		RunE:  func(cmd *cobra.Command, _ []string) error { return runOfflineSVT(cmd, a, &f) },
	}
	fl := f.register(c)
	fl.Name("CapDelta", "dataset-delta")
	fl.StringVar(&r.Data, "data", "", "session log (dprl.sessions.v1) with expert ids")
	fl.StringVar(&r.Experts, "experts", "", "directory of expert snapshots DIR/<expert id>.snap")
	fl.Float64Var(&r.Epsilon, "epsilon", 0, "epsilon eps1 > 0 of the release (expert level)")
	fl.Float64Var(&r.Delta, "delta", 0, "delta1 in (0, 1) of the release (the paper: 1/M)")
	fl.Float64Var(&r.PMin, "pmin", 0.02, "the experts' smoothing floor p_min, as when the log was generated")
	fl.IntVar(&r.Queries, "queries", 0, "T, the number of trajectories queried, 1..number in the log (the paper: 20-100)")
	fl.IntVar(&r.MaxLen, "max-len", 500, "L, public bound on trajectory length (the environment's step limit; a longer trajectory is an error)")
	fl.StringVar(&r.OutStable, "out-stable", "", "file for the release: the stable prefixes, without ids or behaviour probabilities (dprl.sessions.v1)")
	fl.StringVar(&r.OutUnstable, "out-unstable", "", "file for the tails and unqueried trajectories, NOT released and not DP: for the data owner's expert-level DP learner only (dprl.sessions.v1; default: not written)")
	fl.BoolVar(&r.Force, "force", false, "overwrite --out-stable and --out-unstable if they exist")
	fl.Uint64Var(&r.Seed, "seed", 0, "seed the noise and the shuffle (simulation only; recorded in the ledger). Default: a secure generator seeded from the OS")
	fl.Bool("json", false, "print the result as JSON")
	return c
}

func runOfflineSVT(cmd *cobra.Command, a *app, f *offlineFlags[svt.ReleaseConfig]) error {
	rc := f.cfg
	rc.Seeded, rc.Warn = cmd.Flags().Changed("seed"), func(msg string) { a.log.Warn().Msg(msg) }
	if f.budget.changed("dataset-delta") {
		rc.CapDelta = f.budget.cap.Delta
	}
	m, err := svt.NewRelease(rc, svt.NewNoiseRand(rc.Seeded, rc.Seed))
	if err != nil {
		return usagef("offline svt: %w", f.fl.Rename(err))
	}
	defer m.Close()
	wrap := func(err error) error { return fmt.Errorf("offline svt: %w", err) }
	return runOffline(a, cmd, offlineRun[*svt.Report]{budget: &f.budget, private: true, in: m.Input(), m: m,
		cfgErr: wrap, runErr: func(err error) error { return wrap(f.fl.Rename(err)) }})
}
