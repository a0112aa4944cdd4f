package agent

import (
	"errors"
	"fmt"
	"math"
	"time"

	"dprl/ledger"
	"dprl/ledger/accountant"
	"dprl/policy"
	"dprl/profile"
	"dprl/stream"
)

// Settings are an agent service's settings as an operator gives them, one
// field per setting of dprl agent: its flag --name, its environment
// variable DPRL_NAME and its config file key "name" set the same field (the
// name is given beside each field). ServiceConfig checks them and builds the
// ServiceConfig; its error messages name a setting by its flag, the
// operator's vocabulary, whichever source set it.
//
// A zero privacy parameter (Z, Clip, SessionEpsilon, K) means "the
// learner's default", so Explicit tells an explicit zero, which is an
// error, from an unset one: the agent has no non-private mode.
type Settings struct {
	// DataDir holds the ledger (data; required).
	DataDir string
	// ExpectHead, if not "", is the ledger head SEQ:HASH the data directory
	// must hold (expect-head; ServiceConfig.ExpectHead).
	ExpectHead string
	// EnvSpec names a simulator (env-spec): its spaces give the policy
	// spec, its profile the learner (profile.AgentDefaults) and the reward
	// bound. Without it ObsDim observations and Actions (>= 2) discrete
	// actions (obs-dim, actions) give the spec, with Table 3's control
	// learner (policy.DefaultControlConfig).
	EnvSpec         string
	ObsDim, Actions int
	// Z, Clip and K (z, clip, K) override the learner's noise multiplier,
	// clipping norm and users per update; 0: the learner's.
	Z, Clip float64
	K       int
	// SessionEpsilon (session-epsilon), if not 0, sets the noise multiplier
	// to the smallest one whose release is SessionEpsilon-DP per session at
	// Delta (analytic Gaussian), instead of Z.
	SessionEpsilon float64
	// Delta, UserEpsilon and MaxUpdatesPerUser (delta, user-epsilon,
	// max-updates-per-user) are Config's.
	Delta             float64
	UserEpsilon       float64
	MaxUpdatesPerUser int
	// The admission limits (max-open-sessions, max-steps, idle-timeout,
	// flush-timeout, max-session-lifetime, max-sessions-per-user,
	// max-sessions-per-connection, max-queued-per-user) are Config's.
	MaxOpenSessions, MaxStepsPerSession                            int
	IdleTimeout, FlushTimeout, MaxSessionLifetime                  time.Duration
	MaxSessionsPerUser, MaxSessionsPerConnection, MaxQueuedPerUser int
	// SessionMemoryMiB is Config.SessionMemoryBytes in MiB
	// (session-memory-mib), 1 to 2^30.
	SessionMemoryMiB int64
	// RewardLow and RewardHigh (reward-low, reward-high) override the
	// public reward bound; NaN: the EnvSpec simulator's, else Config's
	// default.
	RewardLow, RewardHigh float64
	// Seed seeds every random source (seed; Config.Seed); 0: secure.
	Seed uint64
	// NATS, NATSListen and Prefix (nats, nats-listen, prefix) are
	// ServiceConfig's.
	NATS, NATSListen, Prefix string
	// TLSCA, TLSCert, TLSKey, Creds and NKey (tls-ca, tls-cert, tls-key,
	// creds, nkey) are files of the agent's credentials for an external
	// NATS server (stream.WithTLS, WithCredentials, WithNKey).
	TLSCA, TLSCert, TLSKey, Creds, NKey string
	// Security secures the embedded server (the nats-* settings).
	Security NATSSecurityFiles
	// ActWorkers (act-workers), 0 to 1024, HTTPAddr (http) and
	// SessionLogDir (log-sessions) are ServiceConfig's.
	ActWorkers    int
	HTTPAddr      string
	SessionLogDir string
	// Explicit, if not nil, reports whether the setting of flag name was
	// given explicitly (z, clip, session-epsilon, K).
	Explicit func(name string) bool
}

// Validate reports the first problem ServiceConfig finds.
func (s Settings) Validate() error {
	_, err := s.ServiceConfig()
	return err
}

