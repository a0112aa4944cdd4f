package sac

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkUpdate measures SAC updates per second (minibatch sample and
// Update: target, twin critics, actor, temperature, Polyak) for Pendulum's
// dimensions (3 observations, 1 action) at batch 256, with the default
// 256x256 networks and the PriMORL paper's 2x64 model-sized ones. Run with
// -cpu 1; scripts/perf/peers.py sac times a PyTorch SAC of the same sizes.
func BenchmarkUpdate(b *testing.B) {
	for _, hidden := range [][]int{{256, 256}, {64, 64}} {
		b.Run(fmt.Sprintf("%dx%d-B256", hidden[0], hidden[1]), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Hidden = hidden
			rng := rand.New(rand.NewPCG(1, 2))
			a, err := New(cfg, 3, []float64{-2}, []float64{2}, rng)
			if err != nil {
				b.Fatal(err)
			}
			buf, err := NewBuffer(10000, 3, 1)
			if err != nil {
				b.Fatal(err)
			}
			for range 10000 {
				buf.Add([]float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}, []float64{2*rng.Float64() - 1}, -rng.Float64(),
					[]float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}, false)
			}
			batch := NewBatch(cfg.Batch, 3, 1)
			b.ReportAllocs()
			for b.Loop() {
				buf.Sample(batch, rng)
				a.Update(batch, rng)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
		})
	}
}
