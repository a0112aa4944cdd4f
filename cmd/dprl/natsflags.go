package main

import (
	"fmt"

	"dprl/cmd/dprl/cliflags"
	"dprl/stream"

	"github.com/spf13/cobra"
)

// newAgentNKeyCmd is dprl agent nkey: a client identity's key pair.
func newAgentNKeyCmd(a *app) *cobra.Command {
	var (
		args stream.IdentityArgs
		fl   *cliflags.Flags
	)
	c := &cobra.Command{
		Use:     "nkey --seed-file FILE [--name NAME]",
		Short:   "Create the nkey of a client identity: the seed goes to a file, the public key to stdout",
		Example: `  dprl agent nkey --seed-file web.nk --name web`,
		RunE: func(c *cobra.Command, _ []string) error {
			entry, err := args.Create()
			if err != nil {
				return fieldUsage("", fl, err)
			}
			_, err = fmt.Fprintln(a.stdout, entry)
			return err
		},
	}
	fl = cliflags.New(c.Flags(), &args)
	return c
}
