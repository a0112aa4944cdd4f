package agent

import "dprl/policy"

// encodeSnapshot encodes a released policy in policy's versioned,
// checksummed snapshot format.
func encodeSnapshot(cfg Config, ver uint64, theta []float64) ([]byte, error) {
	s, err := policy.NewSnapshot(cfg.Spec, cfg.Policy, ver, theta)
	if err != nil {
		return nil, err
	}
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
