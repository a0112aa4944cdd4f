package accountant

import (
	"dprl/internal/fielderr"
	"fmt"
	"io"
)

// ConfigError is an error of a configuration (Mechanism, EpsilonConfig,
// NoiseConfig): parameters that cannot be accounted as given. Its message
// names the configuration's fields ({Q}); Render names them as the caller
// exposes them (a command line renders {Q} as --q). It is the one typed
// configuration error of the module (fielderr.Error).
type ConfigError = fielderr.Error

// configFields are the fields a ConfigError may name.
var configFields = fielderr.Fields{"Method", "Q", "Steps"}

// configErrorf returns a ConfigError; {Field} in format names a field.
func configErrorf(format string, args ...any) error { return configFields.Errorf(format, args...) }

// asConfig marks a non-nil err as an error of the configuration.
func asConfig(err error) error {
	if err == nil {
		return nil
	}
	return configFields.Wrap(err)
}

// Mechanism is a Gaussian mechanism to account for: applied to a Poisson
// subsample with rate Q and composed over Steps runs, with the accounting
// method by name.
type Mechanism struct {
	// Method is "analytic", "rdp", "pld", "zhao" or "classic"; "" picks
	// the default: analytic for one plain Gaussian, rdp when Composed.
	Method string `flag:"method" usage:"analytic, rdp, pld, zhao or classic (default analytic for one Gaussian, rdp with --q/--steps)"`
	// Q is the Poisson sampling rate, 0 < Q <= 1 (1: no subsampling).
	Q float64 `flag:"q" default:"1" usage:"Poisson sampling rate, 0 < q <= 1 (1: no subsampling)"`
	// Steps is the number of compositions, >= 1.
	Steps int `flag:"steps" default:"1" usage:"number of compositions of the mechanism, >= 1"`
	// Composed says the mechanism was described as subsampled or composed
	// (the caller set Q or Steps, even to 1), which makes rdp the default.
	Composed bool
}

// Accountant returns the accountant for the mechanism, refusing a method
// that cannot bound it: analytic is exact only without subsampling, and the
// closed forms (classic, zhao) cover one plain Gaussian mechanism. Every
// error is a *ConfigError. The ranges of Q and Steps are checked with the
// rest of the mechanism's parameters (EpsilonConfig, NoiseConfig).
func (m Mechanism) Accountant() (Accountant, error) {
	meth := MethodAnalytic
	if m.Composed {
		meth = MethodRDP
	}
	if m.Method != "" {
		var err error
		if meth, err = ParseMethod(m.Method); err != nil {
			return nil, configErrorf("{Method}: %w", err)
		}
	}
	if meth == MethodAnalytic && m.Q != 1 {
		return nil, configErrorf("{Method} analytic is exact only without subsampling ({Q} 1); use {Method} pld or rdp for q = %v", m.Q)
	}
	if (meth == MethodClassic || meth == MethodZhao) && (m.Q != 1 || m.Steps != 1) {
		return nil, configErrorf("{Method} %s covers one Gaussian mechanism ({Q} 1 {Steps} 1); use analytic, pld or rdp", meth)
	}
	return New(meth)
}

// EpsilonConfig asks for the epsilon of a mechanism with noise multiplier
// Z at Delta ("dprl accountant epsilon").
type EpsilonConfig struct {
	Mechanism
	// Z is the noise multiplier, > 0.
	Z float64 `flag:"z" usage:"noise multiplier, > 0 (required)"`
	// Delta is the target delta, 0 < Delta < 1.
	Delta float64 `flag:"delta" usage:"target delta, 0 < delta < 1 (required)"`
}

// Validate reports, as a *ConfigError, the first problem: the method
// (Mechanism.Accountant), then Q, Z, Steps and Delta.
func (c EpsilonConfig) Validate() error {
	if _, err := c.Accountant(); err != nil {
		return err
	}
	if err := (Event{Q: c.Q, Z: c.Z, Steps: c.Steps}).Validate(); err != nil {
		return asConfig(err)
	}
	return asConfig(checkDelta(c.Delta))
}

// EpsilonResult is the epsilon of a mechanism: an upper bound on the true
// value at Delta.
type EpsilonResult struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	Z       float64 `json:"z"`
	Q       float64 `json:"q"`
	Steps   int     `json:"steps"`
	Method  Method  `json:"method"`
	// Order is the optimal Rényi order (rdp only).
	Order float64 `json:"order,omitempty"`
	// Interval is the privacy loss discretisation interval (pld only).
	Interval float64 `json:"interval,omitempty"`
}

// ComputeEpsilon returns the epsilon of c's mechanism. Errors of the
// configuration (including a closed form outside its validity range) are
// *ConfigErrors.
func ComputeEpsilon(c EpsilonConfig) (EpsilonResult, error) {
	if err := c.Validate(); err != nil {
		return EpsilonResult{}, err
	}
	acc, err := c.Accountant()
	if err != nil {
		return EpsilonResult{}, err
	}
	g, err := acc.Epsilon(c.Delta, Event{Q: c.Q, Z: c.Z, Steps: c.Steps})
	if err != nil {
		return EpsilonResult{}, asConfig(err)
	}
	return EpsilonResult{Epsilon: g.Epsilon, Delta: g.Delta, Z: c.Z, Q: c.Q, Steps: c.Steps, Method: g.Method, Order: g.Order, Interval: g.Interval}, nil
}

