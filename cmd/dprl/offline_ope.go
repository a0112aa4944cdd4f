package main

import (
	"github.com/spf13/cobra"

	"dprl/offline/budget"
	"dprl/offline/ope"
)

func newOfflineOPECmd(a *app) *cobra.Command {
	var f offlineFlags[ope.Config]
	o := &f.cfg
	c := &cobra.Command{
		Use:   "ope --data FILE --target SPEC (--epsilon E --delta D --actions K --weight-bound C | --non-private)",
		Short: "Audit a target policy on a log of one-step decisions: its value with a confidence interval (private, or the non-private report)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Seeded = cmd.Flags().Changed("seed")
			m, in, err := ope.New(*o)
			if err != nil {
				return fieldUsage("", f.fl, err)
			}
			return runOffline(a, cmd, offlineRun[*ope.Result]{name: "offline ope", budget: &f.budget, private: o.Private(),
				in: budget.Input{Path: o.Data, Reader: in}, m: m, flags: f.fl, plot: f.plot, draw: (*ope.Result).Plot})
		},
	}
	fl := f.register(c)
	fl.StringVar(&f.plot, "plot", "", "write the intervals as a figure (PNG, or another format by extension) to this file; with --non-private it shows the non-private estimates too, labelled")
	fl.Bool("json", false, "print JSON")
	return c
}
