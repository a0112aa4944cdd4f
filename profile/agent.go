package profile

import "dprl/policy"

// AgentDefaults returns the policy spec of simulator name and the learner
// configuration measured for it, as the DP agent takes them (dprl agent
// --env, dprl demo, dprl bench serve): Profile.Spec and
// Profile.Learner, without dprl train's whole-episode segments (an agent's
// session is one episode anyway). The error is Get's.
func AgentDefaults(name string) (policy.Spec, policy.Config, error) {
	p, err := Get(name)
	if err != nil {
		return policy.Spec{}, policy.Config{}, err
	}
	return p.Spec, p.Learner, nil
}

// RewardBound returns the public reward range of simulator name
// (Profile.RewardLow and RewardHigh), read from its specification, never
// from data: the agent clips each reward to it on arrival. ok is false for
// a name without a profile (an unknown simulator, or "").
func RewardBound(name string) (lo, hi float64, ok bool) {
	p, err := Get(name)
	if err != nil {
		return 0, 0, false
	}
	return p.RewardLow, p.RewardHigh, true
}
