package main

import (
	"errors"
	"strings"

	"dprl/cmd/dprl/cliflags"
	"dprl/ledger/accountant"

	"github.com/spf13/cobra"
)

func newAccountantCmd(a *app) *cobra.Command {
	return groupCmd("accountant", "Privacy accounting: epsilon of a mechanism, noise for a target, SVT budget split",
		newAccountantEpsilonCmd(a), newAccountantNoiseCmd(a), newAccountantSVTCmd(a))
}

// accountantCmd completes c, a dprl accountant subcommand, with the flags
// of cfg's tagged fields (required: required) and --json: it prints what
// run computes from cfg, the Mechanism's Composed set if m (nil: none) is
// cfg's and --q or --steps was given.
func accountantCmd[C any, R texter](a *app, c *cobra.Command, cfg *C, m *accountant.Mechanism, run func(C) (R, error), required ...string) *cobra.Command {
	fl := cliflags.New(c.Flags(), cfg)
	fl.Bool("json", false, "print the result as JSON")
	for _, n := range required {
		_ = c.MarkFlagRequired(n)
	}
	c.RunE = func(*cobra.Command, []string) error {
		if m != nil {
			m.Composed = fl.Changed("q") || fl.Changed("steps")
		}
		res, err := run(*cfg)
		return emit(a, res, renderedUsage(err))
	}
	return c
}

// renderedUsage makes a library's configuration error (accountant.ConfigError,
// audit.ConfigError) a usage error, its fields named as flags ({Q}: --q).
func renderedUsage(err error) error {
	var ce interface {
		Render(func(string) string) string
	}
	if errors.As(err, &ce) {
		return usageError{errors.New(ce.Render(func(f string) string { return "--" + strings.ToLower(f) }))}
	}
	return err
}

func newAccountantEpsilonCmd(a *app) *cobra.Command {
	var cfg accountant.EpsilonConfig
	return accountantCmd(a, &cobra.Command{
		Use:   "epsilon --z Z --delta D [--q Q --steps N] [--method M]",
		Short: "Epsilon of a Gaussian mechanism, or of a Poisson-subsampled Gaussian composed over steps",
	}, &cfg, &cfg.Mechanism, accountant.ComputeEpsilon, "z", "delta")
}

func newAccountantNoiseCmd(a *app) *cobra.Command {
	var cfg accountant.NoiseConfig
	return accountantCmd(a, &cobra.Command{
		Use:   "noise --epsilon E --delta D [--q Q --steps N] [--method M]",
		Short: "The smallest noise multiplier reaching a target (epsilon, delta)",
	}, &cfg, &cfg.Mechanism, accountant.CalibrateNoise, "epsilon", "delta")
}

func newAccountantSVTCmd(a *app) *cobra.Command {
	var cfg accountant.SVTConfig
	return accountantCmd(a, &cobra.Command{
		Use:     "svt --epsilon E1 --delta D1 --queries T --max-len L --pmin P",
		Short:   "The DataRelease budget split of the sparse vector technique (expert-level DP)",
		Example: `  dprl accountant svt --epsilon 7.5 --delta 9e-4 --queries 50 --max-len 500 --pmin 0.02`,
	}, &cfg, nil, func(c accountant.SVTConfig) (accountant.SVTReport, error) {
		res, err := c.Report()
		if err != nil {
			return res, usageError{err}
		}
		return res, nil
	}, "epsilon", "delta", "queries", "max-len", "pmin")
}
