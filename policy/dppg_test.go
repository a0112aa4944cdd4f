package policy

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDPPGLearnsBandit runs whole DPPG iterations (K local updates, noised
// aggregation, server step, Adam reset) on a synthetic contextual bandit: the
// reward is 1 when the action equals [obs[0] > 0]. The probability of the
// right action must rise well above the initial 0.5.
func TestDPPGLearnsBandit(t *testing.T) {
	rng := testRNG(t)
	noise := rand.New(rand.NewPCG(7, 7))
	cfg := DefaultControlConfig()
	cfg.PPO.Hidden = []int{16, 16}
	cfg.PPO.StepsPerUser = 16
	cfg.PPO.Gamma = 0 // independent contexts
	cfg.PPO.EntropyCoef = 0.01
	cfg.PPO.Adam.LR = 0.01
	cfg.DP.ClipNorm = 1
	cfg.DP.NoiseMultiplier = 0.5
	spec := Spec{ObsDim: 2, Kind: ActionDiscrete, NumActions: 2}
	l := mustLearner(t, spec, cfg)
	agg, err := NewAggregator(cfg.DP, l.NumPolicyParams(), l.NumParams()-l.NumPolicyParams(), noise)
	if err != nil {
		t.Fatal(err)
	}
	actor, err := NewActor(spec, cfg.PPO.Hidden)
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float64, l.NumParams())
	l.Init(theta, rng)
	T := cfg.PPO.StepsPerUser
	tr := &Trajectory{Obs: make([]float64, 2*T), Actions: make([]int, T), Rewards: make([]float64, T),
		LogProbs: make([]float64, T), FinalObs: make([]float64, 2), Terminal: true}
	gu := make([]float64, l.NumParams())
	gTilde := make([]float64, l.NumParams())
	correct := func() float64 { // mean probability of the right action on fixed contexts
		logits := make([]float64, 2)
		s := 0.0
		for i := -5; i <= 5; i++ {
			if i == 0 {
				continue
			}
			obs := []float64{float64(i) / 5, 0.3}
			actor.net.Forward(logits, theta[:actor.nActor], obs)
			right := 0
			if obs[0] > 0 {
				right = 1
			}
			s += math.Exp(Categorical{N: 2}.LogProb(logits, right))
		}
		return s / 10
	}
	before := correct()
	for range 40 {
		for range cfg.DP.UsersPerUpdate {
			for i := 0; i < T; i++ {
				obs := tr.Obs[2*i : 2*i+2]
				obs[0], obs[1] = 2*rng.Float64()-1, 2*rng.Float64()-1
				tr.Actions[i], tr.LogProbs[i] = actor.ActDiscrete(rng, theta, obs)
				tr.Rewards[i] = 0
				if (tr.Actions[i] == 1) == (obs[0] > 0) {
					tr.Rewards[i] = 1
				}
			}
			if err := l.LocalUpdate(gu, theta, tr, rng); err != nil {
				t.Fatal(err)
			}
			if err := agg.Add(gu); err != nil {
				t.Fatal(err)
			}
		}
		if err := agg.Release(gTilde); err != nil {
			t.Fatal(err)
		}
		ApplyUpdate(theta, gTilde, cfg.PPO.ServerLR)
		l.ResetMoments(gTilde)
	}
	after := correct()
	t.Logf("P(right action): %.3f before, %.3f after 40 iterations", before, after)
	if !(after > 0.8) {
		t.Fatalf("P(right action) %.3f after training, want > 0.8", after)
	}
}
