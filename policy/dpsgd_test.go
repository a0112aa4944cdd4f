package policy

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"dprl/sims"
)

func cartpole() sims.Env { return sims.NewCartPole() }

// smokeConfig is a short run for the CI smoke tests.
func smokeConfig() DPSGDConfig {
	c := DefaultDPSGDConfig()
	c.EvalEpisodes = 10
	c.Reinforce.Updates = 40
	c.Reinforce.EpisodesPerUpdate = 16
	c.DQN.Steps = 8000
	c.DQN.LearningStarts = 500
	c.DQN.EpsDecaySteps = 4000
	c.DQN.TargetEvery = 250
	return c
}

func TestDPSGDExperiment(t *testing.T) {
	if os.Getenv("DPRL_EXP") == "" {
		t.Skip()
	}
	for _, algo := range []string{AlgoDPSGDReinforce, AlgoDPSGDDQN} {
		c := smokeConfig()
		if os.Getenv("DPRL_EXP") == "long" {
			c = DefaultDPSGDConfig()
		}
		res, err := TrainDPSGD(context.Background(), algo, cartpole, c, rand.New(rand.NewPCG(1, 2)), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: eval %.1f ± %.1f eps %.3g updates %d episodes %d steps %d %.1fs", algo, res.EvalMean, res.EvalStd, res.Epsilon, res.Updates, res.Episodes, res.Steps, res.Seconds)
	}
}

var _ = errors.New
var _ = strings.Contains
var _ = math.Abs
