package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"dprl/offline/svt"
)

func newOfflineSVTCmd(a *app) *cobra.Command {
	var f offlineFlags[svt.ReleaseConfig]
	c := &cobra.Command{
		Use:   "svt --data FILE --experts DIR --epsilon E1 --delta D1 --queries T --out-stable FILE [--out-unstable FILE]",
		Short: "Release the stable trajectory prefixes of an expert log with expert-level DP (SVT)",
		RunE:  func(cmd *cobra.Command, _ []string) error { return runOfflineSVT(cmd, a, &f) },
	}
	fl := f.register(c)
	fl.Name("CapDelta", "dataset-delta")
	fl.Bool("json", false, "print the result as JSON")
	return c
}

func runOfflineSVT(cmd *cobra.Command, a *app, f *offlineFlags[svt.ReleaseConfig]) error {
	rc := f.cfg
	rc.Seeded, rc.Warn = cmd.Flags().Changed("seed"), func(msg string) { a.log.Warn().Msg(msg) }
	if f.budget.fl.FieldChanged("DatasetDelta") {
		rc.CapDelta = f.budget.DatasetDelta
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
