// Package cliflags binds the dprl command's flags that mirror a library's
// settings struct to its fields, so that the flag names, defaults and help
// live beside the one command line that uses them and the settings stay
// free of flag parsing.
package cliflags

import (
	"fmt"

	"dprl/agent/service"
	"dprl/sims"
	"dprl/stream"

	"github.com/spf13/pflag"
)

// NATSSecurity binds the flags that secure dprl agent's embedded NATS
// server to the fields of f.
func NATSSecurity(fl *pflag.FlagSet, f *service.NATSSecurityFiles) {
	fl.StringVar(&f.Clients, "nats-clients", "", "client identities of the embedded NATS server (JSON, see examples/nats-clients.json): every connection must then authenticate, and a client may only send requests and read its own replies and the policy announcements")
	fl.StringVar(&f.ServerCert, "nats-tls-cert", "", "certificate (PEM) of the embedded NATS server: TCP clients must use TLS")
	fl.StringVar(&f.ServerKey, "nats-tls-key", "", "key (PEM) of --nats-tls-cert")
	fl.StringVar(&f.ClientCA, "nats-tls-client-ca", "", "CA (PEM) that must have signed every client's certificate (mutual TLS)")
	fl.IntVar(&f.MaxConn, "nats-max-conn", 0, fmt.Sprintf("cap on the embedded server's client connections, up to 2^20 (0: %d, lowered to fit the open-file limit)", service.DefaultNATSMaxConn))
	fl.IntVar(&f.MaxSubs, "nats-max-subs", 0, fmt.Sprintf("cap on the subscriptions of one connection, act workers + 8 to 2^20 (0: %d, or act workers + 8 if more)", service.DefaultNATSMaxSubs))
	fl.BoolVar(&f.Insecure, "insecure-nats", false, "allow the embedded server on a non-loopback address without --nats-clients or without TLS: anyone who reaches it can read observations and user ids, answer act requests and forge policy announcements")
}

// ClientFiles binds the connection flags of a client of the agent (dprl
// replay) to the fields of f.
func ClientFiles(fl *pflag.FlagSet, f *stream.ClientFiles) {
	fl.StringVar(&f.Identity, "nats-identity", "", "client identity name (its entry in the agent's --nats-clients): requests use its reply inbox _INBOX.NAME")
	fl.StringVar(&f.NKey, "nkey", "", "nkey seed file of the client identity")
	fl.StringVar(&f.User, "nats-user", "", "user name of the client identity")
	fl.StringVar(&f.PasswordFile, "nats-password-file", "", "file holding the password of --nats-user")
	fl.StringVar(&f.Creds, "creds", "", "NATS credentials file")
	fl.StringVar(&f.TLSCA, "tls-ca", "", "CA file to verify the NATS server")
	fl.StringVar(&f.TLSCert, "tls-cert", "", "client certificate (mutual TLS)")
	fl.StringVar(&f.TLSKey, "tls-key", "", "client key (mutual TLS)")
}

// Baselines binds the flags of dprl sims baselines to the fields of c.
func Baselines(fl *pflag.FlagSet, c *sims.BaselineConfig) {
	fl.StringVar(&c.Env, "env", "", "environment name (see dprl sims list)")
	fl.IntVar(&c.Episodes, "episodes", 1000, "episodes per policy, >= 1")
	fl.Uint64Var(&c.Seed, "seed", 0, "seed of the episodes (default: drawn from the OS and printed in the result)")
	fl.IntVar(&c.Grid, "grid", 5, "constant values per dimension of a box action space, >= 2")
}
