package agent

import (
	"errors"
	"fmt"
	"math"
	"time"

	"dprl/internal/fielderr"
	"dprl/policy"
	"dprl/policy/lincb"
)

// Config is the agent's configuration. DefaultConfig fills the operational
// limits; the privacy parameters (z, S, K, delta, caps) have no defaults that
// hide a zero: they come from the policy config and must validate.
type Config struct {
	// Spec is the observation and action shape; fixed at the first start.
	Spec policy.Spec
	// Policy holds the PPO and DP settings (Table 3 for the paper's tasks).
	Policy policy.Config
	// Delta is the per-session (and per-user) delta, 0 < Delta < 1.
	Delta float64
	// UserEpsilon caps each user's composed epsilon at Delta; a user whose
	// next update would pass it is still served but no longer learned from.
	// 0 disables the cap.
	UserEpsilon float64
	// MaxUpdatesPerUser caps the updates a user takes part in; 0: no cap.
	MaxUpdatesPerUser int
	// MaxOpenSessions bounds concurrently open sessions. Default 100000.
	MaxOpenSessions int
	// MaxSessionsPerUser bounds the sessions one user id holds open at once
	// (anonymous sessions have no user and are not counted here). Default 16.
	MaxSessionsPerUser int
	// MaxSessionsPerConnection bounds the sessions opened by one
	// connection that are open at once, the connection being what the
	// request's reply subject shows (stream.ReplyOrigin: the client's inbox
	// prefix). A client can forge that identity, so this bounds accidental
	// and naive floods; MaxOpenSessions and SessionMemoryBytes bound all
	// clients together. A gateway that multiplexes many users over one
	// connection needs it raised. In-process calls are not counted.
	// Default 10000.
	MaxSessionsPerConnection int
	// MaxStepsPerSession bounds a session's length; at the limit the
	// session is closed as truncated. Default 10000.
	MaxStepsPerSession int
	// SessionMemoryBytes is the memory budget of the sessions' steps: the
	// open sessions and the finished ones waiting for an update. Each
	// session is charged its fixed overhead and the capacity of its step
	// storage (observations, actions, log-probabilities, rewards: 8 bytes
	// each), before the storage is allocated; storage doubles as a session
	// grows, up to MaxStepsPerSession. Past the budget a new session is
	// refused and a session that needs more storage is closed as truncated,
	// both with the memory_limit code. Default 1 GiB.
	SessionMemoryBytes int64
	// MaxQueuedPerUser bounds a user's finished sessions waiting for an
	// update (an update takes at most one session per user); more are set
	// aside as "user queue full". Anonymous sessions queue per connection,
	// up to K each (several may share an update). All queues together hold
	// at most 4K + 1024 sessions ("learner queue full"). Batches are formed
	// round-robin over the queues, so that one user's flood of sessions
	// takes at most one place per update and K distinct users can always
	// fill one. Default 2.
	MaxQueuedPerUser int
	// IdleTimeout closes a session that sent nothing for this long, as
	// truncated. Default 5 minutes.
	IdleTimeout time.Duration
	// MaxSessionLifetime closes a session this long after it opened, as
	// truncated, however active it is: a client trickling one act per idle
	// timeout cannot keep sessions open for ever. Default 1 hour.
	MaxSessionLifetime time.Duration
	// RewardLow and RewardHigh are the public bound of a reward: each reward
	// is clipped to [RewardLow, RewardHigh] on arrival, before it is stored,
	// learned from or logged, so one extreme but finite reward (1.8e308)
	// cannot overflow a return. State it from the environment's
	// specification, never from the data (dprl agent --env sets it per
	// simulator). It bounds values only: the privacy guarantee comes from
	// clipping each local update to S, whatever the rewards. Finite, low <
	// high, and max(|low|, |high|) x MaxStepsPerSession <= 1e150, so that a
	// session's return and its square stay finite. Default [-1e6, 1e6].
	RewardLow, RewardHigh float64
	// FlushTimeout releases a partial batch (still divided by K) when its
	// oldest session has waited this long. Default 1 minute.
	FlushTimeout time.Duration
	// MaxStaleness is how many versions behind the current one a finished
	// session may be and still be learned from (its behaviour
	// log-probabilities make the update importance-weighted). 0 uses only
	// sessions served by the current version. Default 1.
	MaxStaleness uint64
	// Workers is the number of local-update workers; 0 means GOMAXPROCS.
	Workers int
	// Seed, when non-zero, seeds every random source (noise included) for a
	// repeatable simulation; the ledger records the run as seeded. 0 uses
	// the operating system's secure generator.
	Seed uint64
	// Fixed, when set, is a released policy to serve instead of learning
	// (dprl agent --serve-policy; see FixedPolicy): the agent serves its
	// actions, logs its sessions, and makes no update, spends no budget
	// and writes nothing to the ledger. Spec must have continuous actions
	// of the actor's dimensions. The learner's settings (Policy, Delta,
	// the per-user caps, MaxQueuedPerUser, FlushTimeout, MaxStaleness)
	// do not apply.
	Fixed *FixedPolicy
	// LinCB, when set, makes the agent learn a private linear contextual
	// bandit (package lincb) instead of DPPG: each update's K sessions
	// contribute the sufficient statistics of their first decision (its
	// observation, action and reward), released as one block with
	// Gaussian noise of multiplier Policy.DP.NoiseMultiplier, and every
	// version is served by inverse-gap weighting over the released model.
	// The agent sets its Actions and Dim (Spec's: discrete actions), its
	// reward range (RewardLow, RewardHigh), its noise multiplier and its
	// first block (FirstBlock: K sessions); its blocks then grow by
	// Growth up to MaxBlock (0: 16 K, at most MaxUsersPerUpdate): update
	// v takes the v-th block's public size of sessions. Its other fields
	// are the learner's public settings. Policy's PPO
	// settings do not apply; z, K, Delta, the per-user caps and the
	// independent noise do. Not for a cluster role.
	LinCB *lincb.Config
	// AverageDecay, if in (0, 1), makes the agent serve the exponential
	// moving average of its released iterates instead of the last one:
	// avg_v = d avg_{v-1} + (1 - d) theta_v, avg_1 = theta_1 (Polyak
	// averaging, as policy.TrainOptions.AverageDecay). Updates still start
	// from the last iterate. Both are stored in each version's snapshot,
	// and the average is a function of the noised releases only
	// (post-processing: the same epsilon). 0 serves the last iterate. Not
	// with LinCB or Fixed.
	AverageDecay float64
}

