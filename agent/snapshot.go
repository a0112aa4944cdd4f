package agent

import (
	"fmt"
	"slices"

	"dprl/policy"
	"dprl/policy/lincb"
)

// encodeSnapshot encodes a released policy in policy's versioned,
// checksummed snapshot format. Its DP fields hold the per-release
// parameters (mode, z, S, K), true of every noise; the correlation of
// bandmf noise across releases, which format 1 cannot hold, is recorded by
// each release's ledger entry (Entry.Correlation) and in the snapshot's
// configuration hash (policy.ConfigHash covers the noise and its bands).
// avg, when not nil, is the served moving average of the iterates
// (Config.AverageDecay), stored beside theta (snapshot format 2).
// The linear contextual bandit's (Config.LinCB) is lincb's snapshot:
// theta holds its released statistics, one block per version.
func encodeSnapshot(cfg Config, ver uint64, theta, avg []float64) ([]byte, error) {
	if cfg.LinCB != nil {
		return lincb.MarshalSnapshot(linSnapshot(cfg, ver, theta))
	}
	s, err := policy.NewSnapshot(cfg.Spec, cfg.Policy, ver, theta)
	if err != nil {
		return nil, err
	}
	s.DP.Noise, s.DP.Band = policy.NoiseIndependent, 0
	if avg != nil {
		s.Average, s.AverageDecay = avg, cfg.AverageDecay
	}
	return policy.MarshalSnapshot(s)
}

// linSnapshot is version ver of the linear contextual bandit: ver blocks
// of the public schedule's sizes (a block flushed early is still counted
// at its size).
func linSnapshot(cfg Config, ver uint64, stats []float64) lincb.Snapshot {
	c := cfg.LinCBConfig()
	return lincb.Snapshot{Version: ver, Config: c, Blocks: int(ver), Users: c.UsersBefore(int(ver)), Stats: stats}
}

// decodeSnapshot reads a stored policy and checks that it fits the
// configured spec and network shape (or, for the linear contextual
// bandit, its effective configuration). It returns the version, the
// iterate and the served average: nil when the snapshot holds none or the
// agent does not average (Config.AverageDecay 0); an agent that starts
// averaging on a store written without it starts its average at the next
// release, as a new run does.
func decodeSnapshot(cfg Config, b []byte) (uint64, []float64, []float64, error) {
	if cfg.LinCB != nil {
		s, err := lincb.UnmarshalSnapshot(b)
		if err != nil {
			return 0, nil, nil, err
		}
		if want := cfg.LinCBConfig(); s.Config != want {
			return 0, nil, nil, fmt.Errorf("%w: linear contextual bandit %+v in store != %+v in config", policy.ErrIncompatible, s.Config, want)
		}
		if s.Blocks != int(s.Version) || s.Users != s.Config.UsersBefore(s.Blocks) {
			return 0, nil, nil, fmt.Errorf("%w: %d blocks and %d users at version %d, want one block of the schedule per version", policy.ErrIncompatible, s.Blocks, s.Users, s.Version)
		}
		return s.Version, s.Stats, nil, nil
	}
	s, err := policy.UnmarshalSnapshot(b)
	if err != nil {
		return 0, nil, nil, err
	}
	if err := s.CheckCompatible(cfg.Spec, cfg.Policy.PPO.Hidden); err != nil {
		return 0, nil, nil, err
	}
	if cfg.AverageDecay == 0 {
		return s.Version, s.Theta, nil, nil
	}
	return s.Version, s.Theta, s.Average, nil
}

// nextAverage returns the served average after a release of theta that
// follows cur: nil without averaging, theta's copy at the first average
// (avg_1 = theta_1, as policy.TrainOptions.AverageDecay), else
// d cur + (1 - d) theta. Post-processing of the releases.
func nextAverage(decay float64, cur, theta []float64) []float64 {
	if decay == 0 {
		return nil
	}
	avg := slices.Clone(theta)
	if cur != nil {
		for i := range avg {
			avg[i] = decay*cur[i] + (1-decay)*theta[i]
		}
	}
	return avg
}

// linModel fits version ver's model from its released statistics (nil
// without the linear contextual bandit).
func linModel(cfg Config, ver uint64, stats []float64) (*lincb.Model, error) {
	if cfg.LinCB == nil {
		return nil, nil
	}
	return linSnapshot(cfg, ver, stats).Model()
}
