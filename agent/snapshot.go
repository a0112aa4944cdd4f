package agent

import "dprl/policy"

// encodeSnapshot encodes a released policy in policy's versioned,
// checksummed snapshot format. Its DP fields hold the per-release
// parameters (mode, z, S, K), true of every noise; the correlation of
// bandmf noise across releases, which format 1 cannot hold, is recorded by
// each release's ledger entry (Entry.Correlation) and in the snapshot's
// configuration hash (policy.ConfigHash covers the noise and its bands).
func encodeSnapshot(cfg Config, ver uint64, theta []float64) ([]byte, error) {
	s, err := policy.NewSnapshot(cfg.Spec, cfg.Policy, ver, theta)
	if err != nil {
		return nil, err
	}
	s.DP.Noise, s.DP.Band = policy.NoiseIndependent, 0
	return policy.MarshalSnapshot(s)
}

// decodeSnapshot reads a stored policy and checks that it fits the
// configured spec and network shape.
func decodeSnapshot(cfg Config, b []byte) (uint64, []float64, error) {
	s, err := policy.UnmarshalSnapshot(b)
	if err != nil {
		return 0, nil, err
	}
	if err := s.CheckCompatible(cfg.Spec, cfg.Policy.PPO.Hidden); err != nil {
		return 0, nil, err
	}
	return s.Version, s.Theta, nil
}