// LinCBConfig returns the linear contextual bandit's effective
// configuration (Config.LinCB with the fields the agent sets), or the zero
// Config without LinCB.
func (c Config) LinCBConfig() lincb.Config {
	if c.LinCB == nil {
		return lincb.Config{}
	}
	l := *c.LinCB
	l.Actions, l.Dim = c.Spec.NumActions, c.Spec.ObsDim
	l.RewardLow, l.RewardHigh = c.RewardLow, c.RewardHigh
	l.NoiseMultiplier = c.Policy.DP.NoiseMultiplier
	l.FirstBlock = max(c.Policy.DP.UsersPerUpdate, 1)
	if l.MaxBlock == 0 {
		l.MaxBlock = min(16*l.FirstBlock, MaxUsersPerUpdate)
	}
	return l
}

// maxBatch is the most sessions one update takes: K, or the linear
// contextual bandit's largest block.
func (c Config) maxBatch() int {
	if c.LinCB != nil {
		return max(c.LinCBConfig().MaxBlock, c.Policy.DP.UsersPerUpdate)
	}
	return c.Policy.DP.UsersPerUpdate
}

// DefaultConfig returns the operational defaults around a policy config.
func DefaultConfig(spec policy.Spec, pc policy.Config) Config {
	return Config{
		Spec: spec, Policy: pc, Delta: 1e-5,
		MaxOpenSessions: 100000, MaxSessionsPerUser: 16, MaxSessionsPerConnection: 10000, MaxStepsPerSession: 10000,
		SessionMemoryBytes: 1 << 30, MaxQueuedPerUser: 2,
		IdleTimeout: 5 * time.Minute, MaxSessionLifetime: time.Hour, FlushTimeout: time.Minute, MaxStaleness: 1,
		RewardLow: -1e6, RewardHigh: 1e6,
	}
}

// minSessionMemory is the smallest memory budget accepted: room for a few
// sessions of any spec.
const minSessionMemory = 1 << 20

