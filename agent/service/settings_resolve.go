package service

import (
	"cmp"
	"math"
	"os"
	"time"

	"dprl/agent"
	"dprl/ledger"
	"dprl/ledger/accountant"
	"dprl/policy"
	"dprl/policy/lincb"
	"dprl/profile"
	"dprl/stream"
)

// The resolvers of Settings.ServiceConfig, in the order it calls them.
// Each checks one concern and returns its part of the configuration or the
// first error (a *fielderr.Error naming the fields at fault, or a checker's
// joined errors), so the errors and their order are ServiceConfig's.

// resolveFixed returns the ServePolicy snapshot, read and parsed (nil
// without ServePolicy); ServeNonPrivate needs ServePolicy.
func (s Settings) resolveFixed() (*agent.FixedPolicy, error) {
	if s.ServeNonPrivate && s.ServePolicy == "" {
		return nil, SettingsFields.Errorf("{ServeNonPrivate} applies with {ServePolicy} only")
	}
	if s.ServePolicy == "" {
		return nil, nil
	}
	return s.fixedPolicy()
}

// resolveSpec returns the policy spec and the learner's defaults: EnvSpec's
// (profile.AgentDefaults), or ObsDim and Actions' with Table 3's control
// learner; with a fixed policy, ObsDim alone and the snapshot's actions.
func (s Settings) resolveSpec(fixed *agent.FixedPolicy) (policy.Spec, policy.Config, error) {
	switch {
	case s.EnvSpec != "" && (s.given("ObsDim", s.ObsDim != 0) || s.given("Actions", s.Actions != 0)):
		return policy.Spec{}, policy.Config{}, SettingsFields.Errorf("{EnvSpec} %s and {ObsDim}/{Actions} both given: the simulator fixes the observation and action spaces; give one or the other", s.EnvSpec)
	case s.EnvSpec != "":
		return profile.AgentDefaults(s.EnvSpec)
	case fixed != nil && s.ObsDim != 0 && !s.given("Actions", s.Actions != 0):
		spec, err := s.fixedSpec(fixed)
		return spec, policy.DefaultControlConfig(), err
	case s.ObsDim != 0 || s.Actions != 0:
		spec, err := s.spaces()
		if err != nil {
			return policy.Spec{}, policy.Config{}, err
		}
		return spec, policy.DefaultControlConfig(), nil
	default:
		return policy.Spec{}, policy.Config{}, SettingsFields.Errorf("give {EnvSpec} NAME, or {ObsDim} N and {Actions} N (>= 2)")
	}
}

// fixedSpec returns the spec of ObsDim observations and the fixed policy's
// actions: a Q-network's discrete ones, or a SAC actor's continuous ones.
func (s Settings) fixedSpec(fixed *agent.FixedPolicy) (policy.Spec, error) {
	if s.ObsDim < 1 || s.ObsDim > MaxObsDim {
		return policy.Spec{}, SettingsFields.Errorf("{ObsDim} %d: want 1 to %d (an act request of that many values fits the wire protocol's 64 KiB)", s.ObsDim, MaxObsDim)
	}
	if fixed.Q != nil {
		return policy.Spec{ObsDim: s.ObsDim, Kind: policy.ActionDiscrete, NumActions: fixed.Q.Actions}, nil
	}
	return policy.Spec{ObsDim: s.ObsDim, Kind: policy.ActionContinuous, ActionDim: fixed.Actor.ActDim()}, nil
}

// resolveNoise returns pc with the operator's privacy parameters applied:
// the noise multiplier (Z or SessionEpsilon), the clipping norm, the noise
// kind and K.
func (s Settings) resolveNoise(pc policy.Config) (policy.Config, error) {
	if err := s.checkPrivacyParams(); err != nil {
		return pc, err
	}
	z, err := s.noiseMultiplier()
	if err != nil {
		return pc, err
	}
	if z != 0 {
		pc.DP.NoiseMultiplier = z
	}
	if s.Clip != 0 {
		pc.DP.ClipNorm = s.Clip
	}
	if pc.DP, err = pc.DP.WithOnlineNoise(s.Noise, s.Band); err != nil {
		return pc, err
	}
	if s.K != 0 {
		pc.DP.UsersPerUpdate = s.K
	}
	return pc, nil
}

