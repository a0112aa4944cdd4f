package main

import (
	"errors"

	"dprl/cmd/dprl/cliflags"
	"dprl/experiment/demo"
	"dprl/internal/progress"
	"dprl/stream"

	"github.com/spf13/cobra"
)

func newReplayCmd(a *app) *cobra.Command {
	var (
		cfg demo.ReplayConfig
		fl  *cliflags.Flags
	)
	c := &cobra.Command{
		Use:     "replay --nats URL --env E --users N [--concurrency C] [--returning P]",
		Short:   "Drive simulated users against a running agent over NATS",
		Example: `  dprl replay --nats nats://127.0.0.1:4222 --env cartpole --users 2000 --concurrency 16`,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cfg.Validate(); err != nil {
				return usageError{fl.Rename(err)}
			}
			cfg.Logger = a.log
			cfg.StartProgress = func(p func() demo.ReplayProgress) func() {
				return a.task("replay").Every(func() progress.Report { return p().Report() })
			}
			res, err := demo.Replay(c.Context(), cfg)
			if res.Planned > 0 { // a summary, partial beside a *demo.StoppedError
				return errors.Join(emit(a, res, nil), err)
			}
			return err
		},
	}
	fl = cliflags.New(c.Flags(), &cfg)
	fl.StringVar(&cfg.URL, "nats", "nats://127.0.0.1:4222", "URL of the NATS server the agent listens on")
	fl.StringVar(&cfg.Prefix, "prefix", stream.DefaultPrefix, "subject prefix")
	fl.StringVar(&cfg.Env, "env", "cartpole", "environment the users play")
	fl.IntVar(&cfg.Users, "users", 1000, "number of sessions")
	fl.IntVar(&cfg.Concurrency, "concurrency", 16, "sessions at the same time")
	fl.Float64Var(&cfg.Returning, "returning", 0, "probability that a session comes from a returning user")
	fl.Uint64Var(&cfg.Seed, "seed", 0, "seed of the simulated users (0: random)")
	fl.DurationVar(&cfg.GiveUp, "give-up", demo.DefaultGiveUp, "stop when the agent has answered no request for this long (0: never)")
	fl.Float64Var(&cfg.Rate, "rate", 0, "start at most this many sessions per second, as real users arrive (0: as fast as --concurrency allows; at full speed sessions often end after a new release and are set aside as stale)")
	fl.Bool("json", false, "print the summary as JSON")
	fl.StringVar(&cfg.Credentials.Identity, "nats-identity", "", "client identity name (its entry in the agent's --nats-clients): requests use its reply inbox _INBOX.NAME")
	fl.StringVar(&cfg.Credentials.NKey, "nkey", "", "nkey seed file of the client identity")
	fl.StringVar(&cfg.Credentials.User, "nats-user", "", "user name of the client identity")
	fl.StringVar(&cfg.Credentials.PasswordFile, "nats-password-file", "", "file holding the password of --nats-user")
	fl.StringVar(&cfg.Credentials.Creds, "creds", "", "NATS credentials file")
	fl.StringVar(&cfg.Credentials.TLSCA, "tls-ca", "", "CA file to verify the NATS server")
	fl.StringVar(&cfg.Credentials.TLSCert, "tls-cert", "", "client certificate (mutual TLS)")
	fl.StringVar(&cfg.Credentials.TLSKey, "tls-key", "", "client key (mutual TLS)")
	return c
}
