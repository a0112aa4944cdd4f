package bandsens

import (
	"fmt"
	"math"
)

// NoiseBandedSqrt names the banded square-root factor in
// Correlation.Noise.
const NoiseBandedSqrt = "banded_sqrt"

// MaxParticipations bounds Correlation.MaxParticipations.
const MaxParticipations = 1 << 20

// Correlation describes the correlated noise of a release (the ledger's
// Entry.Correlation): public parameters, which the ledger recomputes when
// it records and verifies the release. Why a release records them:
// docs/privacy.md, section 3.
type Correlation struct {
	// Noise names the factor: NoiseBandedSqrt.
	Noise string `json:"noise"`
	// Band is the number of bands b of the factor C.
	Band int `json:"band"`
	// MinSeparation: two participations of one user are at least this many
	// releases apart; at least Band.
	MinSeparation int `json:"min_separation"`
	// MaxParticipations is the most releases one user takes part in
	// (counting every release of the ledger).
	MaxParticipations int `json:"max_participations"`
	// StreamStart is the version of the stream's first release.
	StreamStart uint64 `json:"stream_start"`
	// Factor is ||c||, the column norm the noise is normalised by (sigma
	// = z Factor S / K).
	Factor float64 `json:"factor"`
	// Sensitivity is rho(MaxParticipations), the sensitivity of a user
	// with the most participations in units of one participation's
	// (Sensitivities): such a user gets the Gaussian mechanism of
	// multiplier Z / Sensitivity.
	Sensitivity float64 `json:"sensitivity"`
}

// NewCorrelation returns the Correlation of a banded square-root stream of
// band bands started at version streamStart, whose users take part at most
// k times, any two at least minSep releases apart, with its factor and
// sensitivity computed; it fails for parameters Check refuses.
func NewCorrelation(band, minSep, k int, streamStart uint64) (*Correlation, error) {
	c := &Correlation{Noise: NoiseBandedSqrt, Band: band, MinSeparation: minSep, MaxParticipations: k, StreamStart: streamStart}
	if band < 1 || band > MaxBand || k < 1 || k > MaxParticipations || minSep < band {
		return nil, c.Check(max(streamStart, 1), 0)
	}
	coef := SqrtCoefficients(band)
	rho, err := Sensitivities(coef, k, minSep)
	if err != nil {
		return nil, err
	}
	c.Factor, c.Sensitivity = ColumnNorm(coef), rho[k]
	if err := c.Check(max(streamStart, 1), 0); err != nil {
		return nil, err
	}
	return c, nil
}

// Check validates the parameters of a release of version version and
// recomputes Factor and Sensitivity (tol 0: exactly as this code computes
// them).
func (c *Correlation) Check(version uint64, tol float64) error {
	switch {
	case c.Noise != NoiseBandedSqrt:
		return fmt.Errorf("correlated noise %q, want %q", c.Noise, NoiseBandedSqrt)
	case c.Band < 1 || c.Band > MaxBand:
		return fmt.Errorf("%d bands, want 1 to %d", c.Band, MaxBand)
	case c.MinSeparation < c.Band:
		return fmt.Errorf("minimum separation %d below the %d bands: a user's participations would share rows of the factor, and the charge of 1/z^2 per release would understate their sensitivity", c.MinSeparation, c.Band)
	case c.MaxParticipations < 1 || c.MaxParticipations > MaxParticipations:
		return fmt.Errorf("at most %d participations, want 1 to %d", c.MaxParticipations, MaxParticipations)
	case c.StreamStart < 1 || c.StreamStart > version:
		return fmt.Errorf("stream start %d for version %d", c.StreamStart, version)
	}
	coef := SqrtCoefficients(c.Band)
	f := ColumnNorm(coef)
	rho, err := Sensitivities(coef, c.MaxParticipations, c.MinSeparation)
	if err != nil {
		return err
	}
	far := func(got, want float64) bool { return !(math.Abs(got-want) <= tol*want) }
	if far(c.Factor, f) || far(c.Sensitivity, rho[c.MaxParticipations]) {
		return fmt.Errorf("factor %v and sensitivity %v recorded, %v and %v recomputed", c.Factor, c.Sensitivity, f, rho[c.MaxParticipations])
	}
	// With MinSeparation >= Band the sensitivity is sqrt(k): the users'
	// counters compose 1/z^2 per release.
	if k := float64(c.MaxParticipations); !(math.Abs(rho[c.MaxParticipations]-math.Sqrt(k)) <= 1e-5*math.Sqrt(k)) {
		return fmt.Errorf("sensitivity %v of %d participations at separation %d, want sqrt(k)", rho[c.MaxParticipations], c.MaxParticipations, c.MinSeparation)
	}
	return nil
}

// SameStream reports whether two releases' correlation parameters belong
// to one stream.
func (c *Correlation) SameStream(o *Correlation) bool {
	return o != nil && c.Noise == o.Noise && c.Band == o.Band && c.MinSeparation == o.MinSeparation &&
		c.MaxParticipations == o.MaxParticipations && c.StreamStart == o.StreamStart
}