// WriteText writes the result as one line.
func (r EpsilonResult) WriteText(w io.Writer) error {
	order := ""
	if r.Order != 0 {
		order = fmt.Sprintf(", optimal order %g", r.Order)
	}
	if r.Interval != 0 {
		order = fmt.Sprintf(", discretisation interval %.3g", r.Interval)
	}
	_, err := fmt.Fprintf(w, "epsilon = %.6g at delta = %g  (z = %g, q = %g, steps = %d, method %s%s)\n", Ceil(r.Epsilon, 6), r.Delta, r.Z, r.Q, r.Steps, r.Method, order)
	return err
}

// NoiseConfig asks for the smallest noise multiplier at which a mechanism
// is (Epsilon, Delta)-DP ("dprl accountant noise").
type NoiseConfig struct {
	Mechanism
	// Epsilon is the target epsilon, > 0.
	Epsilon float64 `flag:"epsilon" usage:"target epsilon, > 0 (required)"`
	// Delta is the target delta, 0 < Delta < 1.
	Delta float64 `flag:"delta" usage:"target delta, 0 < delta < 1 (required)"`
}

// Validate reports, as a *ConfigError, the first problem: the method
// (Mechanism.Accountant), then Epsilon, Delta, Q and Steps.
func (c NoiseConfig) Validate() error {
	if _, err := c.Accountant(); err != nil {
		return err
	}
	if err := checkEpsilon(c.Epsilon); err != nil {
		return asConfig(err)
	}
	return asConfig(validateAll(c.Delta, []Event{{Q: c.Q, Z: 1, Steps: c.Steps}}))
}

// NoiseResult is a calibrated noise multiplier and the epsilon it achieves.
type NoiseResult struct {
	Z        float64 `json:"z"`
	Epsilon  float64 `json:"epsilon"`
	Achieved float64 `json:"achieved_epsilon"`
	Delta    float64 `json:"delta"`
	Q        float64 `json:"q"`
	Steps    int     `json:"steps"`
	Method   Method  `json:"method"`
}

// CalibrateNoise returns the smallest noise multiplier (Calibrate) at which
// c's mechanism is (Epsilon, Delta)-DP, with the epsilon it achieves.
// Errors of the configuration (including a target no multiplier reaches)
// are *ConfigErrors.
func CalibrateNoise(c NoiseConfig) (NoiseResult, error) {
	if err := c.Validate(); err != nil {
		return NoiseResult{}, err
	}
	acc, err := c.Accountant()
	if err != nil {
		return NoiseResult{}, err
	}
	z, err := Calibrate(acc, c.Epsilon, c.Delta, c.Q, c.Steps)
	if err != nil {
		return NoiseResult{}, asConfig(err)
	}
	g, err := acc.Epsilon(c.Delta, Event{Q: c.Q, Z: z, Steps: c.Steps})
	if err != nil {
		return NoiseResult{}, err
	}
	return NoiseResult{Z: z, Epsilon: c.Epsilon, Achieved: g.Epsilon, Delta: c.Delta, Q: c.Q, Steps: c.Steps, Method: acc.Method()}, nil
}

// WriteText writes the result as one line.
func (r NoiseResult) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "z = %.6g  (epsilon %.6g <= %g at delta = %g, q = %g, steps = %d, method %s)\n", r.Z, Ceil(r.Achieved, 6), r.Epsilon, r.Delta, r.Q, r.Steps, r.Method)
	return err
}

// SVTReport is the DataRelease budget split (SVTSplit) with the budget it
// splits. It encodes to JSON as the SVTParams alone.
type SVTReport struct {
	SVTParams
	// Eps1 and Delta1 are the release's budget.
	Eps1   float64 `json:"-"`
	Delta1 float64 `json:"-"`
}

// SVTConfig is a release budget to split (NewSVTReport): the settings of
// dprl accountant svt, one field per flag.
type SVTConfig struct {
	Eps1    float64 `flag:"epsilon" usage:"release budget epsilon eps1 > 0 (required)"`
	Delta1  float64 `flag:"delta" usage:"release delta1, 0 < delta1 < 1 (required)"`
	Queries int     `flag:"queries" usage:"trajectories queried T, >= 1 (required)"`
	MaxLen  int     `flag:"max-len" usage:"maximum trajectory length L, >= 1 (required)"`
	PMin    float64 `flag:"pmin" usage:"floor of every expert's action probabilities, 0 < p_min <= 1 (required)"`
}

// Report returns NewSVTReport of c.
func (c SVTConfig) Report() (SVTReport, error) {
	return NewSVTReport(c.Eps1, c.Delta1, c.Queries, c.MaxLen, c.PMin)
}

// NewSVTReport returns the split of SVTSplit(eps1, delta1, T, L, pMin).
func NewSVTReport(eps1, delta1 float64, T, L int, pMin float64) (SVTReport, error) {
	p, err := SVTSplit(eps1, delta1, T, L, pMin)
	if err != nil {
		return SVTReport{}, err
	}
	return SVTReport{SVTParams: p, Eps1: eps1, Delta1: delta1}, nil
}

// WriteText writes the split, the noise it adds and its composed epsilon.
func (r SVTReport) WriteText(w io.Writer) error {
	split := "the paper's closed form"
	if r.Solved {
		split = "solved: the paper's closed form would compose above eps1"
	}
	_, err := fmt.Fprintf(w, "eps' = %.6g  delta' = %.6g  c_min = %.6g  theta = %.6g\nthreshold draw: theta + %.6g + Lap(%.6g); each prefix query: count + Lap(%.6g)\nT-fold advanced composition: epsilon %.10g <= eps1 %g at delta1 %g (eps' %s)\n",
		r.EpsPrime, r.DeltaPrime, r.CMin, r.Theta, r.NoisyThresholdShift, r.ThresholdScale, r.QueryScale, r.Composed, r.Eps1, r.Delta1, split)
	return err
}
