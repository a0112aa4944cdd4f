package main

import (
	"encoding/json"
	"fmt"

	"dprl/agent"
	"dprl/stream"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// registerNATSSecurity binds the flags that secure dprl agent's embedded
// NATS server to the fields of f.
func registerNATSSecurity(fl *pflag.FlagSet, f *agent.NATSSecurityFiles) {
	fl.StringVar(&f.Clients, "nats-clients", "", "client identities of the embedded NATS server (JSON, see examples/nats-clients.json): every connection must then authenticate, and a client may only send requests and read its own replies and the policy announcements")
	fl.StringVar(&f.ServerCert, "nats-tls-cert", "", "certificate (PEM) of the embedded NATS server: TCP clients must use TLS")
	fl.StringVar(&f.ServerKey, "nats-tls-key", "", "key (PEM) of --nats-tls-cert")
	fl.StringVar(&f.ClientCA, "nats-tls-client-ca", "", "CA (PEM) that must have signed every client's certificate (mutual TLS)")
	fl.IntVar(&f.MaxConn, "nats-max-conn", 0, fmt.Sprintf("cap on the embedded server's client connections (0: %d, lowered to fit the open-file limit)", agent.DefaultNATSMaxConn))
	fl.IntVar(&f.MaxSubs, "nats-max-subs", 0, fmt.Sprintf("cap on the subscriptions of one connection (0: %d, or act workers + 8 if more)", agent.DefaultNATSMaxSubs))
	fl.BoolVar(&f.Insecure, "insecure-nats", false, "allow the embedded server on a non-loopback address without --nats-clients or without TLS: anyone who reaches it can read observations and user ids, answer act requests and forge policy announcements")
}

// registerClientFiles binds the connection flags of a client of the agent
// (dprl replay) to the fields of f.
func registerClientFiles(fl *pflag.FlagSet, f *stream.ClientFiles) {
	fl.StringVar(&f.Identity, "nats-identity", "", "client identity name (its entry in the agent's --nats-clients): requests use its reply inbox _INBOX.NAME")
	fl.StringVar(&f.NKey, "nkey", "", "nkey seed file of the client identity")
	fl.StringVar(&f.User, "nats-user", "", "user name of the client identity")
	fl.StringVar(&f.PasswordFile, "nats-password-file", "", "file holding the password of --nats-user")
	fl.StringVar(&f.Creds, "creds", "", "NATS credentials file")
	fl.StringVar(&f.TLSCA, "tls-ca", "", "CA file to verify the NATS server")
	fl.StringVar(&f.TLSCert, "tls-cert", "", "client certificate (mutual TLS)")
	fl.StringVar(&f.TLSKey, "tls-key", "", "client key (mutual TLS)")
}

// newAgentNKeyCmd is dprl agent nkey: a client identity's key pair.
func newAgentNKeyCmd(a *app) *cobra.Command {
	var seedFile, name string
	c := &cobra.Command{
		Use:   "nkey --seed-file FILE [--name NAME]",
		Short: "Create the nkey of a client identity: the seed goes to a file, the public key to stdout",
		Long: `Creates a fresh nkey user key pair for a client of the agent. The seed (the
secret) is written to --seed-file with mode 0600, never over an existing file;
the client connects with it (dprl replay --nkey FILE --nats-identity NAME). The
public key is printed; with --name, as the entry to add to the agent's
--nats-clients file.`,
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
			if err != nil {
				return err
			}
			if name == "" {
				_, err = fmt.Fprintln(a.stdout, pub)
				return err
			}
			b, err := json.Marshal(stream.ClientIdentity{Name: name, NKey: pub})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(a.stdout, "%s\n", b)
			return err
		},
	}
	c.Flags().StringVar(&seedFile, "seed-file", "", "file to create with the seed (mode 0600)")
	c.Flags().StringVar(&name, "name", "", "identity name: print the --nats-clients entry")
	return c
}
