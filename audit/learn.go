package audit

import (
	"fmt"
	"math/rand/v2"

	"dprl/ledger/accountant"
	"dprl/noise"
	"dprl/offline/qlearn"
	"dprl/sessionlog"
	"dprl/sims"
)

// The learn audit's public setting: learnExperts experts of one transition
// each over learnObs-dimensional observations and two actions, a CQL
// Q-network with one hidden layer of learnHidden units, expert-level
// DP-SGD with Batch = m (q = 1) and clip learnClip, one DP step.
const (
	learnExperts = 16
	learnObs     = 2
	learnHidden  = 4
	learnClip    = 1.0
	// learnShiftStd is the noise std of the white-box noiseless run (the
	// exact sampler needs one > 0; this one is far below every gradient
	// and far above the clamp, 2^-42 of it).
	learnShiftStd = 1e-9
)

// Learn returns the audit of "dprl offline learn"'s DP step
// (qlearn.Learner.DPStep: Poisson sampling by expert, one transition per
// sampled expert, per-transition clipping of the joint gradient by ghost
// norms, the exact sampler's noise N(0, (sigma C)^2) on the sum, the fixed
// denominator Batch) at the sigma the PLD accountant calibrates to (eps,
// delta) for one step at q = Batch / m = 1, as the command calibrates it.
// The claim is the accountant's epsilon at sigma and mu = 1 / sigma, for
// the addition or removal of one expert.
//
// D is a fixed log of learnExperts experts (one random transition each)
// plus the canary expert, D' the log alone; both are built by
// qlearn.FromSessions from session records and run for one DPStep from
// the same fixed initial networks. The canary's transition has reward 1e6
// (a gradient far past the clip) and ends its episode. The release is the
// Q-network's parameters after the step: the optimiser is Adam with beta1
// = beta2 = 0 and lr = eps = 1e6, which moves the parameters by -g/(1 +
// |g| 1e-6) per coordinate, the noisy gradient g itself to a relative
// 1e-6 (post-processing, chosen so that it loses nothing). Canary.Shift is
// the same step with noise of std learnShiftStd (the un-noised values).
func Learn(eps, delta float64) (Target, error) {
	return learnTarget(eps, delta, FaultNone)
}

// learnTarget is Learn with the fault applied to the step's qlearn.DP.
func learnTarget(eps, delta float64, fault Fault) (Target, error) {
	ns, cs, err := fault.scales()
	if err != nil {
		return Target{}, err
	}
	acc := accountant.PLD{}
	sigma, err := accountant.Calibrate(acc, eps, delta, 1, 1)
	if err != nil {
		return Target{}, fmt.Errorf("audit: calibrating sigma: %w", err)
	}
	g, err := acc.Epsilon(delta, accountant.Event{Q: 1, Z: sigma, Steps: 1})
	if err != nil {
		return Target{}, fmt.Errorf("audit: %w", err)
	}
	cfg := qlearn.DefaultConfig()
	cfg.Hidden, cfg.Batch = []int{learnHidden}, learnExperts
	cfg.Adam.Beta1, cfg.Adam.Beta2, cfg.Adam.LR, cfg.Adam.Eps = 0, 0, 1e6, 1e6
	if err := cfg.Validate(); err != nil {
		return Target{}, fmt.Errorf("audit: %w", err)
	}
	dp := qlearn.DP{Clip: learnClip * cs, Sigma: sigma * ns, SampleRate: 1}
	plain := dp
	plain.Sigma = learnShiftStd / plain.Clip
	background := learnBackground()
	canary := sessionlog.Session{Session: "canary", Expert: "canary", Terminal: true,
		Steps: []sessionlog.Step{{Obs: []float64{1, 1}, Action: sims.Action{Index: 0}, Reward: 1e6}}}
	out, err := qlearn.FromSessions(background, learnObs, 2, qlearn.ByExpert)
	if err != nil {
		return Target{}, fmt.Errorf("audit: %w", err)
	}
	in, err := qlearn.FromSessions(append(append([]sessionlog.Session(nil), background...), canary), learnObs, 2, qlearn.ByExpert)
	if err != nil {
		return Target{}, fmt.Errorf("audit: %w", err)
	}
	release := func(dp qlearn.DP, withCanary bool, rng *rand.Rand) ([]float64, error) {
		l, err := qlearn.New(cfg, learnObs, 2, rand.New(rand.NewPCG(0x6c6561, 0x726e)))
		if err != nil {
			return nil, err
		}
		d := out
		if withCanary {
			d = in
		}
		l.DPStep(d, dp, rng, noise.NewGaussian(rng))
		return l.Snapshot().Q, nil
	}
	t := Target{Name: fault.name(fmt.Sprintf("learn (cql, 1 step, q = 1, %d experts)", learnExperts)), Claim: Claim{Epsilon: g.Epsilon, Delta: delta, Mu: 1 / sigma}}
	c := Canary{Name: "large reward", Release: func(withCanary bool, rng *rand.Rand) ([]float64, error) { return release(dp, withCanary, rng) }}
	vin, err := release(plain, true, rand.New(rand.NewPCG(0, 0)))
	if err != nil {
		return Target{}, err
	}
	vout, err := release(plain, false, rand.New(rand.NewPCG(0, 0)))
	if err != nil {
		return Target{}, err
	}
	c.Shift = shift(vin, vout)
	t.Canaries = []Canary{c}
	return t, nil
}

// learnBackground returns the fixed log: one session of one transition per
// expert, random observations, actions and rewards in [0, 1), from a fixed
// seed.
func learnBackground() []sessionlog.Session {
	rng := rand.New(rand.NewPCG(0x6c6561, 0x726e))
	out := make([]sessionlog.Session, learnExperts)
	for i := range out {
		obs := make([]float64, learnObs)
		for j := range obs {
			obs[j] = rng.NormFloat64()
		}
		out[i] = sessionlog.Session{Session: fmt.Sprintf("bg-%d", i), Expert: fmt.Sprintf("expert-%d", i), Terminal: true,
			Steps: []sessionlog.Step{{Obs: obs, Action: sims.Action{Index: rng.IntN(2)}, Reward: rng.Float64()}}}
	}
	return out
}
