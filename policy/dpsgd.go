package policy

import (
	"dprl/noise"

	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"dprl/sims"
)

// The DP-SGD baselines (Doulazmi & Odonnat 2023, "Differential
// privacy in reinforcement learning"): REINFORCE and DQN whose gradient steps
// are DP-SGD steps (Abadi et al. 2016): per-unit gradients clipped to L2 norm
// C by ghost clipping (GhostClipper), summed, Gaussian noise N(0, z^2 C^2 I)
// added, divided by the (expected) batch size, then an Adam step.
const (
	// AlgoDPSGDReinforce names DP-SGD REINFORCE (privacy unit: one episode).
	AlgoDPSGDReinforce = "dpsgd-reinforce"
	// AlgoDPSGDDQN names DP-SGD DQN (privacy unit: one transition).
	AlgoDPSGDDQN = "dpsgd-dqn"
)

// ErrUnknownDPSGDAlgo is returned by TrainDPSGD for an algorithm name other
// than AlgoDPSGDReinforce and AlgoDPSGDDQN.
var ErrUnknownDPSGDAlgo = errors.New("policy: unknown dp-sgd algorithm")

// DPSGDPrivacy holds the privacy parameters of a DP-SGD run. No field has a
// zero-means-default: every one must be set.
type DPSGDPrivacy struct {
	// ClipNorm C: each unit's gradient is scaled to L2 norm at most C.
	// Finite and > 0.
	ClipNorm float64
	// NoiseMultiplier z: the noise added to the clipped sum has standard
	// deviation z*C per coordinate. Finite and > 0 (there is no non-private
	// mode; use PPO for a non-private baseline).
	NoiseMultiplier float64
	// Delta of the reported (epsilon, delta) guarantee, in (0, 1).
	Delta float64
}

// Validate reports every invalid field.
func (p DPSGDPrivacy) Validate() error {
	var errs []error
	if !(p.ClipNorm > 0) || math.IsInf(p.ClipNorm, 0) {
		errs = append(errs, fmt.Errorf("policy: dp-sgd: clip norm C = %v, must be finite and > 0", p.ClipNorm))
	}
	if !(p.NoiseMultiplier > 0) || math.IsInf(p.NoiseMultiplier, 0) {
		errs = append(errs, fmt.Errorf("policy: dp-sgd: noise multiplier z = %v, must be finite and > 0", p.NoiseMultiplier))
	}
	if !(p.Delta > 0 && p.Delta < 1) {
		errs = append(errs, fmt.Errorf("policy: dp-sgd: delta = %v, must be in (0, 1)", p.Delta))
	}
	return errors.Join(errs...)
}

// DPSGDConfig configures TrainDPSGD: the network and evaluation shared by
// both algorithms, and each algorithm's own settings (only the one named by
// the algo argument is used, but Validate checks both).
type DPSGDConfig struct {
	// Hidden are the widths of the tanh hidden layers, each >= 1; at least
	// one. Default [64, 64].
	Hidden []int
	// EvalEpisodes is how many greedy episodes evaluate the final network,
	// >= 1. Default 20.
	EvalEpisodes int
	// Reinforce configures AlgoDPSGDReinforce.
	Reinforce ReinforceConfig
	// DQN configures AlgoDPSGDDQN.
	DQN DQNConfig
}

// DefaultDPSGDConfig returns a fresh configuration with hidden layers
// [64, 64], 20 evaluation episodes, DefaultReinforceConfig and
// DefaultDQNConfig.
func DefaultDPSGDConfig() DPSGDConfig {
	return DPSGDConfig{
		Hidden:       []int{64, 64},
		EvalEpisodes: 20,
		Reinforce:    DefaultReinforceConfig(),
		DQN:          DefaultDQNConfig(),
	}
}

