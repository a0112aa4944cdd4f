package audit

import (
	"context"
	"fmt"
	"math/rand/v2"

	"dprl/ledger/accountant"
	"dprl/offline/primorl"
)

// The primorl audit's public setting: primorlK background trajectories of
// one transition each (scaled input and target of one value), an ensemble
// of primorlModels Gaussian models with one hidden layer of primorlHidden
// Swish units, one round of TDP Model Ensemble Training at q = 1 with the
// paper's per-layer clipping to primorlClip and the fixed denominator q n,
// n = primorlK.
const (
	primorlK      = 16
	primorlModels = 2
	primorlHidden = 2
	primorlClip   = 1.0
)

// PriMORL returns the audit of "dprl offline primorl"'s private model
// training (primorl.Trainer.Round: Poisson sampling of trajectories, each
// sampled trajectory's local training of every model clipped by
// EnsembleClip to C, the sum divided by the fixed q n and noised by the
// exact sampler with std z C / (q n)) at the z the PLD accountant
// calibrates to (eps, delta) for one round at q = 1. The claim is the
// accountant's epsilon at z and mu = 1 / z, for the addition or removal of
// one trajectory.
//
// D is a fixed set of primorlK trajectories plus the canary, D' the set
// alone; both run one Round from the same fixed initial ensemble. The
// canary's target is 1e6 (a local delta far past the clip). The release
// is the ensemble's parameters after the round; Canary.Shift is the same
// round with Z = 0 (the trainer's own noiseless mode).
func PriMORL(eps, delta float64) (Target, error) {
	return primorlTarget(eps, delta, FaultNone)
}

// primorlTarget is PriMORL with the fault applied to the TDPConfig's Z
// and C.
func primorlTarget(eps, delta float64, fault Fault) (Target, error) {
	ns, cs, err := fault.scales()
	if err != nil {
		return Target{}, err
	}
	acc := accountant.PLD{}
	z, err := accountant.Calibrate(acc, eps, delta, 1, 1)
	if err != nil {
		return Target{}, fmt.Errorf("audit: calibrating z: %w", err)
	}
	g, err := acc.Epsilon(delta, accountant.Event{Q: 1, Z: z, Steps: 1})
	if err != nil {
		return Target{}, fmt.Errorf("audit: %w", err)
	}
	mcfg := primorl.DefaultModelConfig()
	mcfg.Ensemble, mcfg.Hidden = primorlModels, []int{primorlHidden}
	e, err := primorl.NewEnsemble(mcfg, 1, 1)
	if err != nil {
		return Target{}, fmt.Errorf("audit: %w", err)
	}
	init := make([]float64, e.NumParams())
	e.Init(init, rand.New(rand.NewPCG(0x7072, 0x696d)))
	cfg := primorl.TDPConfig{Q: 1, Z: z * ns, C: primorlClip * cs, Rounds: 1, LocalEpochs: 1, Batch: 1, LR: 1e-2,
		Clip: primorl.ClipPerLayer, Denominator: primorlK}
	plain := cfg
	plain.Z = 0
	out := primorlBackground()
	in := append(append([]primorl.Trajectory(nil), out...), primorl.Trajectory{X: []float64{1}, Y: []float64{1e6}, N: 1})
	params := make([]float64, e.NumParams())
	release := func(cfg primorl.TDPConfig, withCanary bool, rng *rand.Rand) ([]float64, error) {
		tr, err := primorl.NewTrainer(e, cfg, rng)
		if err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		data := out
		if withCanary {
			data = in
		}
		copy(params, init)
		if err := tr.Train(context.Background(), params, data, rng, nil); err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		return params, nil
	}
	t := Target{Name: fault.name(fmt.Sprintf("primorl (1 round, q = 1, %d models)", primorlModels)), Claim: Claim{Epsilon: g.Epsilon, Delta: delta, Mu: 1 / z}}
	c := Canary{Name: "large target", Release: func(withCanary bool, rng *rand.Rand) ([]float64, error) { return release(cfg, withCanary, rng) }}
	var vs [2][]float64
	for i, withCanary := range []bool{true, false} {
		v, err := release(plain, withCanary, rand.New(rand.NewPCG(0, 0)))
		if err != nil {
			return Target{}, err
		}
		vs[i] = append([]float64(nil), v...)
	}
	c.Shift = shift(vs[0], vs[1])
	t.Canaries = []Canary{c}
	return t, nil
}

// primorlBackground returns the fixed trajectories: one transition each,
// input and target standard normal from a fixed seed.
func primorlBackground() []primorl.Trajectory {
	rng := rand.New(rand.NewPCG(0x7072, 0x6267))
	out := make([]primorl.Trajectory, primorlK)
	for i := range out {
		out[i] = primorl.Trajectory{X: []float64{rng.NormFloat64()}, Y: []float64{rng.NormFloat64()}, N: 1}
	}
	return out
}
