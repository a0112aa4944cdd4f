package main

import (
	"errors"
	"fmt"

	"dprl/experiment"

	"github.com/spf13/cobra"
)

// runTrainDPSGD runs the DP-SGD baselines (experiment.RunDPSGD). --z,
// --delta, --clip (default 1) and --eval-episodes apply; the configuration
// fixes episodes and steps, and the learner flags of dppg are rejected
// (checkTrainFlagsApply).
func runTrainDPSGD(cmd *cobra.Command, a *app, f *trainFlags) error {
	c := experiment.DPSGD{Env: f.env, Algo: f.algo, Z: f.z, Clip: 1, Delta: f.delta, EvalEpisodes: f.evalEpisodes}
	if cmd.Flags().Changed("clip") {
		c.Clip = f.clip
	}
	if err := trainUsage(nil, c.Validate()); err != nil {
		return err
	}
	var err error
	if c.Seed, err = seedFlag(cmd, "seed", f.seed); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	res, err := experiment.RunDPSGD(cmd.Context(), c, nil)
	if cerr := (*experiment.ConfigError)(nil); errors.As(err, &cerr) {
		return usageError{cerr.Err}
	} else if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return emit(a.stdout, f.json, res, res.WriteText)
}
