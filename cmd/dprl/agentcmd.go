package main

import (
	"dprl/ledger"

	"context"
	"fmt"
	"math"
	"os"
	"time"

	"dprl/agent"
	"dprl/ledger/accountant"
	"dprl/policy"
	"dprl/profile"
	"dprl/stream"

	"github.com/spf13/cobra"
)

// envProfile returns the policy spec of a simulator and the learner
// configuration measured for it (package profile): the same defaults as dprl
// train before its correlated-noise defaults.
func envProfile(name string) (policy.Spec, policy.Config, error) {
	p, err := profile.Get(name)
	if err != nil {
		return policy.Spec{}, policy.Config{}, usageError{err}
	}
	return p.Spec, p.Learner, nil
}

// envRewardBound is the public reward range of a simulator (package
// profile), read from its specification, never from data: the agent clips
// each reward to it on arrival. ok is false for a name without one.
func envRewardBound(name string) (lo, hi float64, ok bool) {
	p, err := profile.Get(name)
	if err != nil {
		return 0, 0, false
	}
	return p.RewardLow, p.RewardHigh, true
}

// agentFlags are the options of dprl agent (and, in part, dprl demo).
type agentFlags struct {
	config, data, envSpec, natsURL, natsListen, prefix, httpAddr  string
	logSessions                                                   string
	tlsCA, tlsCert, tlsKey, creds, nkey                           string
	obsDim, actions, k, maxUpdates, maxOpen, maxSteps, actWorkers int
	z, clip, delta, userEps, sessionEps                           float64
	idle, flush                                                   time.Duration
	// Admission limits and the reward bound.
	maxPerUser, maxPerConn, maxQueuedPerUser int
	sessionMemoryMiB                         int64
	lifetime                                 time.Duration
	rewardLow, rewardHigh                    float64
	seed                                     uint64
	checkConfig                              bool
	natsSec                                  natsSecurityFlags
	expectHead                               string
	// changed reports whether a flag was given (on the command line, in
	// the environment or in the config file): an explicit zero privacy
	// parameter is an error, never "the default".
	changed func(name string) bool
}

