package policy

import (
	"fmt"
	"math"
	"math/rand/v2"

	"dprl/ledger/accountant/bandsens"
	"dprl/policy/bandmf"
)

// NoiseBandedSqrt is the banded square root (Kalinin and Lampert 2024,
// "Banded Square Root Matrix Factorization for Differentially Private
// Model Training"): the square root's first Band coefficients, in an
// unbounded stream (package bandmf). The noise of the parameters after t
// releases is row t of A C^{-1} applied to fresh draws of std z f S / K,
// f = sqrt(sum_{k<Band} c_k^2). A user whose participations are at least
// Band releases apart gets, for m of them, exactly the Gaussian mechanism
// of multiplier z / sqrt(m), as with independent noise; the agent runs it
// with that pattern, which its ledger enforces.
const NoiseBandedSqrt Noise = 3

func init() { register(NoiseBandedSqrt, bandedNoise{}) }

type bandedNoise struct{}

func (bandedNoise) Name() string  { return "bandmf" }
func (bandedNoise) Online() bool  { return true }
func (bandedNoise) Horizon() bool { return false }
func (bandedNoise) Fresh() bool   { return false }

func (bandedNoise) CheckParams(c DPConfig) []error {
	errs := noHorizon(c)
	if c.Band < 1 || c.Band > bandsens.MaxBand {
		return append(errs, NoiseFields.Errorf("{Band} %d: {Noise} bandmf needs 1 to %d bands", c.Band, bandsens.MaxBand))
	}
	if c.UsersPerUpdate >= 1 {
		if err := bandmf.CheckRounding(bandsens.SqrtCoefficients(c.Band), c.UsersPerUpdate); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// Factor is sqrt(sum_{k<Band} c_k^2), every column's norm.
func (bandedNoise) Factor(c DPConfig) float64 {
	return bandsens.ColumnNorm(bandsens.SqrtCoefficients(c.Band))
}

// GridRows is the band: one update enters Band rows.
func (bandedNoise) GridRows(c DPConfig) int { return c.Band }

// RoundingExtra is 0: bandmf.CheckRounding (in CheckParams) bounds the
// stream's own rounding.
func (bandedNoise) RoundingExtra(DPConfig) float64 { return 0 }

// Separation is the band: participations at least Band apart have
// disjoint columns (docs/privacy.md, section 3).
func (bandedNoise) Separation(c DPConfig) int { return c.Band }

// WindowSensitivity: the stream is unbounded, so every window is the same,
// with whole columns (an upper bound when the run ends before the window's
// last columns are complete), O(M + Band). The sum of M consecutive
// columns of C has entry P(d) - P(d-M) in its d-th row, d = 0 .. M+b-2,
// where P(d) = c_0 + ... + c_min(d, b-1) (P(d) = 0 for d < 0); rho is its
// norm over the column norm f, inflated by sensitivitySlack.
func (bandedNoise) WindowSensitivity(c DPConfig, M, _ int) (float64, error) {
	b := c.Band
	if b < 1 || b > bandsens.MaxBand {
		return 0, fmt.Errorf("policy: window sensitivity: band %d, want 1 to %d", b, bandsens.MaxBand)
	}
	if M == 1 {
		return 1, nil
	}
	coef := bandsens.SqrtCoefficients(b)
	pre := make([]float64, b)
	for j, v := range coef {
		pre[j] = v
		if j > 0 {
			pre[j] += pre[j-1]
		}
	}
	P := func(d int) float64 {
		if d < 0 {
			return 0
		}
		return pre[min(d, b-1)]
	}
	ss := 0.0
	for d := range M + b - 1 {
		v := P(d) - P(d-M)
		ss += v * v
	}
	return math.Sqrt(ss) / bandsens.ColumnNorm(coef) * sensitivitySlack, nil
}

// UserSensitivity is sqrt(k): participations at least Band apart have
// columns of disjoint supports, so the exact program
// (bandsens.Sensitivities) gives sqrt(k) up to its rounding slack, which
// is checked: an answer beyond it is an error.
func (bandedNoise) UserSensitivity(c DPConfig, k int) (float64, error) {
	rho, err := bandsens.Sensitivities(bandsens.SqrtCoefficients(c.Band), k, c.Band)
	if err != nil {
		return 0, err
	}
	if r := math.Sqrt(float64(k)); !(rho[k] >= r*(1-1e-9) && rho[k] <= r*bandsens.Slack*(1+1e-9)) {
		return 0, fmt.Errorf("bandmf sensitivity of %d updates %v, want sqrt(k) = %v", k, rho[k], r)
	}
	return math.Sqrt(float64(k)), nil
}

func (bandedNoise) NewNoise(c DPConfig, n int, std float64, rng *rand.Rand) (ReleaseNoise, error) {
	if std == 0 {
		rng = nil
	}
	return bandmf.NewStream(bandsens.SqrtCoefficients(c.Band), n, std, rng)
}

// Entry records the stream's Correlation: separation Band, at most k
// participations per user.
func (bandedNoise) Entry(c DPConfig, k int, streamStart uint64) (EntryNoise, error) {
	corr, err := bandsens.NewCorrelation(c.Band, c.Band, k, streamStart)
	if err != nil {
		return EntryNoise{}, err
	}
	return EntryNoise{
		Text:        fmt.Sprintf("banded square-root correlated Gaussian noise (%d bands, z f S / K, f = %.6g)", c.Band, corr.Factor),
		Correlation: corr,
	}, nil
}

func (m bandedNoise) Describe(c DPConfig, k int) string {
	rho, err := m.UserSensitivity(c, k)
	if err != nil {
		return fmt.Sprintf("bandmf noise (%d bands): %v", c.Band, err)
	}
	return fmt.Sprintf("bandmf noise (%d bands: a user's updates at least %d apart, at most %d; their sensitivity %.6g x one update's)", c.Band, c.Band, k, rho)
}
