package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

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
	fl := cliflags.New(fs, s)
	fl.Name("BackupDir", "backup-dir")
	fl.Name("BackupEvery", "backup-every")
	fl.Name("BackupKeep", "backup-keep")
	fl.Name("ServerTLS", "nats-tls-*")
	fl.Name("Caps", "nats-max-*")
	fl.Name("ClusterReplicas", "cluster-replicas")
	fl.StringVar(&s.Cluster.Role, "role", service.RoleAll, "all: one process serves, learns and owns its ledger; serve: a serving replica of a cluster (publishes each session's clipped update, serves the ledger of record's versions); learn: a learner candidate (the one holding the writer lease learns from the replicas' updates and writes through the ledger of record). serve and learn need --nats URL of a JetStream server or cluster (dprl nats) and --user-key")
	fl.StringVar(&s.Cluster.Name, "cluster-name", "default", "with --role serve or learn: the name of the cluster's streams (ledger of record, update queue, writer lease)")
	fl.IntVar(&s.Cluster.Replicas, "cluster-replicas", 3, "with --role: the replication factor of the cluster's streams, 1 to 5 (3 survives the loss of one server)")
	fl.StringVar(&s.Cluster.Holder, "cluster-holder", "", "with --role learn: this learner's name in its writer entry (default host:pid)")
	fl.DurationVar(&s.Cluster.LeaseTTL, "lease-ttl", 10*time.Second, "with --role: the TTL of the writer lease (learn) and of a replica's partitions (serve), whole seconds (renewed every third of it; a failed learner is replaced, a failed replica's partitions taken over, after it; a learner retries its renewal through a streams' leader election, 4-9 s when a server dies, and takes its key again if it expired meanwhile and no other candidate took it)")
	fl.IntVar(&s.Cluster.Partitions, "partitions", service.DefaultPartitions, "with --role serve: the partition count of the session subjects, the same as every NATS server's (dprl nats --partitions); the serving replicas share the partitions, and each session's requests go to the one holding its partition")
	fl.StringVar(&s.Cluster.UserKeyFile, "user-key", "", "with --role: a file of 64 hex digits, the user key every process of the cluster shares (one user must have one key everywhere, or the per-user caps would not hold)")
	fl.StringVar(&s.ExpectHead, "expect-head", "", "refuse to start unless the ledger's head is SEQ:HASH (as printed by dprl ledger head and recorded outside the data directory): catches a restored older copy of the whole directory")
	fl.StringVar(&s.DataDir, "data", "", "data directory holding the ledger (required); a missing or empty directory gets a new ledger")
	fl.BoolVar(&s.Init, "init", false, "create a new ledger in a --data directory that holds other files (without it such a directory is refused: a mistyped path would give every user a fresh budget)")
	fl.StringVar(&s.EnvSpec, "env", "", "take the observation/action spaces from this simulator and the learner defaults measured for it, as dprl train (see dprl sims list, policy/REPRODUCE.md)")
	fl.IntVar(&s.ObsDim, "obs-dim", 0, "observation length, 1 to 2048 (instead of --env, whose simulator fixes it)")
	fl.IntVar(&s.Actions, "actions", 0, "number of discrete actions, 2 to 4096 (instead of --env)")
	fl.StringVar(&s.NATS, "nats", "embedded", "\"embedded\" to run NATS in-process, or the URL of an external server: nats://, tls://, ws:// or wss://HOST[:PORT], comma-separated for a cluster")
	fl.StringVar(&s.NATSListen, "nats-listen", "127.0.0.1:4222", "host:port of the embedded NATS server (port 0 picks one; a taken port fails the start before --data is touched); off loopback it needs --nats-clients and --nats-tls-cert/--nats-tls-key, or --insecure-nats")
	fl.StringVar(&s.Prefix, "prefix", stream.DefaultPrefix, "subject prefix of the wire protocol")
	fl.StringVar(&s.TLSCA, "tls-ca", "", "CA file to verify an external NATS server")
	fl.StringVar(&s.TLSCert, "tls-cert", "", "client certificate for an external NATS server")
	fl.StringVar(&s.TLSKey, "tls-key", "", "client key for an external NATS server")
	fl.StringVar(&s.Creds, "creds", "", "NATS credentials file of the agent (external server)")
	fl.StringVar(&s.NKey, "nkey", "", "nkey seed file of the agent's identity (external server)")
	fl.StringVar(&s.Identity, "nats-identity", "", "name of the agent's identity on an external server (requests use the reply inbox _INBOX.NAME; a dprl nats --auth file names each process's)")
	fl.StringVar(&s.SessionLogDir, "log-sessions", "", "write every closed session to rotating dprl.sessions.v1 files in this directory (raw user data: protect it)")
	fl.StringVar(&s.SessionLogFormat, "session-log-format", service.SessionLogV1, "format of --log-sessions: dprl.sessions.v1 (every session), or dsjson (Vowpal Wabbit's decision service JSON, one line per one-step decision, in sessions-*.dsjson files: for contextual-bandit policies; refused with continuous actions or an --env of longer episodes, and any other session it cannot hold is not logged and counted in dprl_session_log_dropped_total{reason=\"unsupported\"})")
	fl.StringVar(&s.Backups.Dir, "backup-dir", "", "write a verified online backup of the ledger into a new subdirectory of this directory every --backup-every while the head moved, keeping the newest --backup-keep (it holds user.key: protect it)")
	fl.DurationVar(&s.Backups.Every, "backup-every", service.DefaultBackupEvery, "interval of --backup-dir backups, >= 1s")
	fl.IntVar(&s.Backups.Keep, "backup-keep", service.DefaultBackupKeep, "backups kept in --backup-dir, >= 1")
	fl.StringVar(&s.HTTPAddr, "http", "", "host:port of /healthz, /readyz, /metrics, /status and the status page at / (e.g. 127.0.0.1:9090; port 0 picks one)")
	fl.DurationVar(&s.ShutdownGrace, "shutdown-grace", service.DefaultShutdownGrace, "on SIGINT/SIGTERM, keep answering requests with shutting_down for at most this long (less once every open session was told) before draining; 0: drain at once")
	fl.IntVar(&s.ActWorkers, "act-workers", 0, "act requests handled concurrently (subscriptions in the queue group); 0: one per two cores")
	fl.Float64Var(&s.Z, "z", 0, "noise multiplier z (default: the profile's)")
	fl.Float64Var(&s.SessionEpsilon, "session-epsilon", 0, "target per-session epsilon at --delta: z is set to the smallest noise multiplier reaching it (analytic Gaussian; instead of --z); 0: off")
	fl.Float64Var(&s.Clip, "clip", 0, "clipping norm S of a user's local update (default: the profile's)")
	fl.IntVar(&s.K, "K", 0, "sessions per update K (default: the profile's), 1 to 2^15 (the exact sampler's floating-point precondition); an update holds its K sessions until it is released, so K sessions of the smallest size must fit --session-memory-mib")
	fl.Float64Var(&s.Delta, "delta", 1e-5, "delta of the per-session and per-user guarantees, 0 < delta < 1")
	fl.Float64Var(&s.UserEpsilon, "user-epsilon", 0, "the per-user epsilon at --delta, the primary privacy setting: without --z or --session-epsilon, z is derived so that a user in --max-updates-per-user updates (1 if unset) reaches it; always enforced as a cap (0 given explicitly, with --max-updates-per-user 0: no per-user cap)")
	fl.StringVar(&s.Noise, "noise", "independent", "noise of the releases: independent, or bandmf (banded square-root correlated noise: less noise in the policy at the same per-user epsilon; a user's updates at least --band apart, at most --max-updates-per-user of them)")
	fl.IntVar(&s.Band, "band", 0, "bands of --noise bandmf, 1 to 4096: its noise state is the last band-1 updates, and a user's sessions within band updates of their last update are set aside")
	fl.IntVar(&s.MaxUpdatesPerUser, "max-updates-per-user", 0, "cap on the updates a user takes part in, up to 2^20 (default 1 when neither cap is given; 0 given explicitly, with --user-epsilon 0: no per-user cap)")
	fl.IntVar(&s.MaxOpenSessions, "max-open-sessions", 100000, "limit of concurrently open sessions, 1 to 2^24")
	fl.IntVar(&s.MaxStepsPerSession, "max-steps", 10000, "limit of steps per session, 2 to 2^24")
	fl.DurationVar(&s.IdleTimeout, "idle-timeout", 5*time.Minute, "close a silent session as truncated after this long (50ms to 720h, as are the other timeouts)")
	fl.DurationVar(&s.FlushTimeout, "flush-timeout", time.Minute, "release a partial batch (still divided by K) after this long")
	fl.IntVar(&s.MaxSessionsPerUser, "max-sessions-per-user", 16, "limit of one user id's concurrently open sessions, 1 to 2^24")
	fl.IntVar(&s.MaxSessionsPerConnection, "max-sessions-per-connection", 10000, "limit of concurrently open sessions opened by one NATS connection (its inbox prefix; raise it for a gateway multiplexing many users), 1 to 2^24")
	fl.Int64Var(&s.SessionMemoryMiB, "session-memory-mib", 1024, "memory budget of the sessions' steps (open sessions and finished ones waiting for an update), in MiB, 1 to 2^30")
	fl.IntVar(&s.MaxQueuedPerUser, "max-queued-per-user", 2, "limit of one user's finished sessions waiting for an update, 1 to 4K + 1024 (the learner queue's capacity)")
	fl.DurationVar(&s.MaxSessionLifetime, "max-session-lifetime", time.Hour, "close a session as truncated this long after it opened, however active")
	fl.Float64Var(&s.RewardLow, "reward-low", math.NaN(), "public lower bound of a reward: each reward is clipped to [--reward-low, --reward-high], finite, low < high (default: the --env simulator's, else -1e6)")
	fl.Float64Var(&s.RewardHigh, "reward-high", math.NaN(), "public upper bound of a reward (default: the --env simulator's, else 1e6)")
	fl.Uint64Var(&s.Seed, "seed", 0, "seed every random source for a repeatable simulation (recorded as seeded in the ledger): each session's actions and each release's local updates get their own streams; which sessions enter which release follows their arrival order. Any 64-bit value; 0: secure")
	fl.BoolVar(&s.ServeNonPrivate, "serve-non-private", false, "with --serve-policy: serve a snapshot that is NOT private (offline learn --non-private, primorl --non-private or --mopo) or records no provenance (written by an older dprl), labelled NOT private at start, on /status, the status page and /metrics")
	fl.StringVar(&s.ServePolicy, "serve-policy", "", "serve this released policy instead of learning: a SAC actor snapshot (dprl offline primorl --out; continuous actions, sampled) or a Q-network policy (dprl offline learn --out; discrete actions, greedy, logged with probability 1); sessions logged with --log-sessions, no updates, no ledger entries, no privacy budget spent (serving a DP release is post-processing); the snapshot must record that it is private (its epsilon, delta, unit and ledger entry, shown at start, on /status, the status page and /metrics): a non-private one, or one written before snapshots recorded it, is refused without --serve-non-private; its dimensions (and a SAC actor's action box) must match --env, or --obs-dim (and --actions for a Q-network policy); the learner's flags (--K, --z, --clip, --session-epsilon, --user-epsilon, ...) do not apply; warm-starting DP learning from it is not supported")
	fl.StringVar(&s.Security.Clients, "nats-clients", "", "client identities of the embedded NATS server (JSON, see examples/nats-clients.json): every connection must then authenticate, and a client may only send requests and read its own replies and the policy announcements")
	fl.StringVar(&s.Security.ServerCert, "nats-tls-cert", "", "certificate (PEM) of the embedded NATS server: TCP clients must use TLS")
	fl.StringVar(&s.Security.ServerKey, "nats-tls-key", "", "key (PEM) of --nats-tls-cert")
	fl.StringVar(&s.Security.ClientCA, "nats-tls-client-ca", "", "CA (PEM) that must have signed every client's certificate (mutual TLS)")
	fl.IntVar(&s.Security.MaxConn, "nats-max-conn", 0, fmt.Sprintf("cap on the embedded server's client connections, up to 2^20 (0: %d, lowered to fit the open-file limit)", service.DefaultNATSMaxConn))
	fl.IntVar(&s.Security.MaxSubs, "nats-max-subs", 0, fmt.Sprintf("cap on the subscriptions of one connection, act workers + 8 to 2^20 (0: %d, or act workers + 8 if more)", service.DefaultNATSMaxSubs))
	fl.BoolVar(&s.Security.Insecure, "insecure-nats", false, "allow the embedded server on a non-loopback address without --nats-clients or without TLS: anyone who reaches it can read observations and user ids, answer act requests and forge policy announcements")
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
			if err := configSources(c, config); err != nil {
				return err
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
			return runAgent(c.Context(), a, fl, sc)
		},
	}
	c.Flags().StringVar(&config, "config", "", "JSON config file: an object of flag names to values (flags and DPRL_* environment variables override it)")
	c.Flags().BoolVar(&checkConfig, "check-config", false, "validate the configuration and exit: every flag's range, the addresses, and every file (read and parsed); nothing is created, bound or dialled, so a taken port or an unreachable server shows only at start")
	fl = registerAgentSettings(c.Flags(), &s)
	flagsrc.Alias(c.Flags(), "env-spec", "env", a.stderr)
	c.AddCommand(newAgentNKeyCmd(a))
	return c
}

func runAgent(ctx context.Context, a *app, fl *cliflags.Flags, sc service.ServiceConfig) error {
	err := service.Run(ctx, sc, a.stderr)
	if errors.Is(err, ledger.ErrNotEmpty) {
		return usagef("%s holds files but no ledger (a mistyped path?): give the ledger's directory, an empty one, or --init to create a new ledger there", service.LedgerDirOf(err, "--data "+sc.DataDir))
	}
	return fl.Rename(err)
}

// configSources fills the flags the command line did not set from DPRL_*
// variables, then from the --config file (internal/flagsrc).
func configSources(c *cobra.Command, file string) error {
	if err := flagsrc.Apply(c.Flags(), file, os.Environ(), "DPRL_", "config", "help"); err != nil {
		return usageError{err} // a bad DPRL_* value, or a --config file that is missing or wrong
	}
	return nil
}
