package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"dprl/experiment"
	"dprl/policy"

	"github.com/spf13/cobra"
)

// runTrainSweep trains plan with every z of --sweep-z over n seeds from
// seed (the same seeds at every z; experiment.TrainPlan.Sweep) and reports
// return against epsilon.
func runTrainSweep(cmd *cobra.Command, a *app, f *trainFlags, plan *experiment.TrainPlan, seed uint64, n int) error {
	var errs []string
	for _, name := range []string{"z", "epsilon", "diag"} {
		if cmd.Flags().Changed(name) {
			errs = append(errs, fmt.Sprintf("--%s: not with --sweep-z (the sweep sets z; --diag writes one run)", name))
		}
	}
	if err := (experiment.Sweep{Zs: f.sweepZ, Seeds: []uint64{0}, Delta: f.delta}).Validate(); err != nil {
		errs = append(errs, flagErrors(err, [][3]string{{"Zs", "--sweep-z"}, {"Delta", "--delta"}})...)
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return usagef("train: %s", strings.Join(errs, "; "))
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = seed + uint64(i)
	}
	zs := slices.Compact(slices.Sorted(slices.Values(f.sweepZ))) // the sweep's points
	prog := newTrainProgress(a, len(zs)*n*f.users, 0)
	res, err := plan.Sweep(cmd.Context(), f.sweepZ, seeds, experiment.SweepHooks{
		Progress: func(point, run int, eps float64) func(policy.Progress) {
			prog.epsilon, prog.offset = eps, (point*n+run)*f.users
			return prog.update
		},
		Point: func(pt experiment.SweepPoint) {
			a.log.Info().Float64("z", pt.Z).Float64("epsilon", pt.Epsilon).Float64("epsilon_per_segment", pt.EpsilonPerSegment).Float64("mean", pt.Mean).Float64("std", pt.Std).Msg("sweep point")
		},
	})
	prog.done() // once: the live line ends before the result
	if cerr := (*experiment.ConfigError)(nil); errors.As(err, &cerr) {
		return usageError{cerr.Err}
	} else if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return emitTrain(a, f, res)
}