// Validate reports every invalid field.
func (c DPSGDConfig) Validate() error {
	var errs []error
	if len(c.Hidden) == 0 {
		errs = append(errs, errors.New("policy: dp-sgd: no hidden layers"))
	}
	for i, h := range c.Hidden {
		if h < 1 {
			errs = append(errs, fmt.Errorf("policy: dp-sgd: hidden[%d] = %d, must be >= 1", i, h))
		}
	}
	if c.EvalEpisodes < 1 {
		errs = append(errs, fmt.Errorf("policy: dp-sgd: eval episodes %d, must be >= 1", c.EvalEpisodes))
	}
	errs = append(errs, c.Reinforce.Validate(), c.DQN.Validate())
	return errors.Join(errs...)
}

// DPSGDProgress is reported to the progress callback of TrainDPSGD. The
// returns are those of raw training episodes: diagnostics for the operator,
// not a private release.
type DPSGDProgress struct {
	Algo     string  // AlgoDPSGDReinforce or AlgoDPSGDDQN
	Updates  int     // DP-SGD steps taken so far
	Episodes int     // training episodes finished so far
	Steps    int     // environment steps so far
	Return   float64 // mean undiscounted return of the latest training episodes
	Epsilon  float64 // privacy spent so far (at the configured delta; DQN: by the RDP accountant, see DQNConfig.EpsilonRDP)
}

// DPSGDResult is the outcome of TrainDPSGD.
type DPSGDResult struct {
	// Algo is AlgoDPSGDReinforce or AlgoDPSGDDQN.
	Algo string `json:"algo"`
	// EvalMean and EvalStd are the mean and standard deviation of the
	// undiscounted return of EvalEpisodes greedy episodes of the final
	// network.
	EvalMean float64 `json:"eval_mean"`
	EvalStd  float64 `json:"eval_std"`
	// Epsilon and Delta: the run is (Epsilon, Delta)-DP for one PrivacyUnit
	// ("episode" or "transition"), by the Accountant method ("analytic" for
	// REINFORCE, "pld" for DQN), with noise multiplier NoiseMultiplier and
	// clip norm ClipNorm. RDPEpsilon is DQN's cross-check: the RDP
	// accountant's epsilon for the same run (looser; 0 for REINFORCE).
	Epsilon         float64 `json:"epsilon"`
	Delta           float64 `json:"delta"`
	NoiseMultiplier float64 `json:"z"`
	ClipNorm        float64 `json:"clip_norm"`
	PrivacyUnit     string  `json:"privacy_unit"`
	Accountant      string  `json:"accountant"`
	RDPEpsilon      float64 `json:"rdp_epsilon,omitempty"`
	// SampleRate is the Poisson rate q of the DQN minibatches (1 for
	// REINFORCE, whose episodes are each used once).
	SampleRate float64 `json:"q"`
	// Updates, Episodes and Steps count DP-SGD steps, training episodes and
	// environment steps; Seconds is the wall time including evaluation.
	Updates  int     `json:"updates"`
	Episodes int     `json:"episodes"`
	Steps    int     `json:"steps"`
	Seconds  float64 `json:"seconds"`
	// Sizes are the MLP layer widths (observation dim, hidden..., actions)
	// and Params the trained flat parameter vector (logits for REINFORCE,
	// Q-values for DQN).
	Sizes  []int     `json:"sizes"`
	Params []float64 `json:"-"`
}