// maxRewardTimesSteps bounds max(|RewardLow|, |RewardHigh|) x
// MaxStepsPerSession: a return and its square stay far from overflow.
const maxRewardTimesSteps = 1e150

// The ranges of Config's limits (and of dprl agent's flags that set them).
// Upper bounds are what the agent can hold, or values past which a limit
// cannot bind and a typo is likelier than intent.
const (
	// MaxUsersPerUpdate bounds K (Policy.DP.UsersPerUpdate): 32,768
	// sessions per update, the exact sampler's floating-point
	// precondition for every noise (policy.MaxUsersPerUpdate;
	// docs/privacy.md, section 2). K is also bounded by the session memory: the K
	// sessions of an update are held, with their steps, until it is
	// released, so K sessions of the smallest size (MinSessionBytes) must
	// fit SessionMemoryBytes, or no update could ever fill and every
	// release would be a flush of a partial batch.
	MaxUsersPerUpdate = policy.MaxUsersPerUpdate
	// MaxSessions bounds MaxOpenSessions, MaxSessionsPerUser and
	// MaxSessionsPerConnection (16,777,216): at about a kilobyte a session
	// at the least, more open sessions than that need a memory budget of
	// more than 16 GiB.
	MaxSessions = 1 << 24
	// MaxSteps bounds MaxStepsPerSession (16,777,216 steps): one session
	// that long holds at least 384 MiB of steps for a one-value
	// observation.
	MaxSteps = 1 << 24
	// MaxUpdatesPerUserCap bounds MaxUpdatesPerUser (1,048,576).
	MaxUpdatesPerUserCap = 1 << 20
	// MinTimeout and MaxTimeout bound IdleTimeout, FlushTimeout and
	// MaxSessionLifetime: the sweeper and the flush check run every
	// quarter of their timeout but at most every 10 ms, so a timeout is
	// honoured to a quarter of itself from 40 ms; past 30 days a silent
	// session would hold its memory for as long as the process runs.
	MinTimeout = 50 * time.Millisecond
	MaxTimeout = 30 * 24 * time.Hour
)

// MaxQueuedPerUser returns the largest MaxQueuedPerUser for K sessions
// per update: 4K + 1024, the learner queue's capacity (all users' queues
// together), past which a per-user limit cannot bind.
func MaxQueuedPerUser(k int) int { return 4*k + 1024 }

// MinSessionBytes is the least memory a session is charged: its fixed
// overhead and the step storage it starts with.
func (c Config) MinSessionBytes() int64 {
	a := &Agent{cfg: c}
	return sessionOverhead("", "", "") + a.stepBytes(min(initialStepCapacity, max(c.MaxStepsPerSession, 1)))
}

// ConfigFields are the names the errors of Config.Validate give fields
// (fielderr): the names of the operator's settings (agent/service's
// Settings) that set them, which the command renders as its flags.
var ConfigFields = fielderr.Fields{"K", "Delta", "UserEpsilon", "MaxUpdatesPerUser", "SessionMemoryMiB",
	"MaxOpenSessions", "MaxStepsPerSession", "MaxSessionsPerUser", "MaxSessionsPerConnection", "MaxQueuedPerUser",
	"IdleTimeout", "FlushTimeout", "MaxSessionLifetime", "RewardLow", "RewardHigh"}

// Validate reports every problem at once. The errors of a limit name its
// field as the operator's settings do (fielderr, ConfigFields). It joins the errors of
// its validators by concern, in this order: the learner, the fixed policy,
// the privacy parameters, the admission limits, the reward bound and the
// workers.
func (c Config) Validate() error {
	var errs []error
	for _, v := range []func() []error{c.validateLearner, c.validateLinCB, c.validateFixed, c.validatePrivacy, c.validateLimits, c.validateReward} {
		errs = append(errs, v()...)
	}
	if d := c.AverageDecay; !(d >= 0 && d < 1) {
		errs = append(errs, agentError("average decay %v, must be in [0, 1) (0: serve the last iterate)", d))
	} else if d > 0 && (c.LinCB != nil || c.Fixed != nil) {
		errs = append(errs, agentError("average decay %v: only DPPG's iterates are averaged, not a fixed policy or the linear contextual bandit", d))
	}
	if c.Workers < 0 {
		errs = append(errs, agentError("workers = %d, want >= 0", c.Workers))
	}
	return errors.Join(errs...)
}