// checkPrivacyParams refuses an explicit Z, Clip, SessionEpsilon or K that
// is not > 0 (the agent has no non-private mode) and an infinite Z, Clip
// or K.
func (s Settings) checkPrivacyParams() error {
	for _, p := range []struct {
		field string
		v     float64
	}{{"Z", s.Z}, {"Clip", s.Clip}, {"SessionEpsilon", s.SessionEpsilon}, {"K", float64(s.K)}} {
		if s.Explicit != nil && s.Explicit(p.field) && !(p.v > 0) {
			return SettingsFields.Errorf("{"+p.field+"} %v: want > 0 (leave it unset for the profile's default; the agent has no non-private mode)", p.v)
		}
		if math.IsInf(p.v, 0) && p.field != "SessionEpsilon" { // its own message in noiseMultiplier
			return SettingsFields.Errorf("{"+p.field+"} %v: want a finite value", p.v)
		}
	}
	return nil
}

// noiseMultiplier returns the noise multiplier the operator set: Z, or the
// one SessionEpsilon calibrates; 0 for the learner's.
func (s Settings) noiseMultiplier() (float64, error) {
	if s.SessionEpsilon == 0 {
		return s.Z, nil
	}
	switch {
	case s.Z != 0:
		return 0, SettingsFields.Errorf("{SessionEpsilon} and {Z} both set: give the target epsilon or the noise multiplier, not both")
	case !(s.SessionEpsilon > 0) || math.IsInf(s.SessionEpsilon, 0):
		return 0, SettingsFields.Errorf("{SessionEpsilon} %v: the target epsilon must be finite and > 0", s.SessionEpsilon)
	}
	// Each session takes part in one update: one Gaussian mechanism.
	z, err := accountant.Calibrate(accountant.Analytic{}, s.SessionEpsilon, s.Delta, 1, 1)
	if err != nil {
		return 0, SettingsFields.Errorf("{SessionEpsilon} %v at {Delta} %v: %w", s.SessionEpsilon, s.Delta, err)
	}
	return z, nil
}

// checkProcess checks the process's own settings: DataDir is given, it and
// SessionLogDir are not files, a DSJSON SessionLogFormat comes with
// SessionLogDir, and ActWorkers is in range.
func (s Settings) checkProcess() error {
	if s.DataDir == "" {
		return SettingsFields.Errorf("{DataDir} is required")
	}
	for _, d := range []struct{ field, path string }{{"DataDir", s.DataDir}, {"SessionLogDir", s.SessionLogDir}} {
		if fi, err := os.Stat(d.path); d.path != "" && err == nil && !fi.IsDir() {
			return SettingsFields.Errorf("{%s} %s is a file: want a directory (created if missing)", d.field, d.path)
		}
	}
	if s.SessionLogFormat == SessionLogDSJSON && s.SessionLogDir == "" {
		return SettingsFields.Errorf("{SessionLogFormat} %s without {SessionLogDir}: there is no session log to write", s.SessionLogFormat)
	}
	if s.ActWorkers < 0 || s.ActWorkers > 1024 {
		return SettingsFields.Errorf("{ActWorkers} %d: want 0 (twice the cores) to 1024", s.ActWorkers)
	}
	return nil
}

// resolveAgent returns the agent's configuration of spec and pc: the
// per-user caps, the admission limits, the reward bound, the seed and the
// fixed policy, checked with Config.Validate.
func (s Settings) resolveAgent(spec policy.Spec, pc policy.Config, fixed *agent.FixedPolicy) (agent.Config, error) {
	ac, err := s.resolveCaps(agent.DefaultConfig(spec, pc))
	if err != nil {
		return agent.Config{}, err
	}
	if ac, err = s.resolveLimits(ac); err != nil {
		return agent.Config{}, err
	}
	ac.RewardLow, ac.RewardHigh = s.rewardBound(ac.RewardLow, ac.RewardHigh)
	ac.Seed = s.Seed
	if fixed != nil {
		if err := s.checkFixed(fixed, spec); err != nil {
			return agent.Config{}, err
		}
		ac.Fixed = fixed
	}
	if ac.LinCB, err = s.linCB(); err != nil {
		return agent.Config{}, err
	}
	if ac.AverageDecay, err = s.average(ac); err != nil {
		return agent.Config{}, err
	}
	if err := ac.Validate(); err != nil {
		return agent.Config{}, err
	}
	return ac, nil
}

