package primorl

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"dprl/policy"
)

// ModelConfig is the ensemble's architecture and loss.
type ModelConfig struct {
	// Ensemble is the number of models N >= 1 (the paper: 3 for Pendulum,
	// 5 for cart-pole).
	Ensemble int `flag:"ensemble" usage:"models in the ensemble N"`
	// Hidden lists the Swish hidden widths (Pendulum: 64, 64; cart-pole:
	// 128, 128).
	Hidden []int `flag:"model-hidden" usage:"hidden widths of each model (Swish)"`
	// MaxLogVar and MinLogVar softly bound the predicted log-variance of the
	// scaled targets, MinLogVar < MaxLogVar (default 0.5 and -10): it lies in
	// [MinLogVar, MaxLogVar + log(1 + exp(MinLogVar - MaxLogVar))].
	MaxLogVar, MinLogVar float64
	// WeightDecay is the L2 coefficient on the weight matrices (not the
	// biases), >= 0 (default 2.5e-5, MBPO's first layer).
	WeightDecay float64 `flag:"weight-decay" usage:"L2 coefficient on the models' weights"`
}

// DefaultModelConfig returns the paper's Pendulum ensemble: 3 models of
// 2 x 64 Swish units.
func DefaultModelConfig() ModelConfig {
	return ModelConfig{Ensemble: 3, Hidden: []int{64, 64}, MaxLogVar: 0.5, MinLogVar: -10, WeightDecay: 2.5e-5}
}

// Validate reports every invalid field.
func (c ModelConfig) Validate() error {
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf("primorl: "+f, a...)) }
	if c.Ensemble < 1 {
		bad("ensemble size %d, must be >= 1", c.Ensemble)
	}
	if len(c.Hidden) == 0 {
		bad("no hidden layers")
	}
	for i, h := range c.Hidden {
		if h < 1 {
			bad("hidden[%d] = %d, must be >= 1", i, h)
		}
	}
	if !(c.MinLogVar < c.MaxLogVar) || math.IsInf(c.MinLogVar, 0) || math.IsInf(c.MaxLogVar, 0) {
		bad("log-variance bounds [%v, %v], want finite with min < max", c.MinLogVar, c.MaxLogVar)
	}
	if !(c.WeightDecay >= 0) || math.IsInf(c.WeightDecay, 0) {
		bad("weight decay %v, must be finite and >= 0", c.WeightDecay)
	}
	return errors.Join(errs...)
}

// Ensemble is N Gaussian dynamics models over one flat parameter vector:
// model i's parameters are params[i P : (i+1) P], laid out as a policy.MLP.
// It holds workspaces: not safe for concurrent use.
type Ensemble struct {
	cfg     ModelConfig
	in, out int
	net     *policy.MLP
	per     int      // parameters per model
	layers  [][2]int // each layer's [start, end) within a model (weights then biases)
	weights [][2]int // each layer's weight matrix [start, end)

	raw, dRaw []float64 // network outputs and their gradient (rows x 2 out)
}

// NewEnsemble returns an ensemble for inputs of dimension in (scaled s and
// a) and targets of dimension out (scaled s' - s and r).
func NewEnsemble(cfg ModelConfig, in, out int) (*Ensemble, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if in < 1 || out < 1 {
		return nil, fmt.Errorf("primorl: input %d and target %d dimensions, want >= 1", in, out)
	}
	sizes := append(append([]int{in}, cfg.Hidden...), 2*out)
	net, err := policy.NewMLPActivation(policy.Swish, sizes...)
	if err != nil {
		return nil, err
	}
	e := &Ensemble{cfg: cfg, in: in, out: out, net: net, per: net.NumParams()}
	off := 0
	for l := 0; l+1 < len(sizes); l++ {
		w := sizes[l] * sizes[l+1]
		e.weights = append(e.weights, [2]int{off, off + w})
		e.layers = append(e.layers, [2]int{off, off + w + sizes[l+1]})
		off += w + sizes[l+1]
	}
	return e, nil
}

// workspace returns an ensemble of e's shape with its own scratch, to
// predict with e's parameters concurrently with e.
func (e *Ensemble) workspace() *Ensemble {
	w, err := NewEnsemble(e.cfg, e.in, e.out)
	if err != nil {
		panic(err) // e's own configuration
	}
	return w
}

// NumParams returns the length of the ensemble's parameter vector.
func (e *Ensemble) NumParams() int { return e.cfg.Ensemble * e.per }

// Models returns N.
func (e *Ensemble) Models() int { return e.cfg.Ensemble }

// Layers returns the number of layers L of each model.
func (e *Ensemble) Layers() int { return len(e.layers) }

// In and Out return the input and target dimensions.
func (e *Ensemble) In() int { return e.in }

// Out returns the target dimension.
func (e *Ensemble) Out() int { return e.out }

// Model returns model i's block of params.
func (e *Ensemble) Model(params []float64, i int) []float64 {
	return params[i*e.per : (i+1)*e.per]
}

// Init initialises every model from rng (orthogonal weights, zero biases;
// the output layer with gain 1).
func (e *Ensemble) Init(params []float64, rng *rand.Rand) {
	if len(params) != e.NumParams() {
		panic(fmt.Sprintf("primorl: params %d, want %d", len(params), e.NumParams()))
	}
	for i := range e.cfg.Ensemble {
		e.net.Init(e.Model(params, i), rng, 1)
	}
}