// agentError is an error of Validate that names no field.
func agentError(format string, args ...any) error {
	return fmt.Errorf("agent: "+format, args...)
}

// validateLearner checks the spec and the learner's configuration: the
// agent runs DP mode dp only, with independent or bandmf noise, bandmf
// with a cap on a user's updates.
func (c Config) validateLearner() []error {
	var errs []error
	if err := c.Spec.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Policy.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Policy.DP.Mode == policy.ModePPO || c.Policy.DP.Mode == policy.ModeClipOnly {
		errs = append(errs, agentError("DP mode %v is not private; the agent runs mode dp only", c.Policy.DP.Mode))
	}
	dp := c.Policy.DP
	switch m, err := dp.Noise.Mechanism(); {
	case err != nil: // Policy.Validate names it
	case !m.Online():
		errs = append(errs, agentError("%v noise is for in-process training only: its accounting assumes each user enters one release, and the agent's users may return; use %s", dp.Noise, policy.OnlineNoises()))
	case m.Separation(dp) > 0 && c.MaxUpdatesPerUser < 1:
		// Its sensitivity is that of the participation pattern the ledger
		// enforces: at most MaxUpdatesPerUser updates per user, any two at
		// least Separation apart.
		errs = append(errs, ConfigFields.Errorf("{MaxUpdatesPerUser} %d: %v noise needs a cap on the updates a user takes part in (its sensitivity is that of at most k participations, any two at least %d releases apart)", c.MaxUpdatesPerUser, dp.Noise, m.Separation(dp)))
	}
	return errs
}

// validateLinCB checks the linear contextual bandit, if any: discrete
// actions, independent noise, no fixed policy, and a valid effective
// configuration.
func (c Config) validateLinCB() []error {
	if c.LinCB == nil {
		return nil
	}
	var errs []error
	if c.Spec.Kind != policy.ActionDiscrete {
		errs = append(errs, agentError("the linear contextual bandit needs discrete actions, not %v", c.Spec.Kind))
	}
	if c.Fixed != nil {
		errs = append(errs, agentError("a fixed policy and the linear contextual bandit: serve one or learn the other"))
	}
	if c.Policy.DP.Noise != policy.NoiseIndependent {
		errs = append(errs, agentError("the linear contextual bandit takes independent noise, not %v", c.Policy.DP.Noise))
	}
	if c.Spec.Kind == policy.ActionDiscrete && c.Spec.Validate() == nil && c.Policy.DP.NoiseMultiplier > 0 {
		l := c.LinCBConfig()
		if err := l.Validate(); err != nil {
			errs = append(errs, agentError("linear contextual bandit: %w", err))
		}
		if l.MaxBlock > MaxUsersPerUpdate || l.MaxBlock < l.FirstBlock {
			errs = append(errs, agentError("linear contextual bandit: largest block %d, want K (%d) to %d", l.MaxBlock, l.FirstBlock, MaxUsersPerUpdate))
		}
	}
	return errs
}

// validateFixed checks the fixed policy, if any: one of a SAC actor and a
// Q-network, matching the spec, and private unless ServeNonPrivate.
func (c Config) validateFixed() []error {
	switch {
	case c.Fixed == nil:
		return nil
	case (c.Fixed.Actor == nil) == (c.Fixed.Q == nil):
		return []error{agentError("fixed policy with neither or both of a SAC actor and a Q-network policy")}
	}
	if err := c.Fixed.check(c.Spec); err != nil {
		return []error{agentError("fixed policy %s: %w", c.Fixed.Source, err)}
	}
	if !c.Fixed.Private() && !c.Fixed.ServeNonPrivate {
		return []error{agentError("fixed policy %s is %s: refused without ServeNonPrivate", c.Fixed.Source, c.Fixed.Label())}
	}
	return nil
}

