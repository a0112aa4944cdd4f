package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"dprl/agent"
	"dprl/stream"

	"github.com/nats-io/nkeys"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// natsSecurityFlags secure the embedded NATS server of dprl agent.
type natsSecurityFlags struct {
	clients, tlsCert, tlsKey, tlsClientCA string
	maxConn, maxSubs                      int
	insecure                              bool
}

func (f *natsSecurityFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.clients, "nats-clients", "", "client identities of the embedded NATS server (JSON, see examples/nats-clients.json): every connection must then authenticate, and a client may only send requests and read its own replies and the policy announcements")
	fl.StringVar(&f.tlsCert, "nats-tls-cert", "", "certificate (PEM) of the embedded NATS server: TCP clients must use TLS")
	fl.StringVar(&f.tlsKey, "nats-tls-key", "", "key (PEM) of --nats-tls-cert")
	fl.StringVar(&f.tlsClientCA, "nats-tls-client-ca", "", "CA (PEM) that must have signed every client's certificate (mutual TLS)")
	fl.IntVar(&f.maxConn, "nats-max-conn", 0, fmt.Sprintf("cap on the embedded server's client connections (0: %d, lowered to fit the open-file limit)", agent.DefaultNATSMaxConn))
	fl.IntVar(&f.maxSubs, "nats-max-subs", 0, fmt.Sprintf("cap on the subscriptions of one connection (0: %d, or act workers + 8 if more)", agent.DefaultNATSMaxSubs))
	fl.BoolVar(&f.insecure, "insecure-nats", false, "allow the embedded server on a non-loopback address without --nats-clients or without TLS: anyone who reaches it can read observations and user ids, answer act requests and forge policy announcements")
}

// security returns the embedded server's security for listen; with an
// external server (embedded false) every flag of the block must be unset.
func (f *natsSecurityFlags) security(embedded bool, listen string) (agent.NATSSecurity, error) {
	if !embedded {
		if f.clients != "" || f.tlsCert != "" || f.tlsKey != "" || f.tlsClientCA != "" || f.maxConn != 0 || f.maxSubs != 0 || f.insecure {
			return agent.NATSSecurity{}, usagef("--nats-clients, --nats-tls-*, --nats-max-* and --insecure-nats configure the embedded server; an external server is secured by its own configuration (README, Securing NATS)")
		}
		return agent.NATSSecurity{}, nil
	}
	sec := agent.NATSSecurity{MaxConn: f.maxConn, MaxSubs: f.maxSubs, Insecure: f.insecure}
	if f.clients != "" {
		cl, err := stream.LoadClients(f.clients)
		if err != nil {
			return sec, usageError{err}
		}
		sec.Clients = cl
	}
	switch {
	case f.tlsCert != "" || f.tlsKey != "":
		cfg, err := stream.ServerTLS(f.tlsCert, f.tlsKey, f.tlsClientCA)
		if err != nil {
			return sec, usageError{err}
		}
		sec.TLS = cfg
	case f.tlsClientCA != "":
		return sec, usagef("--nats-tls-client-ca needs --nats-tls-cert and --nats-tls-key")
	}
	if err := sec.Check(listen); err != nil {
		return sec, usagef("%v: give --nats-clients FILE and --nats-tls-cert/--nats-tls-key, or --insecure-nats", err)
	}
	return sec, nil
}

// natsClientFlags are the connection options of a client of the agent
// (dprl replay).
type natsClientFlags struct {
	nkey, creds, user, passwordFile, identity, tlsCA, tlsCert, tlsKey string
}

func (f *natsClientFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.identity, "nats-identity", "", "client identity name (its entry in the agent's --nats-clients): requests use its reply inbox _INBOX.NAME")
	fl.StringVar(&f.nkey, "nkey", "", "nkey seed file of the client identity")
	fl.StringVar(&f.user, "nats-user", "", "user name of the client identity")
	fl.StringVar(&f.passwordFile, "nats-password-file", "", "file holding the password of --nats-user")
	fl.StringVar(&f.creds, "creds", "", "NATS credentials file")
	fl.StringVar(&f.tlsCA, "tls-ca", "", "CA file to verify the NATS server")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "client certificate (mutual TLS)")
	fl.StringVar(&f.tlsKey, "tls-key", "", "client key (mutual TLS)")
}

func (f *natsClientFlags) options() ([]stream.Option, error) {
	var opts []stream.Option
	if f.identity != "" {
		opts = append(opts, stream.WithInbox(f.identity))
	}
	if f.nkey != "" {
		opts = append(opts, stream.WithNKey(f.nkey))
	}
	if f.creds != "" {
		opts = append(opts, stream.WithCredentials(f.creds))
	}
	if (f.user == "") != (f.passwordFile == "") {
		return nil, usagef("--nats-user and --nats-password-file go together")
	}
	if f.user != "" {
		b, err := os.ReadFile(f.passwordFile)
		if err != nil {
			return nil, usagef("--nats-password-file: %v", err)
		}
		opts = append(opts, stream.WithUserPassword(f.user, strings.TrimRight(string(b), "\r\n")))
	}
	if f.tlsCA != "" || f.tlsCert != "" || f.tlsKey != "" {
		opts = append(opts, stream.WithTLS(f.tlsCA, f.tlsCert, f.tlsKey))
	}
	return opts, nil
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
			kp, err := nkeys.CreateUser()
			if err != nil {
				return err
			}
			seed, err := kp.Seed()
			if err != nil {
				return err
			}
			pub, err := kp.PublicKey()
			if err != nil {
				return err
			}
			f, err := os.OpenFile(seedFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return fmt.Errorf("seed file: %w", err)
			}
			if _, err := f.Write(append(seed, '\n')); err != nil {
				f.Close()
				return fmt.Errorf("seed file: %w", err)
			}
			if err := f.Close(); err != nil {
				return fmt.Errorf("seed file: %w", err)
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