// TrainDPSGD trains a DP-SGD baseline, algo AlgoDPSGDReinforce or
// AlgoDPSGDDQN, on environments from envFactory (discrete actions, box
// observations), and evaluates the final network greedily on a fresh
// instance. Every random draw (initialisation, environment resets and
// transitions, actions, minibatches, noise) comes from rng; for a release,
// pass a generator seeded from a secure source. progress, if not nil, is
// called after each update (REINFORCE) or each training episode (DQN). ctx
// is checked between updates and episodes; on cancellation TrainDPSGD
// returns ctx.Err().
func TrainDPSGD(ctx context.Context, algo string, envFactory func() sims.Env, cfg DPSGDConfig, rng *rand.Rand, progress func(DPSGDProgress)) (DPSGDResult, error) {
	if rng == nil {
		return DPSGDResult{}, errors.New("policy: dp-sgd: nil rng")
	}
	if envFactory == nil {
		return DPSGDResult{}, errors.New("policy: dp-sgd: nil env factory")
	}
	if algo != AlgoDPSGDReinforce && algo != AlgoDPSGDDQN {
		return DPSGDResult{}, fmt.Errorf("%w %q (valid: %s, %s)", ErrUnknownDPSGDAlgo, algo, AlgoDPSGDReinforce, AlgoDPSGDDQN)
	}
	if err := cfg.Validate(); err != nil {
		return DPSGDResult{}, err
	}
	env := envFactory()
	obsDim, nAct, err := discreteEnvDims(env)
	if err != nil {
		return DPSGDResult{}, err
	}
	sizes := append(append([]int{obsDim}, cfg.Hidden...), nAct)
	m, err := NewMLP(sizes...)
	if err != nil {
		return DPSGDResult{}, err
	}
	start := time.Now()
	var res DPSGDResult
	switch algo {
	case AlgoDPSGDReinforce:
		res, err = trainReinforce(ctx, env, m, cfg.Reinforce, rng, progress)
	case AlgoDPSGDDQN:
		res, err = trainDQN(ctx, env, m, cfg.DQN, rng, progress)
	}
	if err != nil {
		return DPSGDResult{}, err
	}
	res.Algo, res.Sizes = algo, sizes
	res.EvalMean, res.EvalStd = EvalGreedy(envFactory(), m, res.Params, cfg.EvalEpisodes, rng)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

func discreteEnvDims(env sims.Env) (obsDim, nAct int, err error) {
	os, as := env.ObservationSpace(), env.ActionSpace()
	if os.Kind != sims.Box || os.Dim() < 1 {
		return 0, 0, fmt.Errorf("policy: dp-sgd: observation space %v, want a box", os.Kind)
	}
	if as.Kind != sims.Discrete || as.N < 2 {
		return 0, 0, fmt.Errorf("policy: dp-sgd: action space %v with %d actions, want discrete with >= 2", as.Kind, as.N)
	}
	return os.Dim(), as.N, nil
}

// EvalGreedy runs episodes episodes on env, acting by the argmax of the
// network's outputs (logits or Q-values), and returns the mean and standard
// deviation of their undiscounted returns. Resets draw from rng.
func EvalGreedy(env sims.Env, m *MLP, params []float64, episodes int, rng *rand.Rand) (mean, std float64) {
	obs := make([]float64, m.In())
	out := make([]float64, m.Out())
	rets := make([]float64, episodes)
	for e := range rets {
		env.Reset(rng, obs)
		for {
			m.Forward(out, params, obs)
			r, term, trunc := env.Step(sims.Action{Index: argmax(out)}, obs)
			rets[e] += r
			if term || trunc {
				break
			}
		}
	}
	for _, r := range rets {
		mean += r
	}
	mean /= float64(episodes)
	for _, r := range rets {
		std += (r - mean) * (r - mean)
	}
	return mean, math.Sqrt(std / float64(episodes))
}

func argmax(x []float64) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// addNoiseAndScale sets grad = (grad + N(0, sd^2 I)) * scale with the exact
// sampler g (no noise when sd = 0): the noised sum is exactly a Gaussian
// mechanism on a data-independent grid, and the scaling post-processing.
func addNoiseAndScale(grad []float64, sd, scale float64, g *noise.Gaussian) {
	if sd > 0 {
		g.Add(grad, sd)
	}
	for i, v := range grad {
		grad[i] = v * scale
	}
}

// samplerFor returns *cache, a sampler drawing from rng, replacing it when rng
// changes (so a step that is handed its generator allocates only once).
func samplerFor(cache **noise.Gaussian, from **rand.Rand, rng *rand.Rand) *noise.Gaussian {
	if *cache == nil || *from != rng {
		*cache, *from = noise.NewGaussian(rng), rng
	}
	return *cache
}