// ServiceConfig checks the settings and returns the service configuration
// they describe (without a Logger). Its files are read now: the clients
// file, the embedded server's TLS certificate and key.
func (s Settings) ServiceConfig() (ServiceConfig, error) {
	var spec policy.Spec
	var pc policy.Config
	switch {
	case s.EnvSpec != "":
		var err error
		if spec, pc, err = profile.AgentDefaults(s.EnvSpec); err != nil {
			return ServiceConfig{}, err
		}
	case s.ObsDim > 0 && s.Actions > 1:
		spec = policy.Spec{ObsDim: s.ObsDim, Kind: policy.ActionDiscrete, NumActions: s.Actions}
		pc = policy.DefaultControlConfig()
	default:
		return ServiceConfig{}, errors.New("give --env-spec NAME, or --obs-dim N and --actions N (>= 2)")
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"z", s.Z}, {"clip", s.Clip}, {"session-epsilon", s.SessionEpsilon}, {"K", float64(s.K)}} {
		if s.Explicit != nil && s.Explicit(p.name) && !(p.v > 0) {
			return ServiceConfig{}, fmt.Errorf("--%s %v: want > 0 (leave it unset for the profile's default; the agent has no non-private mode)", p.name, p.v)
		}
	}
	if s.Z != 0 {
		pc.DP.NoiseMultiplier = s.Z
	}
	if s.SessionEpsilon != 0 {
		switch {
		case s.Z != 0:
			return ServiceConfig{}, errors.New("--session-epsilon and --z both set: give the target epsilon or the noise multiplier, not both")
		case !(s.SessionEpsilon > 0) || math.IsInf(s.SessionEpsilon, 0):
			return ServiceConfig{}, fmt.Errorf("--session-epsilon %v: the target epsilon must be finite and > 0", s.SessionEpsilon)
		}
		// Each session takes part in one update: one Gaussian mechanism.
		z, err := accountant.Calibrate(accountant.Analytic{}, s.SessionEpsilon, s.Delta, 1, 1)
		if err != nil {
			return ServiceConfig{}, fmt.Errorf("--session-epsilon %v at --delta %v: %v", s.SessionEpsilon, s.Delta, err)
		}
		pc.DP.NoiseMultiplier = z
	}
	if s.Clip != 0 {
		pc.DP.ClipNorm = s.Clip
	}
	if s.K != 0 {
		pc.DP.UsersPerUpdate = s.K
	}
	if s.DataDir == "" {
		return ServiceConfig{}, errors.New("--data is required")
	}
	if s.ActWorkers < 0 || s.ActWorkers > 1024 {
		return ServiceConfig{}, fmt.Errorf("--act-workers %d: want 0 (twice the cores) to 1024", s.ActWorkers)
	}
	ac := DefaultConfig(spec, pc)
	ac.Delta, ac.UserEpsilon, ac.MaxUpdatesPerUser = s.Delta, s.UserEpsilon, s.MaxUpdatesPerUser
	ac.MaxOpenSessions, ac.MaxStepsPerSession, ac.IdleTimeout, ac.FlushTimeout = s.MaxOpenSessions, s.MaxStepsPerSession, s.IdleTimeout, s.FlushTimeout
	ac.MaxSessionsPerUser, ac.MaxSessionsPerConnection, ac.MaxQueuedPerUser = s.MaxSessionsPerUser, s.MaxSessionsPerConnection, s.MaxQueuedPerUser
	ac.MaxSessionLifetime = s.MaxSessionLifetime
	if s.SessionMemoryMiB < 1 || s.SessionMemoryMiB > 1<<30 {
		return ServiceConfig{}, fmt.Errorf("--session-memory-mib %d: want 1 to 2^30", s.SessionMemoryMiB)
	}
	ac.SessionMemoryBytes = s.SessionMemoryMiB << 20
	if lo, hi, ok := profile.RewardBound(s.EnvSpec); ok {
		ac.RewardLow, ac.RewardHigh = lo, hi
	}
	if !math.IsNaN(s.RewardLow) {
		ac.RewardLow = s.RewardLow
	}
	if !math.IsNaN(s.RewardHigh) {
		ac.RewardHigh = s.RewardHigh
	}
	ac.Seed = s.Seed
	if err := ac.Validate(); err != nil {
		return ServiceConfig{}, err
	}
	embedded := s.NATS == "" || s.NATS == "embedded"
	if embedded && (s.TLSCA != "" || s.TLSCert != "" || s.TLSKey != "" || s.Creds != "" || s.NKey != "") {
		return ServiceConfig{}, errors.New("--tls-ca, --tls-cert, --tls-key, --creds and --nkey are the agent's credentials for an external --nats server; with the embedded one the agent's identity is generated in memory (secure the server with --nats-clients and --nats-tls-*)")
	}
	var opts []stream.Option
	if s.TLSCA != "" || s.TLSCert != "" {
		opts = append(opts, stream.WithTLS(s.TLSCA, s.TLSCert, s.TLSKey))
	}
	if s.Creds != "" {
		opts = append(opts, stream.WithCredentials(s.Creds))
	}
	if s.NKey != "" {
		opts = append(opts, stream.WithNKey(s.NKey))
	}
	sec, err := s.Security.Load(embedded, s.NATSListen)
	if err != nil {
		return ServiceConfig{}, err
	}
	var head *ledger.HeadRef
	if s.ExpectHead != "" {
		h, err := ledger.ParseHeadRef(s.ExpectHead)
		if err != nil {
			return ServiceConfig{}, fmt.Errorf("--expect-head: %v", err)
		}
		head = &h
	}
	return ServiceConfig{Agent: ac, DataDir: s.DataDir, NATS: s.NATS, NATSListen: s.NATSListen, ConnectOptions: opts, NATSSecurity: sec,
		Prefix: s.Prefix, ActWorkers: s.ActWorkers, HTTPAddr: s.HTTPAddr, SessionLogDir: s.SessionLogDir, ExpectHead: head}, nil
}

