package profile

import (
	"errors"
	"strconv"
	"strings"

	"dprl/internal/fielderr"
	"dprl/policy"
	"dprl/sims"
)

// TrainDefaults returns the learner configuration of the environment name
// before any override and before dprl train's correlated-noise defaults: its
// profile's Learner. A name without a profile gets Table 3's control column
// (policy.DefaultControlConfig); TrainConfig rejects it.
func TrainDefaults(name string) policy.Config {
	p, err := Get(name)
	if err != nil {
		return policy.DefaultControlConfig()
	}
	return p.Learner
}

// ObsDim returns the observation dimension of the registered environment
// name (0 if it is unknown).
func ObsDim(name string) int {
	info, ok := sims.Lookup(name)
	if !ok {
		return 0
	}
	return info.New().ObservationSpace().Dim()
}

// TrainOverrides replace learner settings of an environment's defaults in
// TrainConfig. A nil field keeps the default. They are applied as given:
// validating them is the caller's job (experiment.Train.Validate), and
// policy.Config.Validate checks the result.
type TrainOverrides struct {
	// Z, Clip and PolicyShare set DP.NoiseMultiplier, DP.ClipNorm and
	// DP.PolicyClipShare; non-private training ignores them.
	Z, Clip, PolicyShare *float64
	// K sets DP.UsersPerUpdate.
	K *int
	// Noise replaces the default, independent noise.
	Noise *policy.Noise
	// Horizon, for correlated noise, restarts the correlation every
	// *Horizon releases; 0 (and nil, the default) correlates it over the
	// whole run of ceil(users / K) releases.
	Horizon *int
	// LR, ServerLR, EntropyCoef, Hidden, NormalizeAdvantages, Epochs,
	// StepsPerUser (the segment length T), Gamma, Lambda, MomentReset,
	// ValueScale and ObsScale set the PPO fields of the same names (Adam.LR
	// for LR). ObsScale may point to an empty slice: no observation
	// scaling.
	LR, ServerLR, EntropyCoef *float64
	Hidden                    []int
	NormalizeAdvantages       *bool
	Epochs, StepsPerUser      *int
	Gamma, Lambda             *float64
	MomentReset               *policy.MomentReset
	ValueScale                *float64
	ObsScale                  *[]float64
}

// TrainConfig returns the learner configuration of a training run of users
// simulated users on the environment name: the profile's TrainLearner (its
// Learner with a whole episode per user where TrainWholeEpisodes), made
// non-private (NonPrivate: no clipping, no noise) if private is false, with
// o applied over it. Correlated noise (o.Noise tree or sqrt) gets its
// horizon: o.Horizon, or the run's ceil(users / K) releases. The error wraps
// sims.ErrUnknownEnv or ErrNoProfile for a name without a profile.
func TrainConfig(name string, private bool, users int, o TrainOverrides) (policy.Config, error) {
	p, err := Get(name)
	if err != nil {
		return policy.Config{}, err
	}
	cfg, noise := p.TrainLearner()
	if private {
		set(&cfg.DP.NoiseMultiplier, o.Z)
		set(&cfg.DP.ClipNorm, o.Clip)
		set(&cfg.DP.PolicyClipShare, o.PolicyShare)
	} else {
		cfg = p.TrainBaseline()
	}
	set(&cfg.DP.UsersPerUpdate, o.K)
	set(&noise, o.Noise)
	if cfg.DP.Mode == policy.ModeDP {
		cfg.DP.Noise = noise
		if m, err := noise.Mechanism(); err == nil && m.Horizon() {
			k := max(1, cfg.DP.UsersPerUpdate)
			cfg.DP.Horizon = (max(users, 1) + k - 1) / k
			if o.Horizon != nil && *o.Horizon != 0 {
				cfg.DP.Horizon = *o.Horizon
			}
		}
	}
	set(&cfg.PPO.Adam.LR, o.LR)
	set(&cfg.PPO.ServerLR, o.ServerLR)
	set(&cfg.PPO.EntropyCoef, o.EntropyCoef)
	if o.Hidden != nil {
		cfg.PPO.Hidden = o.Hidden
	}
	set(&cfg.PPO.NormalizeAdvantages, o.NormalizeAdvantages)
	set(&cfg.PPO.Epochs, o.Epochs)
	set(&cfg.PPO.StepsPerUser, o.StepsPerUser)
	set(&cfg.PPO.Gamma, o.Gamma)
	set(&cfg.PPO.Lambda, o.Lambda)
	set(&cfg.PPO.MomentReset, o.MomentReset)
	set(&cfg.PPO.ValueScale, o.ValueScale)
	set(&cfg.PPO.ObsScale, o.ObsScale)
	return cfg, nil
}

// TrainNoise returns the noise dprl train uses by default on the
// environment name (TrainLearner's).
func TrainNoise(name string) policy.Noise {
	p, err := Get(name)
	if err != nil {
		return policy.NoiseIndependent
	}
	_, noise := p.TrainLearner()
	return noise
}

// set stores *v in *dst if v is not nil.
func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// trainFields are the TrainOverrides fields the parse errors name
// (internal/fielderr: a command renders them as its flags).
var trainFields = fielderr.Fields{"Noise", "Horizon", "MomentReset", "ObsScale"}

// ParseNoise parses the noise of the releases (TrainOverrides.Noise):
// independent, tree or sqrt (policy.ParseNoise).
func ParseNoise(s string) (policy.Noise, error) {
	n, err := policy.ParseNoise(s)
	if err != nil {
		return n, trainFields.Errorf("{Noise} %q: want independent, tree or sqrt", s)
	}
	return n, nil
}

// ParseHorizon parses a correlated-noise horizon (TrainOverrides.Horizon):
// "run" (0, the whole run) or a number of releases >= 1.
func ParseHorizon(s string) (int, error) {
	if s == "run" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, trainFields.Errorf("{Horizon} %q: want run or a number of releases >= 1", s)
	}
	return n, nil
}

// ParseMomentReset parses a local Adam reset (TrainOverrides.MomentReset):
// paper (policy.ResetPaper), second (policy.ResetSecond) or zero
// (policy.ResetZero).
func ParseMomentReset(s string) (policy.MomentReset, error) {
	switch s {
	case "paper":
		return policy.ResetPaper, nil
	case "second":
		return policy.ResetSecond, nil
	case "zero":
		return policy.ResetZero, nil
	}
	return 0, trainFields.Errorf("{MomentReset} %q: want paper, second or zero", s)
}

// ParseObsScale parses the public observation scales of the environment
// name (TrainOverrides.ObsScale): comma-separated numbers, one per
// observation component, or "none" (or ""): no scaling (nil). On a number
// that does not parse it returns the numbers before it with the error,
// joined with a count error if they are not as many as the observation has
// components.
func ParseObsScale(s, name string) ([]float64, error) {
	var scale []float64
	var errs []error
	if v := strings.TrimSpace(s); v != "" && v != "none" {
		for _, part := range strings.Split(v, ",") {
			x, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
			if err != nil {
				errs = append(errs, trainFields.Errorf("{ObsScale} %q: %w", s, err))
				break
			}
			scale = append(scale, x)
		}
	}
	if d := ObsDim(name); len(scale) != 0 && d > 0 && len(scale) != d {
		errs = append(errs, trainFields.Errorf("{ObsScale} %q: want %d values (the observation dimension of %s), or none", s, d, name))
	}
	return scale, errors.Join(errs...)
}
