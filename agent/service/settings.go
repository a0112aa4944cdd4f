package service

import (
	"math"
	"time"

	"dprl/internal/fielderr"
	"dprl/ledger/accountant"
	"dprl/stream"
)

// Settings are an agent service's settings as an operator gives them, one
// field per setting of dprl agent: its flag --name, its environment
// variable DPRL_NAME and its config file key "name" set the same field (the
// name is given beside each field). ServiceConfig checks them and builds the
// ServiceConfig; its errors name the fields at fault (*fielderr.Error, see
// SettingsFields), which the command renders as its flags.
//
// A zero privacy parameter (Z, Clip, SessionEpsilon, K) means "the
// learner's default", so Explicit tells an explicit zero, which is an
// error, from an unset one: the agent has no non-private mode.
//
// Every number has a range (given beside each field; Config.Validate
// checks the agent's limits), the addresses must parse and every file
// must be readable and parse; ServiceConfig checks all of it without
// creating, binding or dialling anything, so dprl agent --check-config
// catches all but a taken port and an unreachable server.
type Settings struct {
	// DataDir holds the ledger (data; required).
	DataDir string `flag:"data" usage:"data directory holding the ledger (required); a missing or empty directory gets a new ledger"`
	// Init (init) allows creating a new ledger in a DataDir that is not
	// empty (ServiceConfig.InitLedger); a missing or empty DataDir gets
	// one without it.
	Init bool `flag:"init" usage:"create a new ledger in a --data directory that holds other files (without it such a directory is refused: a mistyped path would give every user a fresh budget)"`
	// ExpectHead, if not "", is the ledger head SEQ:HASH the data directory
	// must hold (expect-head; ServiceConfig.ExpectHead).
	ExpectHead string `flag:"expect-head" usage:"refuse to start unless the ledger's head is SEQ:HASH (as printed by dprl ledger head and recorded outside the data directory): catches a restored older copy of the whole directory"`
	// EnvSpec names a simulator (dprl agent --env): its spaces give the policy
	// spec, its profile the learner (profile.AgentDefaults) and the reward
	// bound. Without it ObsDim observations and Actions (>= 2) discrete
	// actions (obs-dim, actions) give the spec, with Table 3's control
	// learner (policy.DefaultControlConfig): ObsDim 1 to MaxObsDim,
	// Actions 2 to MaxActions, and neither with EnvSpec.
	EnvSpec string `flag:"env" usage:"take the observation/action spaces from this simulator and the learner defaults measured for it, as dprl train (see dprl sims list, policy/REPRODUCE.md)"`
	ObsDim  int    `flag:"obs-dim" usage:"observation length, 1 to 2048 (instead of --env, whose simulator fixes it)"`
	Actions int    `flag:"actions" usage:"number of discrete actions, 2 to 4096 (instead of --env)"`
	// Z, Clip and K (z, clip, K) override the learner's noise multiplier,
	// clipping norm and users per update; 0: the learner's. Z and Clip are
	// finite, K is 1 to MaxUsersPerUpdate and K sessions of the smallest
	// size (Config.MinSessionBytes) fit SessionMemoryMiB.
	Z    float64 `flag:"z" usage:"noise multiplier z (default: the profile's)"`
	Clip float64 `flag:"clip" usage:"clipping norm S of a user's local update (default: the profile's)"`
	K    int     `flag:"K" usage:"sessions per update K (default: the profile's), 1 to 2^15 (the exact sampler's floating-point precondition); an update holds its K sessions until it is released, so K sessions of the smallest size must fit --session-memory-mib"`
	// Learner (learner) is what the agent learns: "dppg" (the default, DP
	// policy gradient) or "lincb", the private linear contextual bandit
	// (agent.Config.LinCB: one decision per session, discrete actions,
	// independent noise, one process) whose observations are clipped to
	// FeatureClip (feature-clip; 0: the EnvSpec profile's), finite and >
	// 0, given with lincb only.
	Learner     string  `flag:"learner" default:"dppg" usage:"what the agent learns: dppg (DP policy gradient), or lincb (a private linear contextual bandit: each session's first decision enters the sufficient statistics of a linear reward model per action, released with the same Gaussian noise per update; updates take K sessions, then 1.3 times the last, up to 16 K; served by inverse-gap weighting; discrete actions, independent noise, one process)"`
	FeatureClip float64 `flag:"feature-clip" usage:"with --learner lincb: the public L2 bound of an observation (larger ones are scaled down to it); default: the --env simulator's"`
	// Average (average) is agent.Config.AverageDecay, in [0, 1); when not
	// given, the EnvSpec profile's (profile.Profile.Average), else 0.
	Average float64 `flag:"average" usage:"with --learner dppg: serve the exponential moving average of the released policies with this decay in [0, 1) instead of the last one (post-processing: the same epsilon; updates still start from the last; 0: off; default: the --env simulator's, 0.9 for recsys)"`
	// Noise (noise) is the noise of the releases: "" or "independent"
	// (fresh noise each release), or "bandmf", the banded square-root
	// correlated noise with Band (band) bands, 1 to bandsens.MaxBand (given
	// only with bandmf): a user's updates are then at least Band releases
	// apart and at most MaxUpdatesPerUser (policy.NoiseBandedSqrt).
	Noise string `flag:"noise" default:"independent" usage:"noise of the releases: independent, or bandmf (banded square-root correlated noise: less noise in the policy at the same per-user epsilon; a user's updates at least --band apart, at most --max-updates-per-user of them)"`
	Band  int    `flag:"band" usage:"bands of --noise bandmf, 1 to 4096: its noise state is the last band-1 updates, and a user's sessions within band updates of their last update are set aside"`
	// SessionEpsilon (session-epsilon), if not 0, sets the noise multiplier
	// to the smallest one whose release is SessionEpsilon-DP per session at
	// Delta (analytic Gaussian), instead of Z.
	SessionEpsilon float64 `flag:"session-epsilon" usage:"target per-session epsilon at --delta: z is set to the smallest noise multiplier reaching it (analytic Gaussian; instead of --z); 0: off"`
	// Delta, UserEpsilon and MaxUpdatesPerUser (delta, user-epsilon,
	// max-updates-per-user) are Config's, except that with neither cap set
	// explicitly a user takes part in at most DefaultMaxUpdatesPerUser
	// updates; explicit zeros for both mean no per-user cap. 0 < Delta < 1,
	// UserEpsilon is finite and >= 0, MaxUpdatesPerUser 0 to
	// MaxUpdatesPerUserCap.
	Delta             float64 `flag:"delta" default:"1e-5" usage:"delta of the per-session and per-user guarantees, 0 < delta < 1"`
	UserEpsilon       float64 `flag:"user-epsilon" usage:"the per-user epsilon at --delta, the primary privacy setting: without --z or --session-epsilon, z is derived so that a user in --max-updates-per-user updates (1 if unset) reaches it; always enforced as a cap (0 given explicitly, with --max-updates-per-user 0: no per-user cap)"`
	MaxUpdatesPerUser int     `flag:"max-updates-per-user" usage:"cap on the updates a user takes part in, up to 2^20 (default 1 when neither cap is given; 0 given explicitly, with --user-epsilon 0: no per-user cap)"`
	// The admission limits (max-open-sessions, max-steps, idle-timeout,
	// flush-timeout, max-session-lifetime, max-sessions-per-user,
	// max-sessions-per-connection, max-queued-per-user) are Config's: the
	// session counts 1 (steps 2) to MaxSessions (MaxSteps), the timeouts
	// MinTimeout to MaxTimeout, MaxQueuedPerUser 1 to MaxQueuedPerUser(K).
	MaxOpenSessions          int           `flag:"max-open-sessions" default:"100000" usage:"limit of concurrently open sessions, 1 to 2^24"`
	MaxStepsPerSession       int           `flag:"max-steps" default:"10000" usage:"limit of steps per session, 2 to 2^24"`
	IdleTimeout              time.Duration `flag:"idle-timeout" default:"5m" usage:"close a silent session as truncated after this long (50ms to 720h, as are the other timeouts)"`
	FlushTimeout             time.Duration `flag:"flush-timeout" default:"1m" usage:"release a partial batch (still divided by K) after this long"`
	MaxSessionLifetime       time.Duration `flag:"max-session-lifetime" default:"1h" usage:"close a session as truncated this long after it opened, however active"`
	MaxSessionsPerUser       int           `flag:"max-sessions-per-user" default:"16" usage:"limit of one user id's concurrently open sessions, 1 to 2^24"`
	MaxSessionsPerConnection int           `flag:"max-sessions-per-connection" default:"10000" usage:"limit of concurrently open sessions opened by one NATS connection (its inbox prefix; raise it for a gateway multiplexing many users), 1 to 2^24"`
	MaxQueuedPerUser         int           `flag:"max-queued-per-user" default:"2" usage:"limit of one user's finished sessions waiting for an update, 1 to 4K + 1024 (the learner queue's capacity)"`
	// SessionMemoryMiB is Config.SessionMemoryBytes in MiB
	// (session-memory-mib), 1 to 2^30.
	SessionMemoryMiB int64 `flag:"session-memory-mib" default:"1024" usage:"memory budget of the sessions' steps (open sessions and finished ones waiting for an update), in MiB, 1 to 2^30"`
	// RewardLow and RewardHigh (reward-low, reward-high) override the
	// public reward bound; NaN: the EnvSpec simulator's, else Config's
	// default. The bound in force is finite with low < high.
	RewardLow  float64 `flag:"reward-low" default:"NaN" usage:"public lower bound of a reward: each reward is clipped to [--reward-low, --reward-high], finite, low < high (default: the --env simulator's, else -1e6)"`
	RewardHigh float64 `flag:"reward-high" default:"NaN" usage:"public upper bound of a reward (default: the --env simulator's, else 1e6)"`
	// Seed seeds every random source (seed; Config.Seed), any value; 0:
	// secure.
	Seed uint64 `flag:"seed" usage:"seed every random source for a repeatable simulation (recorded as seeded in the ledger): each session's actions and each release's local updates get their own streams; which sessions enter which release follows their arrival order. Any 64-bit value; 0: secure"`
	// NATS, NATSListen and Prefix (nats, nats-listen, prefix) are
	// ServiceConfig's. NATS is "embedded" or a server URL
	// (stream.CheckServerURL); NATSListen, with the embedded server, is
	// "" or HOST:PORT (stream.CheckListenAddr).
	NATS       string `flag:"nats" default:"embedded" usage:"\"embedded\" to run NATS in-process, or the URL of an external server: nats://, tls://, ws:// or wss://HOST[:PORT], comma-separated for a cluster"`
	NATSListen string `flag:"nats-listen" default:"127.0.0.1:4222" usage:"host:port of the embedded NATS server (port 0 picks one; a taken port fails the start before --data is touched); off loopback it needs --nats-clients and --nats-tls-cert/--nats-tls-key, or --insecure-nats"`
	Prefix     string `flag:"prefix" usage:"subject prefix of the wire protocol"`
	// TLSCA, TLSCert, TLSKey, Creds and NKey (tls-ca, tls-cert, tls-key,
	// creds, nkey) are files of the agent's credentials for an external
	// NATS server (stream.WithTLS, WithCredentials, WithNKey), read and
	// parsed by ServiceConfig.
	TLSCA   string `flag:"tls-ca" usage:"CA file to verify an external NATS server"`
	TLSCert string `flag:"tls-cert" usage:"client certificate for an external NATS server"`
	TLSKey  string `flag:"tls-key" usage:"client key for an external NATS server"`
	Creds   string `flag:"creds" usage:"NATS credentials file of the agent (external server)"`
	NKey    string `flag:"nkey" usage:"nkey seed file of the agent's identity (external server)"`
	// Identity (nats-identity) names the agent's identity on an external
	// server: its requests' reply inbox is _INBOX.<Identity>
	// (stream.WithInbox), the only inbox a secured server lets it read (a
	// cluster's dprl nats --auth file names each process's).
	Identity string `flag:"nats-identity" usage:"name of the agent's identity on an external server (requests use the reply inbox _INBOX.NAME; a dprl nats --auth file names each process's)"`
	// Security secures the embedded server (the nats-* settings).
	Security NATSSecurityFiles
	// ActWorkers (act-workers), 0 to 1024, HTTPAddr (http; "" or
	// HOST:PORT), SessionLogDir (log-sessions) and SessionLogFormat
	// (session-log-format; only with SessionLogDir) are ServiceConfig's.
	ActWorkers       int    `flag:"act-workers" usage:"act requests handled concurrently (subscriptions in the queue group); 0: one per two cores"`
	HTTPAddr         string `flag:"http" usage:"host:port of /healthz, /readyz, /metrics, /status and the status page at / (e.g. 127.0.0.1:9090; port 0 picks one)"`
	SessionLogDir    string `flag:"log-sessions" usage:"write every closed session to rotating dprl.sessions.v1 files in this directory (raw user data: protect it)"`
	SessionLogFormat string `flag:"session-log-format" usage:"format of --log-sessions: dprl.sessions.v1 (every session), or dsjson (Vowpal Wabbit's decision service JSON, one line per one-step decision, in sessions-*.dsjson files: for contextual-bandit policies; refused with continuous actions or an --env of longer episodes, and any other session it cannot hold is not logged and counted in dprl_session_log_dropped_total{reason=\"unsupported\"})"`
	// Backups (backup-dir, backup-every, backup-keep) is ServiceConfig's.
	Backups Backups
	// ShutdownGrace (shutdown-grace) is ServiceConfig's, except that 0 (or
	// less) means none: the subscriptions drain at once.
	ShutdownGrace time.Duration `flag:"shutdown-grace" usage:"on SIGINT/SIGTERM, keep answering requests with shutting_down for at most this long (less once every open session was told) before draining; 0: drain at once"`
	// Explicit, if not nil, reports whether the field named field was set
	// explicitly (asked of Z, Clip, SessionEpsilon and K).
	Explicit func(field string) bool
	// ServePolicy (serve-policy), if not "", is a SAC actor snapshot file
	// (dprl offline primorl --out) to serve instead of learning
	// (Config.Fixed, FixedPolicy): read and parsed by ServiceConfig, its
	// dimensions must match EnvSpec's spaces, which must be continuous,
	// and its action box the simulator's (the box SAC trained in), or
	// ObsDim (the action dimension and box are then the snapshot's;
	// Actions, discrete, is refused). The learner's settings (Z, Clip, K,
	// SessionEpsilon, Noise, Band, Delta, UserEpsilon, MaxUpdatesPerUser,
	// MaxQueuedPerUser, FlushTimeout) do not apply and are refused when
	// given, as are Models. The snapshot must record that it is private
	// (its provenance): one that is not, or records none, is refused
	// unless ServeNonPrivate.
	ServePolicy string `flag:"serve-policy" usage:"serve this released policy instead of learning: a SAC actor snapshot (dprl offline primorl --out; continuous actions, sampled) or a Q-network policy (dprl offline learn --out; discrete actions, greedy, logged with probability 1); sessions logged with --log-sessions, no updates, no ledger entries, no privacy budget spent (serving a DP release is post-processing); the snapshot must record that it is private (its epsilon, delta, unit and ledger entry, shown at start, on /status, the status page and /metrics): a non-private one, or one written before snapshots recorded it, is refused without --serve-non-private; its dimensions (and a SAC actor's action box) must match --env, or --obs-dim (and --actions for a Q-network policy); the learner's flags (--K, --z, --clip, --session-epsilon, --user-epsilon, ...) do not apply; warm-starting DP learning from it is not supported"`
	// ServeNonPrivate (serve-non-private) serves a ServePolicy snapshot
	// that is not private or records no provenance, labelled NOT private
	// everywhere; refused without ServePolicy and with a private one.
	ServeNonPrivate bool `flag:"serve-non-private" usage:"with --serve-policy: serve a snapshot that is NOT private (offline learn --non-private, primorl --non-private or --mopo) or records no provenance (written by an older dprl), labelled NOT private at start, on /status, the status page and /metrics"`
	// Cluster (role, cluster-name, cluster-replicas, cluster-holder,
	// lease-ttl, user-key, partitions) runs the agent as one role of a cluster.
	Cluster ClusterSettings
	// Models (model, models), if not empty, serve one policy per model
	// instead of one (multi-policy mode, see ModelEntry and ForModel): the
	// fields above are then the models' defaults and the process's
	// settings.
	Models ModelEntries
}

