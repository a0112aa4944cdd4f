package main

import (
	"errors"
	"fmt"
	"io/fs"

	"dprl/stream"

	"github.com/spf13/cobra"
)

// newAgentNKeyCmd is dprl agent nkey: a client identity's key pair.
func newAgentNKeyCmd(a *app) *cobra.Command {
	var seedFile, name string
	c := &cobra.Command{
		Use:     "nkey --seed-file FILE [--name NAME]",
		Short:   "Create the nkey of a client identity: the seed goes to a file, the public key to stdout",
		Long:    helpText("agent-nkey"),
		Example: `  dprl agent nkey --seed-file web.nk --name web`,
		Args:    noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if seedFile == "" {
				return usagef("--seed-file is required")
			}
			if name != "" && !stream.ValidIdentityName(name) {
				return usagef("--name %q: want 1 to 64 letters, digits, '-' or '_'", name)
			}
			pub, err := stream.NewIdentityKey(seedFile)
			if errors.Is(err, fs.ErrExist) { // a seed is never overwritten
				return usageError{fmt.Errorf("--seed-file: %w", err)}
			} else if err != nil {
				return err
			}
			if pub, err = stream.IdentityEntry(pub, name); err == nil {
				_, err = fmt.Fprintln(a.stdout, pub)
			}
			return err
		},
	}
	c.Flags().StringVar(&seedFile, "seed-file", "", "file to create with the seed (mode 0600)")
	c.Flags().StringVar(&name, "name", "", "identity name: print the --nats-clients entry")
	return c
}
