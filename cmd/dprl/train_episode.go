package main

import (
	"fmt"

	"dprl/ledger/accountant"
	"dprl/policy"
	"dprl/sims"
)

// episodeAccount is the privacy of one episode in a dprl train --algo dppg
// run, beside that of one simulated user. A user is one segment of at most
// T steps of an episode; with continuing episodes (the default) an episode
// of at most MaxEpisodeSteps steps spans up to Segments users, in
// EpisodeReleases consecutive releases (policy.EpisodeSegments derives it
// from the training loop), and its L2 sensitivity is Sensitivity times one
// user's (policy.DPConfig.WindowSensitivity). The privacy unit a user of
// dprl cares about is the episode (the trajectory), so the episode's
// epsilon is the headline and the segment's is printed beside it, labelled.
type episodeAccount struct {
	// PrivacyUnit is "episode": the headline epsilon covers one episode.
	PrivacyUnit string `json:"privacy_unit"`
	// EpsilonPerSegment is the epsilon of one simulated user (one segment
	// of at most SegmentSteps steps, in one release): the Gaussian
	// mechanism of multiplier z. It equals the episode's with
	// --fresh-episodes.
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

// newEpisodeAccount derives the episode structure of a dppg run of dprl
// train from the configuration that will run (the segment length T, K, the
// users, --fresh-episodes, the noise and its horizon) and the environment's
// MaxSteps.
func newEpisodeAccount(f *trainFlags, cfg policy.Config) (*episodeAccount, error) {
	info, ok := sims.Lookup(f.env)
	if !ok {
		return nil, fmt.Errorf("unknown environment %q", f.env)
	}
	maxSteps := info.New().MaxSteps()
	ep, err := policy.TrainEpisodePrivacy(cfg, policy.TrainOptions{Users: f.users, ContinueEpisodes: !f.fresh}, maxSteps)
	if err != nil {
		return nil, fmt.Errorf("%w (--fresh-episodes makes every user a new episode)", err)
	}
	return &episodeAccount{PrivacyUnit: "episode", SegmentSteps: cfg.PPO.StepsPerUser, MaxEpisodeSteps: maxSteps, FreshEpisodes: f.fresh,
		Segments: ep.Segments, EpisodeReleases: ep.Releases, Sensitivity: ep.Sensitivity, ep: ep}, nil
}

// at returns the guarantees at noise multiplier z and delta: per episode
// (the headline) and per segment (one user), and sets EpsilonPerSegment
// (policy.EpisodePrivacy.Guarantees).
func (e *episodeAccount) at(z, delta float64) (episode, segment accountant.Guarantee, err error) {
	if episode, segment, err = e.ep.Guarantees(z, delta); err != nil {
		return episode, segment, err
	}
	e.EpsilonPerSegment = segment.Epsilon
	return episode, segment, nil
}

// text describes the episode account for the privacy line of the output.
func (e *episodeAccount) text() string {
	if e.FreshEpisodes {
		return e.structure() + ": per episode = per user"
	}
	return fmt.Sprintf("%s; per segment: epsilon = %.4g", e.structure(), e.EpsilonPerSegment)
}

// structure describes how an episode is split over users and releases.
func (e *episodeAccount) structure() string {
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