// DefaultMaxUpdatesPerUser is the per-user cap of an agent whose operator
// set none: a user takes part in one update, so the per-user guarantee is
// the per-session one. Returning users are then learned from once; raise
// the cap (MaxUpdatesPerUser, or UserEpsilon) to learn from them again at
// a composed cost.
const DefaultMaxUpdatesPerUser = 1

// SettingsFields are the names the errors of Settings, NATSSecurityFiles
// and agent.Config.Validate may give fields (fielderr): Settings' and
// NATSSecurityFiles' fields (Config's limits have the same names; they
// are agent.ConfigFields, a subset), and ServerTLS and Caps for
// NATSSecurityFiles' TLS files and its two caps as groups.
var SettingsFields = fielderr.Fields{"DataDir", "Init", "UserEpsilon", "MaxUpdatesPerUser", "ExpectHead", "EnvSpec", "ObsDim", "Actions", "Z", "Clip", "K", "SessionEpsilon", "Delta", "Noise", "Band", "Learner", "FeatureClip", "Average",
	"ActWorkers", "SessionMemoryMiB", "NATS", "TLSCA", "TLSCert", "TLSKey", "Creds", "NKey", "Identity",
	"Clients", "ServerTLS", "ServerCert", "ServerKey", "ClientCA", "Caps", "Insecure", "NATSListen", "HTTPAddr",
	"MaxOpenSessions", "MaxStepsPerSession", "MaxSessionsPerUser", "MaxSessionsPerConnection", "MaxQueuedPerUser",
	"IdleTimeout", "FlushTimeout", "MaxSessionLifetime", "RewardLow", "RewardHigh", "ServePolicy", "ServeNonPrivate", "SessionLogDir", "SessionLogFormat",
	"Role", "ClusterReplicas", "LeaseTTL", "UserKeyFile", "Partitions"}

