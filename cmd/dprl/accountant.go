package main

import (
	"errors"
	"strings"

	"dprl/ledger/accountant"

	"github.com/spf13/cobra"
)

func newAccountantCmd(a *app) *cobra.Command {
	return groupCmd("accountant", "Privacy accounting: epsilon of a mechanism, noise for a target, SVT budget split",
		newAccountantEpsilonCmd(a), newAccountantNoiseCmd(a), newAccountantSVTCmd(a))
}

// mechanismFlags are the flags shared by epsilon and noise.
type mechanismFlags struct {
	delta float64
	m     accountant.Mechanism
}

// register adds the shared flags and the command's own required flag
// name, filling *p.
func (f *mechanismFlags) register(c *cobra.Command, p *float64, name, usage string) {
	c.Flags().Float64Var(p, name, 0, usage)
	_ = c.MarkFlagRequired(name)
	c.Flags().Float64Var(&f.delta, "delta", 0, "target delta, 0 < delta < 1 (required)")
	c.Flags().Float64Var(&f.m.Q, "q", 1, "Poisson sampling rate, 0 < q <= 1 (1: no subsampling)")
	c.Flags().IntVar(&f.m.Steps, "steps", 1, "number of compositions of the mechanism, >= 1")
	c.Flags().StringVar(&f.m.Method, "method", "", "analytic, rdp, pld, zhao or classic (default analytic for one Gaussian, rdp with --q/--steps)")
	c.Flags().Bool("json", false, "print the result as JSON")
	_ = c.MarkFlagRequired("delta")
}

// mechanism returns the mechanism the flags describe.
func (f *mechanismFlags) mechanism(c *cobra.Command) accountant.Mechanism {
	f.m.Composed = c.Flags().Changed("q") || c.Flags().Changed("steps")
	return f.m
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
	var f mechanismFlags
	var z float64
	c := &cobra.Command{
		Use:   "epsilon --z Z --delta D [--q Q --steps N] [--method M]",
		Short: "Epsilon of a Gaussian mechanism, or of a Poisson-subsampled Gaussian composed over steps",
		RunE: func(c *cobra.Command, _ []string) error {
			res, err := accountant.ComputeEpsilon(accountant.EpsilonConfig{Mechanism: f.mechanism(c), Z: z, Delta: f.delta})
			return emit(a, res, renderedUsage(err))
		},
	}
	f.register(c, &z, "z", "noise multiplier, > 0 (required)")
	return c
}

func newAccountantNoiseCmd(a *app) *cobra.Command {
	var f mechanismFlags
	var eps float64
	c := &cobra.Command{
		Use:   "noise --epsilon E --delta D [--q Q --steps N] [--method M]",
		Short: "The smallest noise multiplier reaching a target (epsilon, delta)",
		RunE: func(c *cobra.Command, _ []string) error {
			res, err := accountant.CalibrateNoise(accountant.NoiseConfig{Mechanism: f.mechanism(c), Epsilon: eps, Delta: f.delta})
			return emit(a, res, renderedUsage(err))
		},
	}
	f.register(c, &eps, "epsilon", "target epsilon, > 0 (required)")
	return c
}

func newAccountantSVTCmd(a *app) *cobra.Command {
	var (
		eps1, delta1, pmin float64
		queries, maxLen    int
	)
	c := &cobra.Command{
		Use:     "svt --epsilon E1 --delta D1 --queries T --max-len L --pmin P",
		Short:   "The DataRelease budget split of the sparse vector technique (expert-level DP)",
		Example: `  dprl accountant svt --epsilon 7.5 --delta 9e-4 --queries 50 --max-len 500 --pmin 0.02`,
		RunE: func(*cobra.Command, []string) error {
			res, err := accountant.NewSVTReport(eps1, delta1, queries, maxLen, pmin)
			if err != nil {
				return usageError{err}
			}
			return emit(a, res, nil)
		},
	}
	c.Flags().Float64Var(&eps1, "epsilon", 0, "release budget epsilon eps1 > 0 (required)")
	c.Flags().Float64Var(&delta1, "delta", 0, "release delta1, 0 < delta1 < 1 (required)")
	c.Flags().IntVar(&queries, "queries", 0, "trajectories queried T, >= 1 (required)")
	c.Flags().IntVar(&maxLen, "max-len", 0, "maximum trajectory length L, >= 1 (required)")
	c.Flags().Float64Var(&pmin, "pmin", 0, "floor of every expert's action probabilities, 0 < p_min <= 1 (required)")
	c.Flags().Bool("json", false, "print the result as JSON")
	for _, n := range []string{"epsilon", "delta", "queries", "max-len", "pmin"} {
		_ = c.MarkFlagRequired(n)
	}
	return c
}
