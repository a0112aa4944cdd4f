package main

import (
	"errors"
	"fmt"
	"strings"

	"dprl/experiment"
	"dprl/internal/atomicfile"
	"dprl/profile"

	"github.com/spf13/cobra"
)

// runTrainLogLinear runs experiment.RunLogLinear (log-linear DPPG, Table 2,
// on RiverSwim) with the flags' configuration and prints, plots and traces
// its result.
func runTrainLogLinear(cmd *cobra.Command, a *app, f *trainFlags) error {
	prof, err := profile.Get(f.Env)
	p := prof.RiverSwimP
	if err != nil || p == 0 {
		return usagef("train: --algo %s needs --env riverswim or riverswim-0.9, got %q", experiment.LogLinearMethod, f.Env)
	}
	changed := cmd.Flags().Changed
	c := experiment.LogLinear{Env: f.Env, P: p, Episodes: f.Episodes, Seeds: 5, Workers: f.Workers, Epsilons: f.Epsilons, Delta: f.Delta, Regions: f.Regions, InitRight: f.InitRight, Alpha: f.Alpha, K: 1, ClipAtLR0: f.clipAtLR0, BaselineLR: f.BaselineLR, FisherRidge: f.FisherRidge, FisherExact: f.fisherEx, Trace: f.diag != ""}
	if !changed("epsilon") {
		c.Epsilons = []float64{1, 5}
	}
	if changed("seeds") {
		c.Seeds = f.Seeds
	}
	if changed("K") {
		c.K = f.K
	}
	// Clip and Eta 0 mean "unset" in the library; a flag set to 0 is an error.
	var errs []string
	if changed("clip") {
		c.Clip = f.Clip
		if f.Clip == 0 {
			errs = append(errs, fmt.Sprintf("--clip %v: the clipping norm must be finite and > 0", f.Clip))
		}
		if changed("alpha") {
			errs = append(errs, "--clip and --alpha: set one (--clip chooses alpha)")
		}
	}
	if changed("eta") {
		c.Eta = f.Eta
		if f.Eta == 0 {
			errs = append(errs, fmt.Sprintf("--eta %v: the step size must be finite and > 0", f.Eta))
		}
	}
	if err := c.Validate(); err != nil {
		errs = append(f.fl.Messages(err), errs...)
	}
	if len(errs) > 0 {
		return usagef("train: %s", strings.Join(errs, "; "))
	}
	c.Seed = seedFlag(cmd, "seed", f.seed)
	prog := a.task("training")
	res, err := experiment.RunLogLinear(cmd.Context(), c, prog.Counter(c.TotalEpisodes(), "episodes"))
	prog.Finish()
	if cerr := (*experiment.ConfigError)(nil); errors.As(err, &cerr) {
		return usagef("train: %s", strings.Join(f.fl.Messages(cerr.Err), "; "))
	}
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if f.diag != "" {
		if err := atomicfile.Write(f.diag, 0o644, res.WriteTrace); err != nil {
			return fmt.Errorf("train: --diag: %w", err)
		}
	}
	return emitTrain(a, f, res)
}