// Validate reports the first problem ServiceConfig finds.
func (s Settings) Validate() error {
	_, err := s.ServiceConfig()
	return err
}

// ServiceConfig checks the settings and returns the service configuration
// they describe (without a Logger). Its files are read and parsed now:
// the clients file and the embedded server's TLS files, or the agent's
// credential files for an external server. It creates, binds and dials
// nothing. It runs the resolvers in order (settings_resolve.go): the
// fixed policy, the spec, the noise, the process's paths, the agent's
// configuration with its caps, and the transport; the first error ends it.
func (s Settings) ServiceConfig() (ServiceConfig, error) {
	fixed, err := s.resolveFixed()
	if err != nil {
		return ServiceConfig{}, err
	}
	if len(s.Models) > 0 {
		if r := s.Cluster.Role; r != "" && r != RoleAll {
			return ServiceConfig{}, SettingsFields.Errorf("{Role} %s serves one learned policy: not with models", r)
		}
		return s.multiServiceConfig()
	}
	spec, pc, err := s.resolveSpec(fixed)
	if err != nil {
		return ServiceConfig{}, err
	}
	if pc, err = s.resolveNoise(pc); err != nil {
		return ServiceConfig{}, err
	}
	if err := s.checkProcess(); err != nil {
		return ServiceConfig{}, err
	}
	ac, err := s.resolveAgent(spec, pc, fixed)
	if err != nil {
		return ServiceConfig{}, err
	}
	if err := checkSessionLogFormat(s.SessionLogFormat, s.EnvSpec, ac.Spec); err != nil {
		return ServiceConfig{}, err
	}
	opts, sec, err := s.resolveTransport()
	if err != nil {
		return ServiceConfig{}, err
	}
	if err := s.Backups.Validate(); err != nil {
		return ServiceConfig{}, err
	}
	head, err := s.resolveHead()
	if err != nil {
		return ServiceConfig{}, err
	}
	cluster, err := s.Cluster.resolve(s.NATS, len(s.Models), fixed != nil)
	if err != nil {
		return ServiceConfig{}, err
	}
	return ServiceConfig{Agent: ac, DataDir: s.DataDir, InitLedger: s.Init, NATS: s.NATS, NATSListen: s.NATSListen, ConnectOptions: opts, NATSSecurity: sec,
		Prefix: s.Prefix, ActWorkers: s.ActWorkers, HTTPAddr: s.HTTPAddr, SessionLogDir: s.SessionLogDir, SessionLogFormat: s.SessionLogFormat, ExpectHead: head, Backups: s.Backups,
		ShutdownGrace: s.shutdownGrace(), EnvSpec: s.EnvSpec, Cluster: cluster}, nil
}