// NATSSecurityFiles are the embedded NATS server's security settings as an
// operator gives them (the nats-* settings of dprl agent, named beside each
// field); Load reads the files into a NATSSecurity.
type NATSSecurityFiles struct {
	// Clients is a clients file (nats-clients; stream.LoadClients).
	Clients string
	// TLSCert and TLSKey are the server's certificate and key, TLSClientCA
	// the CA of mutual TLS (nats-tls-cert, nats-tls-key,
	// nats-tls-client-ca; stream.ServerTLS).
	TLSCert, TLSKey, TLSClientCA string
	// MaxConn, MaxSubs and Insecure (nats-max-conn, nats-max-subs,
	// insecure-nats) are NATSSecurity's.
	MaxConn, MaxSubs int
	Insecure         bool
}

// Load returns the embedded server's security for listen, checked with
// NATSSecurity.Check. With an external server (embedded false) every field
// must be zero: such a server is secured by its own configuration.
func (f NATSSecurityFiles) Load(embedded bool, listen string) (NATSSecurity, error) {
	if !embedded {
		if f != (NATSSecurityFiles{}) {
			return NATSSecurity{}, errors.New("--nats-clients, --nats-tls-*, --nats-max-* and --insecure-nats configure the embedded server; an external server is secured by its own configuration (README, Securing NATS)")
		}
		return NATSSecurity{}, nil
	}
	sec := NATSSecurity{MaxConn: f.MaxConn, MaxSubs: f.MaxSubs, Insecure: f.Insecure}
	if f.Clients != "" {
		cl, err := stream.LoadClients(f.Clients)
		if err != nil {
			return sec, err
		}
		sec.Clients = cl
	}
	switch {
	case f.TLSCert != "" || f.TLSKey != "":
		cfg, err := stream.ServerTLS(f.TLSCert, f.TLSKey, f.TLSClientCA)
		if err != nil {
			return sec, err
		}
		sec.TLS = cfg
	case f.TLSClientCA != "":
		return sec, errors.New("--nats-tls-client-ca needs --nats-tls-cert and --nats-tls-key")
	}
	if err := sec.Check(listen); err != nil {
		return sec, fmt.Errorf("%w: give --nats-clients FILE and --nats-tls-cert/--nats-tls-key, or --insecure-nats", err)
	}
	return sec, nil
}

// SessionEpsilon is the per-session epsilon at Delta of one update: one
// Gaussian mechanism of noise multiplier Policy.DP.NoiseMultiplier
// (analytic Gaussian mechanism, "Improving the Gaussian Mechanism for
// Differential Privacy: Analytical Calibration and Optimal Denoising",
// Theorem 8), the epsilon the agent charges each session.
func (c Config) SessionEpsilon() (float64, error) {
	return accountant.GaussianEpsilon(c.Policy.DP.NoiseMultiplier, c.Delta)
}
