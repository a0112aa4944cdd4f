package policy

import (
	"math"
	"math/rand/v2"

	"dprl/noise"
)

// NoiseIndependent draws fresh noise N(0, (zS/K)^2 I) for every release
// (Algorithm 2 of "Differentially Private Policy Gradient"): after t
// releases the parameters carry t draws. A contributor in m releases gets
// their m-fold composition, the Gaussian mechanism of multiplier
// z / sqrt(m) (Dong, Roth and Su 2022, "Gaussian Differential Privacy",
// Corollary 3.3).
const NoiseIndependent Noise = 0

func init() { register(NoiseIndependent, independentNoise{}) }

type independentNoise struct{}

func (independentNoise) Name() string  { return "independent" }
func (independentNoise) Online() bool  { return true }
func (independentNoise) Horizon() bool { return false }
func (independentNoise) Fresh() bool   { return true }

func (independentNoise) CheckParams(c DPConfig) []error {
	return append(noHorizon(c), noBand(c)...)
}

func (independentNoise) Factor(DPConfig) float64        { return 1 }
func (independentNoise) GridRows(DPConfig) int          { return 1 }
func (independentNoise) RoundingExtra(DPConfig) float64 { return 0 }
func (independentNoise) Separation(DPConfig) int        { return 0 }

func (independentNoise) WindowSensitivity(_ DPConfig, M, _ int) (float64, error) {
	return math.Sqrt(float64(M)), nil
}

func (independentNoise) UserSensitivity(_ DPConfig, k int) (float64, error) {
	return math.Sqrt(float64(k)), nil
}

func (independentNoise) NewNoise(_ DPConfig, _ int, std float64, rng *rand.Rand) (ReleaseNoise, error) {
	s := &freshNoise{std: std}
	if rng != nil {
		s.gauss = noise.NewGaussian(rng)
	}
	return s, nil
}

func (independentNoise) Entry(DPConfig, int, uint64) (EntryNoise, error) {
	return EntryNoise{Text: "Gaussian noise (z S / K)"}, nil
}

func (independentNoise) Describe(DPConfig, int) string { return "" }

// freshNoise adds one fresh draw to every release.
type freshNoise struct {
	std   float64
	gauss *noise.Gaussian // exact sampler; nil without a noise source
}

func (s *freshNoise) Release(x, out []float64) {
	copy(out, x)
	if s.std > 0 {
		s.gauss.Add(out, s.std)
	}
}

func (*freshNoise) Commit() {}

// noHorizon reports a Horizon set for a kind without one.
func noHorizon(c DPConfig) []error {
	if c.Horizon != 0 {
		return []error{NoiseFields.Errorf("{Horizon} %d with %v noise: must be 0 (tree and sqrt noise only)", c.Horizon, c.Noise)}
	}
	return nil
}

// noBand reports a Band set for a kind without bands.
func noBand(c DPConfig) []error {
	if c.Band != 0 {
		return []error{NoiseFields.Errorf("{Band} %d: bands are a setting of {Noise} bandmf, not %v", c.Band, c.Noise)}
	}
	return nil
}
