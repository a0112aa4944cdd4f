package policy_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"dprl/policy"
	"dprl/sims"
)

// ExampleTrainDPSGD trains DP-SGD REINFORCE briefly on CartPole and prints
// its privacy guarantee (one analytic Gaussian mechanism per episode).
func ExampleTrainDPSGD() {
	cfg := policy.DefaultDPSGDConfig()
	cfg.Reinforce.Updates = 2
	cfg.Reinforce.EpisodesPerUpdate = 4
	cfg.EvalEpisodes = 1
	rng := rand.New(rand.NewPCG(1, 2)) // for a release, seed from a secure source
	res, err := policy.TrainDPSGD(context.Background(), policy.AlgoDPSGDReinforce,
		func() sims.Env { return sims.NewCartPole() }, cfg, rng, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: (%.2f, %g)-DP per %s (%s, z = %g), %d updates, %d episodes\n",
		res.Algo, res.Epsilon, res.Delta, res.PrivacyUnit, res.Accountant, res.NoiseMultiplier, res.Updates, res.Episodes)
	// Output:
	// dpsgd-reinforce: (4.38, 1e-05)-DP per episode (analytic, z = 1), 2 updates, 8 episodes
}