// NATSSecurityFiles are the embedded NATS server's security settings as an
// operator gives them (the nats-* settings of dprl agent, named beside each
// field); Load reads the files into a NATSSecurity. Its errors name fields
// as Settings' do.
type NATSSecurityFiles struct {
	// Clients is a clients file (nats-clients; stream.LoadClients).
	Clients string `flag:"nats-clients" usage:"client identities of the embedded NATS server (JSON, see examples/nats-clients.json): every connection must then authenticate, and a client may only send requests and read its own replies and the policy announcements"`
	// ServerCert and ServerKey are the server's certificate and key,
	// ClientCA the CA of mutual TLS (nats-tls-cert, nats-tls-key,
	// nats-tls-client-ca; stream.ServerTLS).
	ServerCert string `flag:"nats-tls-cert" usage:"certificate (PEM) of the embedded NATS server: TCP clients must use TLS"`
	ServerKey  string `flag:"nats-tls-key" usage:"key (PEM) of --nats-tls-cert"`
	ClientCA   string `flag:"nats-tls-client-ca" usage:"CA (PEM) that must have signed every client's certificate (mutual TLS)"`
	// MaxConn, MaxSubs and Insecure (nats-max-conn, nats-max-subs,
	// insecure-nats) are NATSSecurity's.
	MaxConn, MaxSubs int
	Insecure         bool `flag:"insecure-nats" usage:"allow the embedded server on a non-loopback address without --nats-clients or without TLS: anyone who reaches it can read observations and user ids, answer act requests and forge policy announcements"`
}

