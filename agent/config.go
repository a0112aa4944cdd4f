package agent

import (
	"errors"
	"fmt"
	"math"
	"time"

	"dprl/policy"
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
	// MaxStepsPerSession bounds a session's length; at the limit the
	// session is closed as truncated. Default 10000.
	MaxStepsPerSession int
	// IdleTimeout closes a session that sent nothing for this long, as
	// truncated. Default 5 minutes.
	IdleTimeout time.Duration
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
}

// DefaultConfig returns the operational defaults around a policy config.
func DefaultConfig(spec policy.Spec, pc policy.Config) Config {
	return Config{
		Spec: spec, Policy: pc, Delta: 1e-5,
		MaxOpenSessions: 100000, MaxStepsPerSession: 10000,
		IdleTimeout: 5 * time.Minute, FlushTimeout: time.Minute, MaxStaleness: 1,
	}
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("agent: "+format, args...)) }
	if err := c.Spec.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Policy.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Policy.DP.Mode == policy.ModePPO || c.Policy.DP.Mode == policy.ModeClipOnly {
		bad("DP mode %v is not private; the agent runs mode dp only", c.Policy.DP.Mode)
	}
	if c.Policy.DP.Noise != policy.NoiseIndependent {
		bad("%v noise is for in-process training only: its accounting assumes each user enters one release, and the agent's users may return; its state is not persisted", c.Policy.DP.Noise)
	}
	if !(c.Delta > 0 && c.Delta < 1) {
		bad("delta = %v, want 0 < delta < 1", c.Delta)
	}
	if !(c.UserEpsilon >= 0) || math.IsInf(c.UserEpsilon, 0) {
		bad("user epsilon cap = %v, want >= 0 (0: no cap)", c.UserEpsilon)
	}
	if c.MaxUpdatesPerUser < 0 {
		bad("max updates per user = %d, want >= 0 (0: no cap)", c.MaxUpdatesPerUser)
	}
	if c.MaxOpenSessions < 1 || c.MaxStepsPerSession < 2 {
		bad("session limits: open %d (>= 1), steps %d (>= 2)", c.MaxOpenSessions, c.MaxStepsPerSession)
	}
	if c.IdleTimeout <= 0 || c.FlushTimeout <= 0 {
		bad("timeouts: idle %v, flush %v, want > 0", c.IdleTimeout, c.FlushTimeout)
	}
	if c.Workers < 0 {
		bad("workers = %d, want >= 0", c.Workers)
	}
	return errors.Join(errs...)
}
