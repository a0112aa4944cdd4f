package main

import (
	"errors"
	"fmt"

	"dprl/agent/service"
	"dprl/cmd/dprl/cliflags"
	"dprl/experiment/demo"
	"dprl/internal/flagsrc"
	"dprl/internal/progress"
	"dprl/ledger"
	"dprl/ledger/accountant"

	"github.com/spf13/cobra"
)

func newDemoCmd(a *app) *cobra.Command {
	cfg := demo.Config{MaxUpdatesPerUser: service.DefaultMaxUpdatesPerUser, Pace: demo.PaceLockstep} // the defaults of their flags
	var fl *cliflags.Flags
	c := &cobra.Command{
		Use:   "demo [--env cartpole] [--users N] [--z Z] [--K K]",
		Short: "Embedded NATS + the DP agent + simulated users, end to end in one process",
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cfg.Validate(); err != nil {
				return usageError{fl.Rename(err)}
			}
			cfg, ac, eps, err := cfg.Prepare(fl.FieldChanged)
			if err != nil {
				return usageError{err}
			}
			sc, err := cfg.Service(ac, a.log)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "dprl demo: %s, %d users, K = %d, z = %.6g: per-session epsilon %s at delta %g for a release at this z (analytic Gaussian; the summary reads the ledger); data in %s\n",
				cfg.Env, cfg.Users, ac.Policy.DP.UsersPerUpdate, ac.Policy.DP.NoiseMultiplier, accountant.FormatEpsilon(eps), ac.Delta, sc.DataDir)
			cfg.StartProgress = func(p func() demo.Progress) func() {
				return a.task("demo").Every(func() progress.Report { return p().Report() })
			}
			res, err := demo.Run(c.Context(), sc, cfg)
			if errors.Is(err, ledger.ErrNotEmpty) {
				return usagef("--data %s holds files but no ledger (a mistyped path?): give a demo's or an agent's data directory, an empty one, or none for a new temporary one", sc.DataDir)
			}
			return emit(a, res, err)
		},
	}
	fl = cliflags.New(c.Flags(), &cfg)
	flagsrc.Alias(fl.FlagSet, "lr", "server-lr", a.stderr) // --lr is dprl train's local Adam rate
	fl.Bool("json", false, "print the summary as one JSON object")
	return c
}
