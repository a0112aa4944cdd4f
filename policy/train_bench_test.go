package policy

import (
	"context"
	"math/rand/v2"
	"testing"

	"dprl/sims"
)

// BenchmarkTrainPPO measures end-to-end environment steps per second of
// non-private in-process PPO on CartPole (rollouts, GAE, E local epochs,
// aggregation) on one worker: the Go side of the comparison with CleanRL's
// ppo.py in docs/performance.md. "64x64" is the peer's network
// (64x64 actor and critic, 4 epochs); "default" is dprl's CartPole profile
// (16x16, 3 epochs). Run with -cpu 1.
func BenchmarkTrainPPO(b *testing.B) {
	for _, c := range []struct {
		name   string
		hidden []int
		epochs int
	}{{"64x64-E4", []int{64, 64}, 4}, {"16x16-E3", []int{16, 16}, 3}} {
		b.Run(c.name, func(b *testing.B) {
			cfg := DefaultControlConfig()
			cfg.DP = DPConfig{Mode: ModePPO, UsersPerUpdate: 8}
			cfg.PPO.Hidden = c.hidden
			cfg.PPO.Epochs = c.epochs
			cfg.PPO.ServerLR = 0.5
			var steps int64
			b.ReportAllocs()
			for b.Loop() {
				res, err := Train(context.Background(), func() sims.Env { return sims.NewCartPole() }, cfg,
					TrainOptions{Users: 800, Workers: 1, CurveEvery: 1 << 30, CurveEpisodes: 1}, rand.New(rand.NewPCG(1, 1)))
				if err != nil {
					b.Fatal(err)
				}
				steps += res.Steps
			}
			b.ReportMetric(float64(steps)/b.Elapsed().Seconds(), "env-steps/s")
		})
	}
}
