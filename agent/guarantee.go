package agent

import (
	"fmt"
	"math"
	"strings"

	"dprl/ledger"
	"dprl/ledger/accountant"
)

// Guarantee is the privacy an agent's ledger and settings bound together:
// the numbers the agent prints (start line, /status, dprl_session_epsilon,
// dprl_user_epsilon_max, the status page, the demo's summary). The ledger
// may hold releases made at other settings (a restart with another noise
// multiplier z or delta), so every number is read from the ledger's
// entries and user counters and combined with what the current settings
// allow from now on; none is computed from the current settings alone.
type Guarantee struct {
	// Epsilon and Delta are the per-session guarantee: each session is in
	// one release at most (parallel composition), so it is the worst over
	// the ledger's recorded releases and a release made now (Next at the
	// current Delta): the largest epsilon and the largest delta.
	Epsilon, Delta float64
	// Next is the per-session epsilon, at Config.Delta, of a release made
	// now: one Gaussian mechanism at the current z (Config.SessionEpsilon).
	Next float64
	// Recorded and RecordedDelta are the largest per-session epsilon and
	// delta recorded in the ledger's releases (0 without releases);
	// Releases counts those releases.
	Recorded, RecordedDelta float64
	Releases                int
	// WorstUser is the largest composed epsilon, at Config.Delta, of any
	// user in the ledger (0 without users): from the users' counters, the
	// sum of 1/z^2 over their updates at the z each update was made with.
	WorstUser float64
	// UserBound is the largest epsilon, at Config.Delta, that any user can
	// reach under the per-user caps, counting the updates the ledger
	// holds at their own z (UserBounded false: no cap bounds it). Without
	// a ledger history at other settings it is Config.UserEpsilonBound.
	UserBound   float64
	UserBounded bool

	// worstSum is the largest sum of 1/z^2 of a user in the ledger;
	// reachSum the largest a user can reach under the update cap: over
	// the ledger's users, their sum plus (cap - updates)/z^2 at the
	// current z, and cap/z^2 for a new user (0 without an update cap).
	worstSum, reachSum float64
}

// LedgerGuarantee reads the guarantee of an agent configured with c from
// its ledger (one scan of its entries and of its user counters).
func (c Config) LedgerGuarantee(store *ledger.Store) (Guarantee, error) {
	var g Guarantee
	err := store.Entries(func(e ledger.Entry) error {
		if e.Kind == ledger.KindRelease {
			g.addRelease(e.Epsilon, e.Delta)
		}
		return nil
	})
	if err != nil {
		return Guarantee{}, fmt.Errorf("agent: read the ledger's releases: %w", err)
	}
	if err := store.Users(func(_ ledger.UserKey, st ledger.UserState) error {
		c.addUser(&g, st)
		return nil
	}); err != nil {
		return Guarantee{}, fmt.Errorf("agent: read the users' states: %w", err)
	}
	return c.finish(g)
}

// addRelease adds a release's recorded per-session guarantee.
func (g *Guarantee) addRelease(eps, delta float64) {
	g.Recorded, g.RecordedDelta = max(g.Recorded, eps), max(g.RecordedDelta, delta)
	g.Releases++
}

// addUser adds a user's counters: their composed sum of 1/z^2 and what
// the update cap still lets them reach at the current z.
func (c Config) addUser(g *Guarantee, st ledger.UserState) {
	if st.Updates == 0 {
		return
	}
	g.worstSum = max(g.worstSum, st.SumInvZ2)
	if k := c.MaxUpdatesPerUser; k > 0 {
		z := c.Policy.DP.NoiseMultiplier
		g.reachSum = max(g.reachSum, st.SumInvZ2+float64(max(k-st.Updates, 0))/(z*z))
	}
}

// finish computes the epsilons from the sums. A user's updates compose
// into one Gaussian mechanism of multiplier (sum 1/z_i^2)^(-1/2) (Dong,
// Roth and Su, "Gaussian Differential Privacy", Corollary 3.3), whose
// epsilon at delta is exact (Balle and Wang, "Improving the Gaussian
// Mechanism for Differential Privacy: Analytical Calibration and Optimal
// Denoising", Theorem 8; ledger.UserState.Epsilon). A user's epsilon only
// grows with its sum, so the bound is the epsilon of the largest sum a
// user can reach: under the update cap k, a user with n updates and sum s
// reaches at most s + (k - n)/z^2 at the current z (a new user k/z^2); the
// epsilon cap refuses an update that would take a user above it, so a
// user ends at most at the larger of the cap and their epsilon now. The
// bound is the smaller of the two caps' (each bounds every user), and
// never below Config.UserEpsilonBound's value for the update cap.
func (c Config) finish(g Guarantee) (Guarantee, error) {
	next, err := c.SessionEpsilon()
	if err != nil {
		return Guarantee{}, fmt.Errorf("agent: per-session epsilon: %w", err)
	}
	g.Next = next
	g.Epsilon, g.Delta = max(next, g.Recorded), max(c.Delta, g.RecordedDelta)
	g.WorstUser = 0
	if g.worstSum > 0 {
		if g.WorstUser, err = sumEpsilon(g.worstSum, c.Delta); err != nil {
			return Guarantee{}, err
		}
	}
	g.UserBound, g.UserBounded = math.Inf(1), false
	if k := c.MaxUpdatesPerUser; k > 0 {
		z := c.Policy.DP.NoiseMultiplier
		rho, err := c.UserSensitivity()
		if err != nil {
			return Guarantee{}, err
		}
		capped, err := accountant.GaussianEpsilon(z/rho, c.Delta)
		if err != nil {
			return Guarantee{}, err
		}
		g.reachSum = max(g.reachSum, float64(k)/(z*z))
		reach, err := sumEpsilon(g.reachSum, c.Delta)
		if err != nil {
			return Guarantee{}, err
		}
		g.UserBound, g.UserBounded = max(capped, reach), true
	}
	if c.UserEpsilon > 0 {
		g.UserBound, g.UserBounded = math.Min(g.UserBound, max(c.UserEpsilon, g.WorstUser)), true
	}
	return g, nil
}

