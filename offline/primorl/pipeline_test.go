package primorl

import (
	"context"
	"math/rand/v2"
	"os"
	"testing"

	"dprl/policy/sac"
	"dprl/sims"
)

// TestPipelinePendulum (DPRL_LONG=1) runs the non-private pipeline end to
// end on Pendulum: random-torque episodes, the ensemble trained without
// noise, SAC trained in the pessimistic model only, evaluated on the real
// simulator.
func TestPipelinePendulum(t *testing.T) {
	if os.Getenv("DPRL_LONG") == "" {
		t.Skip("set DPRL_LONG=1 to run")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	train := pendulumData(rng, 100)
	cfg := DefaultModelConfig()
	e, err := NewEnsemble(cfg, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float64, e.NumParams())
	e.Init(p, rng)
	tr, err := NewTrainer(e, TDPConfig{Q: 0.2, Z: 0, C: 10, Rounds: 60, LocalEpochs: 3, Batch: 16, LR: 1e-2, Clip: ClipPerLayer}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Train(context.Background(), p, train, rng, nil); err != nil {
		t.Fatal(err)
	}
	sc := Scales{In: []float64{1, 1, 8, 2}, Out: []float64{1, 1, 8, 16.3}}
	newModel := func() sims.Env {
		m, err := NewModelEnv(sims.NewPendulum(), e, p, sc, MPD, 2, 30)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	scfg := sac.DefaultConfig()
	scfg.Hidden = []int{64, 64}
	res, err := sac.Train(context.Background(), newModel, scfg, sac.TrainOptions{Steps: 30000, LearningStarts: 2000, EvalEpisodes: 5,
		NewEvalEnv: func() sims.Env { return sims.NewPendulum() },
		Progress:   func(pr sac.Progress) { t.Logf("steps %d: real return %.1f", pr.Steps, pr.EvalReturn) }}, rng)
	if err != nil {
		t.Fatal(err)
	}
	m, s := sac.Evaluate(sims.NewPendulum(), res.Agent, 20, rand.New(rand.NewPCG(5, 5)))
	t.Logf("real Pendulum: %.1f ± %.1f (score %.0f)", m, s, 1000*(m+1500)/1500)
}
