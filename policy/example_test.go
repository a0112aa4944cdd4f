package policy_test

import (
	"fmt"
	"math/rand/v2"

	"dprl/policy"
)

// One DPPG iteration (Algorithm 2): K users' local updates, the noised
// average, the server step and the Adam reset. The noise source is seeded
// here for reproducibility; production passes a crypto-seeded generator.
func Example() {
	cfg := policy.DefaultControlConfig() // Table 3, control column; z = 1
	spec := policy.Spec{ObsDim: 4, Kind: policy.ActionDiscrete, NumActions: 2}
	learner, err := policy.NewLearner(spec, cfg)
	if err != nil {
		panic(err)
	}
	nPi := learner.NumPolicyParams()
	noise := rand.New(rand.NewPCG(1, 2))
	agg, err := policy.NewAggregator(cfg.DP, nPi, learner.NumParams()-nPi, noise)
	if err != nil {
		panic(err)
	}
	actor, err := policy.NewActor(spec, cfg.PPO.Hidden)
	if err != nil {
		panic(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	theta := make([]float64, learner.NumParams())
	learner.Init(theta, rng)

	gu := make([]float64, learner.NumParams())
	for !agg.Full() {
		// A synthetic user: T steps under the current policy.
		T := cfg.PPO.StepsPerUser
		tr := &policy.Trajectory{Obs: make([]float64, 4*T), Actions: make([]int, T),
			Rewards: make([]float64, T), LogProbs: make([]float64, T), FinalObs: make([]float64, 4)}
		for t := 0; t < T; t++ {
			obs := tr.Obs[4*t : 4*t+4]
			for i := range obs {
				obs[i] = rng.NormFloat64()
			}
			tr.Actions[t], tr.LogProbs[t] = actor.ActDiscrete(rng, theta, obs)
			tr.Rewards[t] = 1
		}
		if err := learner.LocalUpdate(gu, theta, tr, rng); err != nil {
			panic(err)
		}
		if err := agg.Add(gu); err != nil {
			panic(err)
		}
	}
	gTilde := make([]float64, learner.NumParams())
	if err := agg.Release(gTilde); err != nil {
		panic(err)
	}
	policy.ApplyUpdate(theta, gTilde, cfg.PPO.ServerLR)
	learner.ResetMoments(gTilde)
	fmt.Printf("%d parameters (policy %d), noise std z*S/K = %.5f\n", learner.NumParams(), nPi, agg.NoiseStd())
	// Output: 9155 parameters (policy 4610), noise std z*S/K = 0.00625
}