// Load returns the embedded server's security for listen, checked with
// NATSSecurity.Check. With an external server (embedded false) every field
// must be zero: such a server is secured by its own configuration.
func (f NATSSecurityFiles) Load(embedded bool, listen string) (NATSSecurity, error) {
	if !embedded {
		if f != (NATSSecurityFiles{}) {
			return NATSSecurity{}, SettingsFields.Errorf("{Clients}, {ServerTLS}, {Caps} and {Insecure} configure the embedded server; an external server is secured by its own configuration (docs/agent.md, Securing NATS)")
		}
		return NATSSecurity{}, nil
	}
	sec := NATSSecurity{MaxConn: f.MaxConn, MaxSubs: f.MaxSubs, Insecure: f.Insecure}
	if f.Clients != "" {
		cl, err := stream.LoadClients(f.Clients)
		if err != nil {
			return sec, SettingsFields.Errorf("{Clients}: %w", err)
		}
		sec.Clients = cl
	}
	switch {
	case f.ServerCert != "" || f.ServerKey != "":
		cfg, err := stream.ServerTLS(f.ServerCert, f.ServerKey, f.ClientCA)
		if err != nil {
			return sec, SettingsFields.Errorf("{ServerTLS}: %w", err)
		}
		sec.TLS = cfg
	case f.ClientCA != "":
		return sec, SettingsFields.Errorf("{ClientCA} needs {ServerCert} and {ServerKey}")
	}
	if err := sec.checkCaps(); err != nil {
		return sec, SettingsFields.Errorf("{Caps}: %w", err)
	}
	if err := sec.Check(listen); err != nil {
		return sec, SettingsFields.Errorf("%w: give {Clients} FILE and {ServerCert}/{ServerKey}, or {Insecure}", err)
	}
	return sec, nil
}