// resolveCaps returns ac with the per-user caps (Delta, UserEpsilon,
// MaxUpdatesPerUser; DefaultMaxUpdatesPerUser when neither cap is set
// explicitly) and the noise multiplier UserEpsilon calibrates (userNoise).
func (s Settings) resolveCaps(ac agent.Config) (agent.Config, error) {
	ac.Delta, ac.UserEpsilon, ac.MaxUpdatesPerUser = s.Delta, s.UserEpsilon, s.MaxUpdatesPerUser
	if s.UserEpsilon == 0 && s.MaxUpdatesPerUser == 0 && (s.Explicit == nil || !s.Explicit("UserEpsilon") && !s.Explicit("MaxUpdatesPerUser")) {
		ac.MaxUpdatesPerUser = DefaultMaxUpdatesPerUser
	}
	z, ok, err := s.userNoise(ac.MaxUpdatesPerUser)
	if err != nil {
		return agent.Config{}, err
	}
	if ok {
		ac.Policy.DP.NoiseMultiplier = z
	}
	return ac, nil
}

// resolveLimits returns ac with the admission limits and the session
// memory budget (SessionMemoryMiB, 1 to 2^30).
func (s Settings) resolveLimits(ac agent.Config) (agent.Config, error) {
	ac.MaxOpenSessions, ac.MaxStepsPerSession, ac.IdleTimeout, ac.FlushTimeout = s.MaxOpenSessions, s.MaxStepsPerSession, s.IdleTimeout, s.FlushTimeout
	ac.MaxSessionsPerUser, ac.MaxSessionsPerConnection, ac.MaxQueuedPerUser = s.MaxSessionsPerUser, s.MaxSessionsPerConnection, s.MaxQueuedPerUser
	ac.MaxSessionLifetime = s.MaxSessionLifetime
	if s.SessionMemoryMiB < 1 || s.SessionMemoryMiB > 1<<30 {
		return agent.Config{}, SettingsFields.Errorf("{SessionMemoryMiB} %d: want 1 to 2^30", s.SessionMemoryMiB)
	}
	ac.SessionMemoryBytes = s.SessionMemoryMiB << 20
	return ac, nil
}

// rewardBound returns the reward bound in force: RewardLow and RewardHigh
// where they are not NaN, else the EnvSpec simulator's, else lo and hi
// (Config's default). Config.Validate checks it.
func (s Settings) rewardBound(lo, hi float64) (float64, float64) {
	if plo, phi, ok := profile.RewardBound(s.EnvSpec); ok {
		lo, hi = plo, phi
	}
	if !math.IsNaN(s.RewardLow) {
		lo = s.RewardLow
	}
	if !math.IsNaN(s.RewardHigh) {
		hi = s.RewardHigh
	}
	return lo, hi
}

// embedded reports whether the agent runs the embedded NATS server (NATS
// "" or "embedded").
func (s Settings) embedded() bool {
	return s.NATS == "" || s.NATS == "embedded"
}

