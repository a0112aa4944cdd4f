package experiment

import (
	"fmt"

	"dprl/ledger/accountant"
	"dprl/policy"
)

// EpisodeAccount is the privacy of one episode in a DPPG training run
// (policy.Train), beside that of one simulated user. A user is one segment
// of at most T steps of an episode; with continuing episodes (the default)
// an episode of at most MaxEpisodeSteps steps spans up to Segments users,
// in EpisodeReleases consecutive releases, and its L2 sensitivity is
// Sensitivity times one user's (policy.TrainEpisodePrivacy; the derivation
// is in docs/privacy.md, "A contributor in several releases"). The privacy
// unit that matters to a user is the episode (the trajectory), so the
// episode's epsilon is the headline and the segment's is given beside it,
// labelled.
type EpisodeAccount struct {
	// PrivacyUnit is "episode": the headline epsilon covers one episode.
	PrivacyUnit string `json:"privacy_unit"`
	// EpsilonPerSegment is the epsilon of one simulated user (one segment
	// of at most SegmentSteps steps, in one release): the Gaussian
	// mechanism of multiplier z. It equals the episode's with fresh
	// episodes. At sets it.
	EpsilonPerSegment float64 `json:"epsilon_per_segment,omitempty"`
	SegmentSteps      int     `json:"segment_steps"`     // T
	MaxEpisodeSteps   int     `json:"max_episode_steps"` // the environment's public step limit
	FreshEpisodes     bool    `json:"fresh_episodes"`
	Segments          int     `json:"segments_per_episode"` // at most
	EpisodeReleases   int     `json:"episode_releases"`     // consecutive releases one episode enters, at most
	// Sensitivity is the L2 sensitivity of one episode in units of one
	// segment's: sqrt(EpisodeReleases) for independent noise (the
	// accountant composes EpisodeReleases Gaussian mechanisms of
	// multiplier z), the norm of the sum of EpisodeReleases consecutive
	// columns of the noise's encoder over one column's for tree and sqrt
	// (one Gaussian mechanism of multiplier z / Sensitivity).
	Sensitivity float64 `json:"episode_sensitivity"`
	// ep is what the accounts are computed from.
	ep policy.EpisodePrivacy
}

// NewEpisodeAccount derives the episode structure of a DPPG run of users
// simulated users with the learner cfg (its segment length T, K, noise and
// horizon) on an environment whose episodes end after at most maxSteps
// steps; fresh starts every user on a new episode (instead of continuing
// the previous user's).
func NewEpisodeAccount(cfg policy.Config, users int, fresh bool, maxSteps int) (*EpisodeAccount, error) {
	ep, err := policy.TrainEpisodePrivacy(cfg, policy.TrainOptions{Users: users, ContinueEpisodes: !fresh}, maxSteps)
	if err != nil {
		return nil, fmt.Errorf("%w (with fresh episodes every user is a new episode)", err)
	}
	return &EpisodeAccount{PrivacyUnit: "episode", SegmentSteps: cfg.PPO.StepsPerUser, MaxEpisodeSteps: maxSteps, FreshEpisodes: fresh,
		Segments: ep.Segments, EpisodeReleases: ep.Releases, Sensitivity: ep.Sensitivity, ep: ep}, nil
}

// Privacy returns the episode privacy the account is computed from.
func (e *EpisodeAccount) Privacy() policy.EpisodePrivacy { return e.ep }

// At returns the guarantees at noise multiplier z and delta: per episode
// (the headline) and per segment (one user), and sets EpsilonPerSegment
// (policy.EpisodePrivacy.Guarantees).
func (e *EpisodeAccount) At(z, delta float64) (episode, segment accountant.Guarantee, err error) {
	if episode, segment, err = e.ep.Guarantees(z, delta); err != nil {
		return episode, segment, err
	}
	e.EpsilonPerSegment = segment.Epsilon
	return episode, segment, nil
}

// Calibrate returns the smallest noise multiplier whose per-episode epsilon
// at delta is at most target (policy.EpisodePrivacy.Calibrate).
func (e *EpisodeAccount) Calibrate(target, delta float64) (float64, error) {
	return e.ep.Calibrate(target, delta)
}

// Text describes the account for the privacy line of a text result: the
// episode structure and the per-segment epsilon.
func (e *EpisodeAccount) Text() string {
	if e.FreshEpisodes {
		return e.Structure() + ": per episode = per user"
	}
	return fmt.Sprintf("%s; per segment: epsilon = %s", e.Structure(), accountant.FormatEpsilon(e.EpsilonPerSegment))
}

// Structure describes how an episode is split over users and releases.
func (e *EpisodeAccount) Structure() string {
	if e.FreshEpisodes {
		return fmt.Sprintf("every user plays a fresh episode, truncated after %d steps", e.SegmentSteps)
	}
	capped := ""
	if e.EpisodeReleases < e.Segments {
		capped = fmt.Sprintf(" (the run has only %d)", e.EpisodeReleases)
	}
	return fmt.Sprintf("an episode of at most %d steps is up to %d segments (users) of at most %d steps in %d consecutive releases%s, sensitivity %.4g segments'",
		e.MaxEpisodeSteps, e.Segments, e.SegmentSteps, e.EpisodeReleases, capped, e.Sensitivity)
}
