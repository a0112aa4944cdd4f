package noise

// The exact samplers, by the names a ledger entry records for the noise it
// paid for (ledger.Entry.Sampler). Each draws its law exactly (docs/
// privacy.md, section 2), so the guarantee of a release does not depend on
// which of them ran; the record says which code path drew the noise.
const (
	// SamplerGaussianTable is NewGaussian's: the discrete Gaussian on the
	// grid, |N| binned against certified 128-bit enclosures of the normal
	// distribution function, rejection within a bin, Karney's algorithm
	// beyond 8 standard deviations.
	SamplerGaussianTable = "gaussian-table-v1"
	// SamplerGaussianKarney is NewGaussianReference's: Karney's algorithm
	// N for every draw.
	SamplerGaussianKarney = "gaussian-karney-v1"
	// SamplerLaplace is DiscreteLaplace (Canonne, Kamath & Steinke 2020,
	// Algorithm 2).
	SamplerLaplace = "laplace-discrete-v1"
)

// ExactSampler reports whether name is one of the exact samplers above.
func ExactSampler(name string) bool {
	switch name {
	case SamplerGaussianTable, SamplerGaussianKarney, SamplerLaplace:
		return true
	}
	return false
}

// Sampler returns the name of g's sampler (SamplerGaussianTable, or
// SamplerGaussianKarney for NewGaussianReference's).
func (g *Gaussian) Sampler() string {
	if g.ref {
		return SamplerGaussianKarney
	}
	return SamplerGaussianTable
}