func (f *agentFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&f.config, "config", "", "JSON config file: an object of flag names to values (flags and DPRL_* environment variables override it)")
	fl.BoolVar(&f.checkConfig, "check-config", false, "validate the configuration and exit")
	fl.StringVar(&f.expectHead, "expect-head", "", "refuse to start unless the ledger's head is SEQ:HASH (as printed by dprl ledger head and recorded outside the data directory): catches a restored older copy of the whole directory")
	fl.StringVar(&f.data, "data", "", "data directory holding the ledger (required)")
	fl.StringVar(&f.envSpec, "env-spec", "", "take the observation/action spaces from this simulator and the learner defaults measured for it, as dprl train (see dprl sims list, policy/REPRODUCE.md)")
	fl.IntVar(&f.obsDim, "obs-dim", 0, "observation length (without --env-spec)")
	fl.IntVar(&f.actions, "actions", 0, "number of discrete actions (without --env-spec)")
	fl.StringVar(&f.natsURL, "nats", "embedded", "\"embedded\" to run NATS in-process, or the URL of an external server")
	fl.StringVar(&f.natsListen, "nats-listen", "127.0.0.1:4222", "host:port of the embedded NATS server (port 0 picks one); off loopback it needs --nats-clients and --nats-tls-cert/--nats-tls-key, or --insecure-nats")
	fl.StringVar(&f.prefix, "prefix", stream.DefaultPrefix, "subject prefix of the wire protocol")
	fl.StringVar(&f.tlsCA, "tls-ca", "", "CA file to verify an external NATS server")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "client certificate for an external NATS server")
	fl.StringVar(&f.tlsKey, "tls-key", "", "client key for an external NATS server")
	fl.StringVar(&f.creds, "creds", "", "NATS credentials file of the agent (external server)")
	fl.StringVar(&f.nkey, "nkey", "", "nkey seed file of the agent's identity (external server)")
	fl.StringVar(&f.logSessions, "log-sessions", "", "write every closed session to rotating dprl.sessions.v1 files in this directory (raw user data: protect it)")
	fl.StringVar(&f.httpAddr, "http", "", "address of /healthz, /readyz, /metrics and /status (e.g. 127.0.0.1:9090)")
	fl.IntVar(&f.actWorkers, "act-workers", 0, "act requests handled concurrently (subscriptions in the queue group); 0: one per two cores")
	fl.Float64Var(&f.z, "z", 0, "noise multiplier z (default: the profile's)")
	fl.Float64Var(&f.sessionEps, "session-epsilon", 0, "target per-session epsilon at --delta: z is set to the smallest noise multiplier reaching it (analytic Gaussian; instead of --z); 0: off")
	fl.Float64Var(&f.clip, "clip", 0, "clipping norm S of a user's local update (default: the profile's)")
	fl.IntVar(&f.k, "K", 0, "sessions per update K (default: the profile's)")
	fl.Float64Var(&f.delta, "delta", 1e-5, "delta of the per-session and per-user guarantees")
	fl.Float64Var(&f.userEps, "user-epsilon", 0, "cap on a user's composed epsilon; 0: no cap")
	fl.IntVar(&f.maxUpdates, "max-updates-per-user", 0, "cap on the updates a user takes part in; 0: no cap")
	fl.IntVar(&f.maxOpen, "max-open-sessions", 100000, "limit of concurrently open sessions")
	fl.IntVar(&f.maxSteps, "max-steps", 10000, "limit of steps per session")
	fl.DurationVar(&f.idle, "idle-timeout", 5*time.Minute, "close a silent session as truncated after this long")
	fl.DurationVar(&f.flush, "flush-timeout", time.Minute, "release a partial batch (still divided by K) after this long")
	fl.IntVar(&f.maxPerUser, "max-sessions-per-user", 16, "limit of one user id's concurrently open sessions")
	fl.IntVar(&f.maxPerConn, "max-sessions-per-connection", 10000, "limit of concurrently open sessions opened by one NATS connection (its inbox prefix; raise it for a gateway multiplexing many users)")
	fl.Int64Var(&f.sessionMemoryMiB, "session-memory-mib", 1024, "memory budget of the sessions' steps (open sessions and finished ones waiting for an update), in MiB")
	fl.IntVar(&f.maxQueuedPerUser, "max-queued-per-user", 2, "limit of one user's finished sessions waiting for an update")
	fl.DurationVar(&f.lifetime, "max-session-lifetime", time.Hour, "close a session as truncated this long after it opened, however active")
	fl.Float64Var(&f.rewardLow, "reward-low", math.NaN(), "public lower bound of a reward: each reward is clipped to [--reward-low, --reward-high] (default: the --env-spec simulator's, else -1e6)")
	fl.Float64Var(&f.rewardHigh, "reward-high", math.NaN(), "public upper bound of a reward (default: the --env-spec simulator's, else 1e6)")
	fl.Uint64Var(&f.seed, "seed", 0, "seed every random source for a repeatable simulation (recorded as seeded in the ledger); 0: secure")
	f.natsSec.register(fl)
}

