package main

import (
	"errors"
	"fmt"
	"os"

	"dprl/agent/service"
	"dprl/cmd/dprl/cliflags"
	"dprl/internal/flagsrc"
	"dprl/ledger"
	"dprl/stream"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// registerAgentSettings binds dprl agent's flags to the fields of s and
// returns them, with the flags of the names service.SettingsFields gives
// groups of fields.
func registerAgentSettings(fs *pflag.FlagSet, s *service.Settings) *cliflags.Flags {
	// The defaults of their flags:
	s.Cluster.Role, s.Cluster.Partitions, s.Prefix, s.SessionLogFormat = service.RoleAll, service.DefaultPartitions, stream.DefaultPrefix, service.SessionLogV1
	s.Backups.Every, s.Backups.Keep, s.ShutdownGrace = service.DefaultBackupEvery, service.DefaultBackupKeep, service.DefaultShutdownGrace
	fl := cliflags.New(fs, s)
	fl.Name("BackupDir", "backup-dir")
	fl.Name("BackupEvery", "backup-every")
	fl.Name("BackupKeep", "backup-keep")
	fl.Name("ServerTLS", "nats-tls-*")
	fl.Name("Caps", "nats-max-*")
	fl.Name("ClusterReplicas", "cluster-replicas")
	fl.IntVar(&s.Security.MaxConn, "nats-max-conn", 0, fmt.Sprintf("cap on the embedded server's client connections, up to 2^20 (0: %d, lowered to fit the open-file limit)", service.DefaultNATSMaxConn))
	fl.IntVar(&s.Security.MaxSubs, "nats-max-subs", 0, fmt.Sprintf("cap on the subscriptions of one connection, act workers + 8 to 2^20 (0: %d, or act workers + 8 if more)", service.DefaultNATSMaxSubs))
	fl.Var(&s.Models, "model", "a model to serve, NAME or NAME:key=value,... (repeatable; keys: the per-policy flags, e.g. env, K, user-epsilon): each has its ledger in --data/models/NAME and its subjects --prefix.NAME.v1.*, and takes unset values from the flags (docs/agent.md, Several policies in one agent)")
	fl.Var(&s.Models, "models", "models as JSON, [{\"name\": NAME, KEY: VALUE, ...}, ...] (for the config file and DPRL_MODELS; combined with --model)")
	return fl
}

func newAgentCmd(a *app) *cobra.Command {
	var (
		s           service.Settings
		config      string
		checkConfig bool
		fl          *cliflags.Flags
	)
	c := &cobra.Command{
		Use:   "agent --data DIR (--env NAME | --obs-dim N --actions N) [flags]",
		Short: "Run the long-running DP learning agent on NATS",
		RunE: func(c *cobra.Command, _ []string) error {
			// The flags the command line did not set come from DPRL_*
			// variables, then from the --config file (internal/flagsrc).
			if err := flagsrc.Apply(c.Flags(), config, os.Environ(), "DPRL_", "config", "help"); err != nil {
				return usageError{err} // a bad DPRL_* value, or a --config file that is missing or wrong
			}
			// An explicit zero privacy parameter is an error, never "the
			// default": a flag, the environment or the config file set it.
			s.Explicit = fl.FieldChanged
			sc, err := s.ServiceConfig()
			if err != nil {
				return usageError{fl.Rename(err)}
			}
			sc.Logger = a.log
			if checkConfig {
				fmt.Fprint(a.stdout, sc.CheckSummary())
				return nil
			}
			err = service.Run(c.Context(), sc, a.stderr)
			if errors.Is(err, ledger.ErrNotEmpty) {
				return usagef("%s holds files but no ledger (a mistyped path?): give the ledger's directory, an empty one, or --init to create a new ledger there", service.LedgerDirOf(err, "--data "+sc.DataDir))
			}
			return fl.Rename(err)
		},
	}
	c.Flags().StringVar(&config, "config", "", "JSON config file: an object of flag names to values (flags and DPRL_* environment variables override it)")
	c.Flags().BoolVar(&checkConfig, "check-config", false, "validate the configuration and exit: every flag's range, the addresses, and every file (read and parsed); nothing is created, bound or dialled, so a taken port or an unreachable server shows only at start")
	fl = registerAgentSettings(c.Flags(), &s)
	flagsrc.Alias(c.Flags(), "env-spec", "env", a.stderr)
	c.AddCommand(newAgentNKeyCmd(a))
	return c
}
