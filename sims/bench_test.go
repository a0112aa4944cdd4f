package sims

import (
	"math/rand/v2"
	"testing"
)

// stepLoop returns a closure taking one step with a fixed action pattern,
// resetting at episode ends.
func stepLoop(env Env) func() {
	rng := rand.New(rand.NewPCG(1, 2))
	obs := make([]float64, env.ObservationSpace().Dim())
	act := newAction(env.ActionSpace())
	as := env.ActionSpace()
	env.Reset(rng, obs)
	i := 0
	return func() {
		i++
		if as.Kind == Discrete {
			act.Index = i % as.N
		} else {
			act.Vec[0] = float64(i%5) - 2
		}
		if _, term, trunc := env.Step(act, obs); term || trunc {
			env.Reset(rng, obs)
		}
	}
}

func TestStepAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	for _, name := range Names() {
		env, _ := New(name)
		step := stepLoop(env)
		if n := testing.AllocsPerRun(2000, step); n != 0 {
			t.Errorf("%s: Step (and Reset) allocate %v times per step", name, n)
		}
	}
}

func benchmarkStep(b *testing.B, name string) {
	env, err := New(name)
	if err != nil {
		b.Fatal(err)
	}
	step := stepLoop(env)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		step()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}

func BenchmarkStepCartPole(b *testing.B)    { benchmarkStep(b, "cartpole") }
func BenchmarkStepAcrobot(b *testing.B)     { benchmarkStep(b, "acrobot") }
func BenchmarkStepPendulum(b *testing.B)    { benchmarkStep(b, "pendulum") }
func BenchmarkStepMountainCar(b *testing.B) { benchmarkStep(b, "mountaincar") }
func BenchmarkStepRiverSwim(b *testing.B)   { benchmarkStep(b, "riverswim") }
func BenchmarkStepRiverSwim09(b *testing.B) { benchmarkStep(b, "riverswim-0.9") }
func BenchmarkStepChain(b *testing.B)       { benchmarkStep(b, "chain") }