// serviceConfig turns the flags into a service configuration.
func (f *agentFlags) serviceConfig(a *app) (agent.ServiceConfig, error) {
	var spec policy.Spec
	var pc policy.Config
	switch {
	case f.envSpec != "":
		var err error
		if spec, pc, err = envProfile(f.envSpec); err != nil {
			return agent.ServiceConfig{}, err
		}
	case f.obsDim > 0 && f.actions > 1:
		spec = policy.Spec{ObsDim: f.obsDim, Kind: policy.ActionDiscrete, NumActions: f.actions}
		pc = policy.DefaultControlConfig()
	default:
		return agent.ServiceConfig{}, usagef("give --env-spec NAME, or --obs-dim N and --actions N (>= 2)")
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"z", f.z}, {"clip", f.clip}, {"session-epsilon", f.sessionEps}, {"K", float64(f.k)}} {
		if f.changed != nil && f.changed(p.name) && !(p.v > 0) {
			return agent.ServiceConfig{}, usagef("--%s %v: want > 0 (leave it unset for the profile's default; the agent has no non-private mode)", p.name, p.v)
		}
	}
	if f.z != 0 {
		pc.DP.NoiseMultiplier = f.z
	}
	if f.sessionEps != 0 {
		switch {
		case f.z != 0:
			return agent.ServiceConfig{}, usagef("--session-epsilon and --z both set: give the target epsilon or the noise multiplier, not both")
		case !(f.sessionEps > 0) || math.IsInf(f.sessionEps, 0):
			return agent.ServiceConfig{}, usagef("--session-epsilon %v: the target epsilon must be finite and > 0", f.sessionEps)
		}
		// Each session takes part in one update: one Gaussian mechanism.
		z, err := accountant.Calibrate(accountant.Analytic{}, f.sessionEps, f.delta, 1, 1)
		if err != nil {
			return agent.ServiceConfig{}, usagef("--session-epsilon %v at --delta %v: %v", f.sessionEps, f.delta, err)
		}
		pc.DP.NoiseMultiplier = z
	}
	if f.clip != 0 {
		pc.DP.ClipNorm = f.clip
	}
	if f.k != 0 {
		pc.DP.UsersPerUpdate = f.k
	}
	if f.data == "" {
		return agent.ServiceConfig{}, usagef("--data is required")
	}
	if f.actWorkers < 0 || f.actWorkers > 1024 {
		return agent.ServiceConfig{}, usagef("--act-workers %d: want 0 (twice the cores) to 1024", f.actWorkers)
	}
	ac := agent.DefaultConfig(spec, pc)
	ac.Delta, ac.UserEpsilon, ac.MaxUpdatesPerUser = f.delta, f.userEps, f.maxUpdates
	ac.MaxOpenSessions, ac.MaxStepsPerSession, ac.IdleTimeout, ac.FlushTimeout = f.maxOpen, f.maxSteps, f.idle, f.flush
	ac.MaxSessionsPerUser, ac.MaxSessionsPerConnection, ac.MaxQueuedPerUser = f.maxPerUser, f.maxPerConn, f.maxQueuedPerUser
	ac.MaxSessionLifetime = f.lifetime
	if f.sessionMemoryMiB < 1 || f.sessionMemoryMiB > 1<<30 {
		return agent.ServiceConfig{}, usagef("--session-memory-mib %d: want 1 to 2^30", f.sessionMemoryMiB)
	}
	ac.SessionMemoryBytes = f.sessionMemoryMiB << 20
	if lo, hi, ok := envRewardBound(f.envSpec); ok {
		ac.RewardLow, ac.RewardHigh = lo, hi
	}
	if !math.IsNaN(f.rewardLow) {
		ac.RewardLow = f.rewardLow
	}
	if !math.IsNaN(f.rewardHigh) {
		ac.RewardHigh = f.rewardHigh
	}
	ac.Seed = f.seed
	if err := ac.Validate(); err != nil {
		return agent.ServiceConfig{}, usageError{err}
	}
	var opts []stream.Option
	if embedded := f.natsURL == "" || f.natsURL == "embedded"; embedded && (f.tlsCA != "" || f.tlsCert != "" || f.tlsKey != "" || f.creds != "" || f.nkey != "") {
		return agent.ServiceConfig{}, usagef("--tls-ca, --tls-cert, --tls-key, --creds and --nkey are the agent's credentials for an external --nats server; with the embedded one the agent's identity is generated in memory (secure the server with --nats-clients and --nats-tls-*)")
	}
	if f.tlsCA != "" || f.tlsCert != "" {
		opts = append(opts, stream.WithTLS(f.tlsCA, f.tlsCert, f.tlsKey))
	}
	if f.creds != "" {
		opts = append(opts, stream.WithCredentials(f.creds))
	}
	if f.nkey != "" {
		opts = append(opts, stream.WithNKey(f.nkey))
	}
	sec, err := f.natsSec.security(f.natsURL == "" || f.natsURL == "embedded", f.natsListen)
	if err != nil {
		return agent.ServiceConfig{}, err
	}
	var head *ledger.HeadRef
	if f.expectHead != "" {
		h, err := ledger.ParseHeadRef(f.expectHead)
		if err != nil {
			return agent.ServiceConfig{}, usagef("--expect-head: %v", err)
		}
		head = &h
	}
	return agent.ServiceConfig{Agent: ac, DataDir: f.data, NATS: f.natsURL, NATSListen: f.natsListen, ConnectOptions: opts, NATSSecurity: sec,
		Prefix: f.prefix, ActWorkers: f.actWorkers, HTTPAddr: f.httpAddr, SessionLogDir: f.logSessions, Logger: a.log, ExpectHead: head}, nil
}

