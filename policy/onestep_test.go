package policy

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"dprl/sims"
)

// TestActorProbs: Probs is the distribution ActDiscrete samples from (its
// log is the log-probability ActDiscrete reports) and sums to 1.
func TestActorProbs(t *testing.T) {
	spec := Spec{ObsDim: 3, Kind: ActionDiscrete, NumActions: 5}
	cfg := DefaultControlConfig()
	cfg.PPO.Hidden = []int{4}
	l, err := NewLearner(spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float64, l.NumParams())
	rng := rand.New(rand.NewPCG(1, 2))
	l.Init(theta, rng)
	for i := range theta {
		theta[i] += 0.5 * (rng.Float64() - 0.5) // logits far from uniform
	}
	a, err := NewActorFor(spec, cfg.PPO)
	if err != nil {
		t.Fatal(err)
	}
	obs, p := []float64{0.3, -1, 2}, make([]float64, 5)
	a.Probs(p, theta, obs)
	sum := 0.0
	for _, v := range p {
		sum += v
	}
	if math.Abs(sum-1) > 1e-12 {
		t.Fatalf("probabilities %v sum to %v", p, sum)
	}
	for range 50 {
		act, logp := a.ActDiscrete(rng, theta, obs)
		if math.Abs(math.Log(p[act])-logp) > 1e-12 {
			t.Fatalf("action %d: log Probs %v, ActDiscrete log-probability %v", act, math.Log(p[act]), logp)
		}
	}
	if n := testing.AllocsPerRun(100, func() { a.Probs(p, theta, obs) }); n != 0 {
		t.Errorf("Probs allocates %v times", n)
	}
}

// TestTrainOnRelease: OnRelease sees the initial parameters and every
// release in order, with the parameters Train returns at the last one.
func TestTrainOnRelease(t *testing.T) {
	cfg := DefaultControlConfig()
	cfg.PPO.Hidden, cfg.PPO.StepsPerUser, cfg.PPO.Minibatches, cfg.PPO.NormalizeAdvantages = []int{4}, 1, 1, false
	cfg.DP.UsersPerUpdate = 10
	var users []int
	var last []float64
	res, err := Train(context.Background(), func() sims.Env { e, _ := sims.New("bandit"); return e }, cfg, TrainOptions{Users: 35,
		OnRelease: func(updates, u int, theta []float64) {
			if updates != len(users) {
				t.Errorf("update %d after %d calls", updates, len(users))
			}
			users, last = append(users, u), append(last[:0], theta...)
		}}, rand.New(rand.NewPCG(3, 3)))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(users, []int{0, 10, 20, 30, 35}) || !slices.Equal(last, res.Theta) {
		t.Fatalf("OnRelease users %v; last parameters equal the result's: %v", users, slices.Equal(last, res.Theta))
	}
}
