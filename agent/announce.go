package agent

import (
	"dprl/ledger/accountant"
	"fmt"
)

// Describe is c in one line, as dprl agent --check-config reports it: the
// spec, the learner's parameters, the per-session epsilon and the per-user
// bound (rounded up), the correlated noise (NoiseNote) and the reward
// bound; with a fixed policy, the snapshot served and what serving it
// spends.
func (c Config) Describe() string {
	if c.Fixed != nil {
		return fmt.Sprintf("%s, serving the fixed policy %s (%s): %s; %s; rewards clipped to [%g, %g]",
			c.Spec.Describe(), c.Fixed.Source, c.Fixed.ID(), c.Fixed.Label(), c.Fixed.ServingNote(), c.RewardLow, c.RewardHigh)
	}
	eps, _ := c.SessionEpsilon()
	if c.LinCB != nil {
		l := c.LinCBConfig()
		return fmt.Sprintf("%s, linear contextual bandit: blocks of K = %d sessions growing %gx up to %d, z = %.6g, S = %.6g (observations clipped to L2 norm %.6g, Gram weight %g), %s, per-session epsilon %s at delta %g; rewards clipped to [%g, %g]",
			c.Spec.Describe(), l.FirstBlock, l.Growth, l.MaxBlock, l.NoiseMultiplier, l.Sensitivity(), l.FeatureClip, l.GramWeight, userBound(c), accountant.FormatEpsilon(eps), c.Delta, c.RewardLow, c.RewardHigh)
	}
	served := ""
	if c.AverageDecay > 0 {
		served = fmt.Sprintf("; serving the moving average of the releases (decay %g, post-processing)", c.AverageDecay)
	}
	return fmt.Sprintf("%s, K = %d, z = %.6g, S = %g, %s, per-session epsilon %s at delta %g%s%s; rewards clipped to [%g, %g]",
		c.Spec.Describe(), c.Policy.DP.UsersPerUpdate, c.Policy.DP.NoiseMultiplier, c.Policy.DP.ClipNorm, userBound(c), accountant.FormatEpsilon(eps), c.Delta, c.NoiseNote(), served, c.RewardLow, c.RewardHigh)
}

// userBound describes the per-user guarantee (the headline: the user is
// the unit personalization protects), rounded up.
func userBound(c Config) string {
	ue, ok, err := c.UserEpsilonBound()
	if err != nil || !ok {
		return "per-user epsilon unbounded (no per-user cap)"
	}
	return fmt.Sprintf("per-user epsilon at most %s at delta %g (%s)", accountant.FormatEpsilon(ue), c.Delta, c.UserCaps())
}

// NoiseNote describes c's correlated noise as a clause to append to a
// sentence (", " and Mechanism.Describe; "" for fresh noise): e.g.
// bandmf's bands, the pattern and the sensitivity behind the per-user
// bound.
func (c Config) NoiseNote() string {
	dp := c.Policy.DP
	m, err := dp.Noise.Mechanism()
	if err != nil {
		return ""
	}
	if d := m.Describe(dp, c.MaxUpdatesPerUser); d != "" {
		return ", " + d
	}
	return ""
}