func (e *Ensemble) reserve(n int) {
	if len(e.raw) < n*2*e.out {
		e.raw = make([]float64, n*2*e.out)
		e.dRaw = make([]float64, n*2*e.out)
		e.net.Reserve(n)
	}
}

// logVar bounds a raw output: max - softplus(max - raw), then min +
// softplus(that - min); it also returns d logVar / d raw.
func (e *Ensemble) logVar(raw float64) (v, dv float64) {
	hi, lo := e.cfg.MaxLogVar, e.cfg.MinLogVar
	a := hi - softplus(hi-raw)
	da := sigmoid(hi - raw)
	v = lo + softplus(a-lo)
	return v, da * sigmoid(a-lo)
}

func softplus(x float64) float64 {
	if x > 30 {
		return x
	}
	if x < -30 {
		return math.Exp(x)
	}
	return math.Log1p(math.Exp(x))
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// Predict writes model i's predicted means and log-variances of the n rows
// of x (n x In, scaled) into mean and logVar (n x Out each).
func (e *Ensemble) Predict(params []float64, i int, x []float64, n int, mean, logVar []float64) {
	e.reserve(n)
	O := e.out
	raw := e.raw[:n*2*O]
	e.net.ForwardBatch(raw, e.Model(params, i), x[:n*e.in], n)
	for r := range n {
		for j := range O {
			mean[r*O+j] = raw[r*2*O+j]
			logVar[r*O+j], _ = e.logVar(raw[r*2*O+O+j])
		}
	}
}

// LossGrad returns model i's loss (the mean Gaussian NLL over the n rows,
// plus the weight decay term) on inputs x and targets y (scaled), and, if
// grad is not nil, writes its gradient with respect to model i's
// parameters into grad (len NumParams()/N). It allocates nothing once its
// workspaces have grown to n rows.
func (e *Ensemble) LossGrad(params []float64, i int, x, y []float64, n int, grad []float64) float64 {
	e.reserve(n)
	O := e.out
	theta := e.Model(params, i)
	raw, dRaw := e.raw[:n*2*O], e.dRaw[:n*2*O]
	e.net.ForwardBatch(raw, theta, x[:n*e.in], n)
	inv := 1 / float64(n)
	var loss float64
	for r := range n {
		for j := range O {
			mu := raw[r*2*O+j]
			v, dv := e.logVar(raw[r*2*O+O+j])
			diff := y[r*O+j] - mu
			prec := math.Exp(-v)
			loss += 0.5 * (diff*diff*prec + v) * inv
			dRaw[r*2*O+j] = -diff * prec * inv
			dRaw[r*2*O+O+j] = 0.5 * (1 - diff*diff*prec) * dv * inv
		}
	}
	wd := e.cfg.WeightDecay
	for _, w := range e.weights {
		for _, p := range theta[w[0]:w[1]] {
			loss += 0.5 * wd * p * p
		}
	}
	if grad == nil {
		return loss
	}
	e.net.Backward(grad, theta, dRaw)
	if wd > 0 {
		for _, w := range e.weights {
			for k := w[0]; k < w[1]; k++ {
				grad[k] += wd * theta[k]
			}
		}
	}
	return loss
}

// ClipMode is EnsembleClip's projection (Algorithm 3).
type ClipMode int

const (
	// ClipFlat bounds each model's delta by C/sqrt(N).
	ClipFlat ClipMode = iota
	// ClipPerLayer bounds each layer (weights and biases) of each model by
	// C/sqrt(N L).
	ClipPerLayer
)

// String returns "flat" or "per-layer".
func (m ClipMode) String() string {
	if m == ClipPerLayer {
		return "per-layer"
	}
	return "flat"
}

// ParseClipMode returns the ClipMode named s (as String names it).
func ParseClipMode(s string) (ClipMode, error) {
	for _, m := range []ClipMode{ClipFlat, ClipPerLayer} {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("%q: want per-layer or flat", s)
}

// Clip projects the ensemble delta (len NumParams()) in place so that its
// norm is at most C: EnsembleClip. A non-finite delta becomes zero (it
// contributes nothing rather than breaking the bound).
func (e *Ensemble) Clip(delta []float64, C float64, mode ClipMode) {
	N := float64(e.cfg.Ensemble)
	for i := range e.cfg.Ensemble {
		d := e.Model(delta, i)
		if mode == ClipFlat {
			project(d, C/math.Sqrt(N))
			continue
		}
		bound := C / math.Sqrt(N*float64(len(e.layers)))
		for _, l := range e.layers {
			project(d[l[0]:l[1]], bound)
		}
	}
}

// project scales v onto the ball of radius r if it lies outside, to a norm
// a relative (len(v)+2) 2^-52 inside it: that margin exceeds the rounding
// error of the computed norm (at most len(v)/2 + 1 units of 2^-53) and of
// the scaling (one unit), so the stored vector's exact norm is at most r. A
// non-finite v becomes zero.
func project(v []float64, r float64) {
	var s float64
	for _, x := range v {
		s += x * x
	}
	n := math.Sqrt(s)
	if math.IsNaN(n) || math.IsInf(n, 0) {
		clear(v)
		return
	}
	if n > r {
		f := r / n * (1 - float64(len(v)+2)*0x1p-52)
		for i := range v {
			v[i] *= f
		}
	}
}