// sumEpsilon is the epsilon at delta of one Gaussian mechanism of
// multiplier sum^(-1/2): the composition of updates whose 1/z^2 add to
// sum.
func sumEpsilon(sum, delta float64) (float64, error) {
	eps, err := ledger.UserState{Updates: 1, SumInvZ2: sum}.Epsilon(delta)
	if err != nil {
		return 0, fmt.Errorf("agent: a user's composed epsilon: %w", err)
	}
	return eps, nil
}

// HistoryRaises reports whether the ledger's history (releases or users'
// updates at other settings) raised the guarantee above what the current
// settings alone give: the printed lines then say where it comes from.
// (A user's sum of 1/z^2 at one z differs from k/z^2 by rounding only, so
// a relative 1e-9 is not counted as raised: it changes the wording, never
// the bound printed.)
func (g Guarantee) HistoryRaises(c Config) (session, user bool) {
	session = g.Recorded > g.Next || g.RecordedDelta > c.Delta
	if b, ok, err := c.UserEpsilonBound(); err == nil && ok && g.UserBounded {
		user = g.UserBound > b*(1+1e-9)
	}
	return session, user
}

// SessionEpsilon is the per-session epsilon at Delta of one update: one
// Gaussian mechanism of noise multiplier Policy.DP.NoiseMultiplier
// (analytic Gaussian mechanism, "Improving the Gaussian Mechanism for
// Differential Privacy: Analytical Calibration and Optimal Denoising",
// Theorem 8), the epsilon the agent charges each session.
func (c Config) SessionEpsilon() (float64, error) {
	return accountant.GaussianEpsilon(c.Policy.DP.NoiseMultiplier, c.Delta)
}

// UserEpsilonBound is the largest epsilon at Delta any one user can reach
// under the per-user caps: MaxUpdatesPerUser updates of multiplier z
// compose into one Gaussian mechanism of multiplier z/sqrt(k) (Dong, Roth
// & Su, "Gaussian Differential Privacy", Corollary 3.3; exact analytic
// Gaussian); with bandmf noise into one of multiplier z/rho(k), rho(k) the
// sensitivity of k participations at least Band apart (UserSensitivity,
// sqrt(k) within rounding); and UserEpsilon caps it directly. ok is false
// when neither cap is set: a user's epsilon then grows without bound.
func (c Config) UserEpsilonBound() (eps float64, ok bool, err error) {
	eps = math.Inf(1)
	if k := c.MaxUpdatesPerUser; k > 0 {
		rho, err := c.UserSensitivity()
		if err != nil {
			return 0, false, err
		}
		if eps, err = accountant.GaussianEpsilon(c.Policy.DP.NoiseMultiplier/rho, c.Delta); err != nil {
			return 0, false, err
		}
		ok = true
	}
	if c.UserEpsilon > 0 {
		eps, ok = math.Min(eps, c.UserEpsilon), true
	}
	return eps, ok, nil
}

// UserSensitivity is the L2 sensitivity of a user with MaxUpdatesPerUser
// updates in units of one update's: sqrt(k) for independent noise (k
// compositions), and sqrt(k) for bandmf noise too: the maximum over the
// participation sets the ledger allows (at most k, any two at least Band
// apart) of the norm of the sum of the factor's columns is exactly sqrt(k)
// column norms, the columns of such a set having disjoint supports
// (package bandmf). The exact program (bandsens.Sensitivities) computes it,
// and an answer that differs by more than its rounding slack is an error.
// So userNoise's k-fold composition is exact for bandmf as well. 0
// without an update cap.
func (c Config) UserSensitivity() (float64, error) {
	k := c.MaxUpdatesPerUser
	if k < 1 {
		return 0, nil
	}
	dp := c.Policy.DP
	m, err := dp.Noise.Mechanism()
	if err != nil {
		return 0, fmt.Errorf("agent: %w", err)
	}
	rho, err := m.UserSensitivity(dp, k)
	if err != nil {
		return 0, fmt.Errorf("agent: %w", err)
	}
	return rho, nil
}

// UserCaps names the per-user caps in force ("" for none), e.g. "at most 1
// update per user, user epsilon 8".
func (c Config) UserCaps() string {
	var parts []string
	if c.MaxUpdatesPerUser > 0 {
		unit := "updates"
		if c.MaxUpdatesPerUser == 1 {
			unit = "update"
		}
		parts = append(parts, fmt.Sprintf("at most %d %s per user", c.MaxUpdatesPerUser, unit))
	}
	if c.UserEpsilon > 0 {
		parts = append(parts, fmt.Sprintf("user epsilon %g", c.UserEpsilon))
	}
	return strings.Join(parts, ", ")
}