func newAgentCmd(a *app) *cobra.Command {
	var f agentFlags
	c := &cobra.Command{
		Use:   "agent --data DIR (--env-spec NAME | --obs-dim N --actions N) [flags]",
		Short: "Run the long-running DP learning agent on NATS",
		Long: `Runs the agent: it serves actions to user sessions over NATS (wire protocol
v1: <prefix>.v1.act, <prefix>.v1.end, <prefix>.v1.policy), and every K finished
sessions applies one DP-PPO update, written to the ledger in the data directory
in one synced batch with its privacy cost before it is served.

By default NATS runs embedded on 127.0.0.1:4222, open (no authentication:
any process on this host can read observations and user ids), which is why
it listens on loopback only. To serve other hosts give client identities
(--nats-clients) and TLS (--nats-tls-cert, --nats-tls-key, optionally
--nats-tls-client-ca): the agent refuses a non-loopback --nats-listen without
them unless --insecure-nats. --nats URL uses an external server (with
--tls-*, --creds or --nkey as needed), secured by its own configuration
(README, Securing NATS; dprl agent nkey makes a client's key).

Every option can also come from the environment (DPRL_<FLAG>, e.g.
DPRL_USER_EPSILON=8) or a JSON config file (--config; see examples/agent.json);
flags win over the environment, which wins over the file. SIGINT/SIGTERM stop it gracefully: new requests are refused,
subscriptions drain, an update in flight is finished or not written at all.`,
		Example: `  dprl agent --data ./dprl-data --env-spec cartpole --http 127.0.0.1:9090
  dprl agent --config examples/agent.json --check-config`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := applyConfigSources(c, f.config, os.Environ()); err != nil {
				return err
			}
			f.changed = c.Flags().Changed
			sc, err := f.serviceConfig(a)
			if err != nil {
				return err
			}
			eps, _ := agentEpsilon(sc.Agent)
			if f.checkConfig {
				fmt.Fprintf(a.stdout, "configuration OK: %s, K = %d, z = %g, S = %g, per-session epsilon %.4g at delta %g; rewards clipped to [%g, %g]\n",
					describeSpec(sc.Agent.Spec), sc.Agent.Policy.DP.UsersPerUpdate, sc.Agent.Policy.DP.NoiseMultiplier, sc.Agent.Policy.DP.ClipNorm, eps, sc.Agent.Delta,
					sc.Agent.RewardLow, sc.Agent.RewardHigh)
				return nil
			}
			return runAgent(c.Context(), a, sc, eps)
		},
	}
	f.register(c)
	c.AddCommand(newAgentNKeyCmd(a))
	return c
}

func describeSpec(s policy.Spec) string {
	if s.Kind == policy.ActionDiscrete {
		return fmt.Sprintf("obs dim %d, %d actions", s.ObsDim, s.NumActions)
	}
	return fmt.Sprintf("obs dim %d, action dim %d", s.ObsDim, s.ActionDim)
}

func agentEpsilon(c agent.Config) (float64, error) {
	return accountantEpsilon(c.Policy.DP.NoiseMultiplier, c.Delta)
}

func runAgent(ctx context.Context, a *app, sc agent.ServiceConfig, eps float64) error {
	svc, err := agent.StartService(ctx, sc)
	if err != nil {
		return err
	}
	a.log.Info().Str("nats", svc.NATSURL()).Str("http", svc.OpsAddr()).Uint64("version", svc.Agent().Version()).
		Float64("epsilon_per_session", eps).Float64("delta", sc.Agent.Delta).Msg("agent serving")
	fmt.Fprintf(a.stderr, "dprl agent: serving on %s; per-session epsilon %.4g at delta %g (analytic Gaussian, z = %g)\n",
		svc.NATSURL(), eps, sc.Agent.Delta, sc.Agent.Policy.DP.NoiseMultiplier)
	if m := svc.NATSSecurityMode(); m != "" {
		fmt.Fprintf(a.stderr, "dprl agent: embedded NATS %s\n", m)
	}
	select {
	case <-ctx.Done():
	case <-svc.Done():
	}
	runErr := svc.Err()
	err = svc.Close()
	a.log.Info().Msg("agent stopped")
	if runErr != nil {
		return runErr
	}
	return err
}