// resolveTransport checks the NATS settings and the HTTP address
// (checkTransport) and returns the agent's connect options for an external
// server and the embedded server's security, its caps checked against the
// act workers.
func (s Settings) resolveTransport() ([]stream.Option, NATSSecurity, error) {
	embedded := s.embedded()
	if !embedded && s.Identity != "" && !stream.ValidIdentityName(s.Identity) {
		return nil, NATSSecurity{}, SettingsFields.Errorf("{Identity} %q: want 1 to 64 letters, digits, '-' or '_'", s.Identity)
	}
	if embedded && s.Identity != "" {
		return nil, NATSSecurity{}, SettingsFields.Errorf("{Identity} names the agent's identity on an external {NATS} server")
	}
	if embedded && (s.TLSCA != "" || s.TLSCert != "" || s.TLSKey != "" || s.Creds != "" || s.NKey != "") {
		return nil, NATSSecurity{}, SettingsFields.Errorf("{TLSCA}, {TLSCert}, {TLSKey}, {Creds} and {NKey} are the agent's credentials for an external {NATS} server; with the embedded one the agent's identity is generated in memory (secure the server with {Clients} and {ServerTLS})")
	}
	if err := s.checkTransport(embedded); err != nil {
		return nil, NATSSecurity{}, err
	}
	opts := s.connectOptions()
	sec, err := s.Security.Load(embedded, s.NATSListen)
	if err != nil {
		return nil, NATSSecurity{}, err
	}
	if embedded {
		if _, _, err := sec.caps(cmp.Or(s.ActWorkers, DefaultActWorkers())); err != nil {
			return nil, NATSSecurity{}, SettingsFields.Errorf("{Caps}: %w", err)
		}
	}
	return opts, sec, nil
}

// connectOptions are the agent's credentials for an external server:
// TLSCA, TLSCert and TLSKey, Creds and NKey as stream options.
func (s Settings) connectOptions() []stream.Option {
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
	if s.Identity != "" {
		opts = append(opts, stream.WithInbox(s.Identity))
	}
	return opts
}

// resolveHead returns the ledger head ExpectHead names (nil without one).
func (s Settings) resolveHead() (*ledger.HeadRef, error) {
	if s.ExpectHead == "" {
		return nil, nil
	}
	h, err := ledger.ParseHeadRef(s.ExpectHead)
	if err != nil {
		return nil, SettingsFields.Errorf("{ExpectHead}: %w", err)
	}
	return &h, nil
}

// shutdownGrace is ServiceConfig.ShutdownGrace of ShutdownGrace: 0 or less
// is none (-1), as ServiceConfig's 0 is its default.
func (s Settings) shutdownGrace() time.Duration {
	if s.ShutdownGrace <= 0 {
		return -1 // none: ServiceConfig's 0 is its default
	}
	return s.ShutdownGrace
}

// average returns the decay of the served average: Average if given, else
// the EnvSpec profile's for a learning DPPG agent, else 0.
func (s Settings) average(ac agent.Config) (float64, error) {
	if s.given("Average", s.Average != 0) {
		if !(s.Average >= 0 && s.Average < 1) {
			return 0, SettingsFields.Errorf("{Average} %v: want a decay in [0, 1) (0: serve the last release)", s.Average)
		}
		if s.Average > 0 && (ac.LinCB != nil || ac.Fixed != nil) {
			return 0, SettingsFields.Errorf("{Average} applies to a learning DPPG agent, not with {Learner} lincb or {ServePolicy}")
		}
		return s.Average, nil
	}
	if s.EnvSpec == "" || ac.LinCB != nil || ac.Fixed != nil {
		return 0, nil
	}
	p, err := profile.Get(s.EnvSpec)
	if err != nil {
		return 0, err
	}
	return p.Average, nil
}

// linCB returns the linear contextual bandit's settings (nil for dppg):
// the feature clip FeatureClip, or EnvSpec's profile's.
func (s Settings) linCB() (*lincb.Config, error) {
	switch s.Learner {
	case "", "dppg":
		if s.given("FeatureClip", s.FeatureClip != 0) {
			return nil, SettingsFields.Errorf("{FeatureClip} applies with {Learner} lincb only")
		}
		return nil, nil
	case "lincb":
	default:
		return nil, SettingsFields.Errorf("{Learner} %q: want dppg or lincb", s.Learner)
	}
	clip := s.FeatureClip
	if clip == 0 && s.EnvSpec != "" {
		p, err := profile.Get(s.EnvSpec)
		if err != nil {
			return nil, err
		}
		clip = p.FeatureClip
	}
	if clip == 0 {
		return nil, SettingsFields.Errorf("{Learner} lincb needs {FeatureClip}, the public L2 bound of an observation (the simulator of {EnvSpec} states none)")
	}
	if !(clip > 0) || math.IsInf(clip, 0) {
		return nil, SettingsFields.Errorf("{FeatureClip} %v: want finite and > 0", clip)
	}
	c := lincb.DefaultConfig(0, 0, clip)
	return &c, nil
}