// userNoise derives the noise multiplier from UserEpsilon, the primary
// privacy setting, when neither Z nor SessionEpsilon is given: the smallest
// z (rounded up) at which k = max(maxUpdates, 1) updates compose to at most
// UserEpsilon at Delta. A user's updates are Gaussian mechanisms of
// multiplier z on the same data, whose k-fold composition is exactly the
// Gaussian mechanism of multiplier z / sqrt(k) (Dong, Roth and Su 2022,
// "Gaussian Differential Privacy", Corollary 3.3), evaluated with the
// analytic Gaussian mechanism (Balle and Wang 2018, Theorem 8); so a user
// who takes part in every update the caps allow reaches UserEpsilon and no
// more (with bandmf noise as well: UserSensitivity is sqrt(k) there too).
// With UserEpsilon alone (no update cap) k is 1: each user is
// learned from once at that epsilon. ok is false when the noise is given
// otherwise (or UserEpsilon is 0).
func (s Settings) userNoise(maxUpdates int) (z float64, ok bool, err error) {
	if !(s.UserEpsilon > 0) || math.IsInf(s.UserEpsilon, 0) || s.Z != 0 || s.SessionEpsilon != 0 { // an infinite cap is refused by the range checks
		return 0, false, nil
	}
	k := max(maxUpdates, 1)
	if z, err = accountant.Calibrate(accountant.Analytic{}, s.UserEpsilon, s.Delta, 1, k); err != nil {
		return 0, false, SettingsFields.Errorf("{UserEpsilon} %v over %d updates at {Delta} %v: %w", s.UserEpsilon, k, s.Delta, err)
	}
	return z, true, nil
}