// validatePrivacy checks K (at most MaxUsersPerUpdate, and K sessions of
// the smallest size fit the session memory budget), Delta and the per-user
// caps.
func (c Config) validatePrivacy() []error {
	var errs []error
	k := c.Policy.DP.UsersPerUpdate
	if k > MaxUsersPerUpdate {
		errs = append(errs, ConfigFields.Errorf("{K} %d: want 1 to %d", k, MaxUsersPerUpdate))
	} else if b := c.MinSessionBytes(); c.Fixed == nil && k > 0 && c.SessionMemoryBytes >= minSessionMemory && int64(c.maxBatch()) > c.SessionMemoryBytes/b {
		k = c.maxBatch()
		errs = append(errs, ConfigFields.Errorf("{K} %d: an update holds its K sessions until it is released, and %d sessions of at least %d bytes do not fit the session memory budget {SessionMemoryMiB} of %d MiB (at most %d sessions)",
			k, k, b, c.SessionMemoryBytes>>20, c.SessionMemoryBytes/b))
	}
	if !(c.Delta > 0 && c.Delta < 1) {
		errs = append(errs, ConfigFields.Errorf("{Delta} %v: want 0 < delta < 1", c.Delta))
	}
	if !(c.UserEpsilon >= 0) || math.IsInf(c.UserEpsilon, 0) {
		errs = append(errs, ConfigFields.Errorf("{UserEpsilon} %v: the user epsilon cap must be finite and >= 0 (0: no cap)", c.UserEpsilon))
	}
	if c.MaxUpdatesPerUser < 0 || c.MaxUpdatesPerUser > MaxUpdatesPerUserCap {
		errs = append(errs, ConfigFields.Errorf("{MaxUpdatesPerUser} %d: want 0 (no cap) to %d", c.MaxUpdatesPerUser, MaxUpdatesPerUserCap))
	}
	return errs
}

// validateLimits checks the admission limits: the session counts, the
// session memory budget and the timeouts.
func (c Config) validateLimits() []error {
	var errs []error
	k := c.Policy.DP.UsersPerUpdate
	for _, l := range []struct {
		field, what string
		v, lo, hi   int
		why         string
	}{
		{"MaxOpenSessions", "open sessions", c.MaxOpenSessions, 1, MaxSessions, ""},
		{"MaxStepsPerSession", "steps per session", c.MaxStepsPerSession, 2, MaxSteps, ""},
		{"MaxSessionsPerUser", "open sessions per user", c.MaxSessionsPerUser, 1, MaxSessions, ""},
		{"MaxSessionsPerConnection", "open sessions per connection", c.MaxSessionsPerConnection, 1, MaxSessions, ""},
		{"MaxQueuedPerUser", "queued sessions per user", c.MaxQueuedPerUser, 1, MaxQueuedPerUser(max(k, 1)), " (the capacity of the learner queue, all users together: 4 x {K} + 1024)"},
	} {
		if l.v < l.lo || l.v > l.hi {
			errs = append(errs, ConfigFields.Errorf("{%s} %d: %s, want %d to %d%s", l.field, l.v, l.what, l.lo, l.hi, l.why))
		}
	}
	if c.SessionMemoryBytes < minSessionMemory {
		errs = append(errs, agentError("session memory budget = %d bytes, want >= %d", c.SessionMemoryBytes, minSessionMemory))
	}
	for _, d := range []struct {
		field, what string
		v           time.Duration
	}{{"IdleTimeout", "idle timeout", c.IdleTimeout}, {"FlushTimeout", "flush timeout", c.FlushTimeout}, {"MaxSessionLifetime", "session lifetime", c.MaxSessionLifetime}} {
		if d.v < MinTimeout || d.v > MaxTimeout {
			errs = append(errs, ConfigFields.Errorf("{%s} %v: %s, want %v to 30 days", d.field, d.v, d.what, MinTimeout))
		}
	}
	return errs
}

// validateReward checks the reward bound: finite, low < high, and a return
// of MaxStepsPerSession rewards cannot overflow.
func (c Config) validateReward() []error {
	lo, hi := c.RewardLow, c.RewardHigh
	switch {
	case math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || !(lo < hi):
		return []error{ConfigFields.Errorf("reward bound [{RewardLow}, {RewardHigh}] = [%v, %v]: want finite low < high", lo, hi)}
	case max(math.Abs(lo), math.Abs(hi))*float64(max(c.MaxStepsPerSession, 1)) > maxRewardTimesSteps:
		return []error{ConfigFields.Errorf("reward bound [{RewardLow}, {RewardHigh}] = [%v, %v] x {MaxStepsPerSession} %d passes %g: a return could overflow", lo, hi, c.MaxStepsPerSession, maxRewardTimesSteps)}
	}
	return nil
}
