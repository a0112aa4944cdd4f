package sims

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestHIVDerivativeAtInitialState(t *testing.T) {
	// Hand-computed from Adams et al. 2004 eq. 1 at the initial state with
	// no treatment.
	y := hivInitial[:]
	T1, T2, T1s, T2s, V, E := 163573.0, 5.0, 11945.0, 46.0, 63919.0, 24.0
	want := []float64{
		1e4 - 0.01*T1 - 8e-7*V*T1,
		31.98 - 0.01*T2 - 1e-4*V*T2,
		8e-7*V*T1 - 0.7*T1s - 1e-5*E*T1s,
		1e-4*V*T2 - 0.7*T2s - 1e-5*E*T2s,
		100*0.7*(T1s+T2s) - 13*V - (8e-7*T1+1e-4*T2)*V,
		1 + 0.3*(T1s+T2s)/(T1s+T2s+100)*E - 0.25*(T1s+T2s)/(T1s+T2s+500)*E - 0.1*E,
	}
	dy := make([]float64, 6)
	hivRHS(dy, y, 0, 0)
	for i := range dy {
		if math.Abs(dy[i]-want[i]) > 1e-9*(1+math.Abs(want[i])) {
			t.Errorf("dy[%d] = %.12g, want %.12g", i, dy[i], want[i])
		}
		// Near-stationary: each rate is small relative to the state (per day).
		if r := math.Abs(dy[i]) / y[i]; r > 0.02 {
			t.Errorf("dy[%d]/y[%d] = %.3g: initial state is not near-stationary", i, i, r)
		}
	}
}

func TestHIVReward(t *testing.T) {
	y := []float64{1, 1, 1, 1, 1000, 50}
	if got, want := HIVReward(y, 0.7, 0.3), -100-2e4*0.49-2e3*0.09+5e4; math.Abs(got-want) > 1e-9 {
		t.Errorf("HIVReward = %g, want %g", got, want)
	}
}

func TestHIVEpisode(t *testing.T) {
	e := NewHIV()
	obs := make([]float64, 6)
	e.Reset(nil, obs)
	if math.Abs(obs[0]-math.Log10(163573)) > 1e-12 {
		t.Fatalf("obs[0] = %g", obs[0])
	}
	// No treatment: the unhealthy steady state stays nearly where it is.
	for k := range 10 {
		e.Step(Action{Index: 0}, obs)
		for i := range obs {
			if math.Abs(obs[i]-math.Log10(hivInitial[i])) > 0.05 {
				t.Fatalf("step %d: obs[%d] = %g drifted from %g", k, i, obs[i], math.Log10(hivInitial[i]))
			}
		}
	}
	e.Reset(nil, obs)
	for k := range HIVDecisions {
		r, term, trunc := e.Step(Action{Index: k % 4}, obs)
		if term || trunc != (k == HIVDecisions-1) || math.IsNaN(r) {
			t.Fatalf("step %d: r %g term %v trunc %v", k, r, term, trunc)
		}
		for i, v := range e.y {
			if !(v > 0) {
				t.Fatalf("step %d: state[%d] = %g not positive", k, i, v)
			}
		}
	}
}

// TestHIVAccuracy compares a treatment schedule at the env's tolerances
// with a run at rtol = atol = 1e-12: the state agrees to 1e-6 relative.
func TestHIVAccuracy(t *testing.T) {
	a, b := NewHIV(), NewHIV()
	b.ode.RTol, b.ode.ATol = 1e-12, 1e-12
	oa, ob := make([]float64, 6), make([]float64, 6)
	a.Reset(nil, oa)
	b.Reset(nil, ob)
	var worst float64
	for k := range 60 {
		act := Action{Index: (k / 5) % 4}
		a.Step(act, oa)
		b.Step(act, ob)
		for i := range a.y {
			worst = max(worst, math.Abs(a.y[i]-b.y[i])/b.y[i])
		}
	}
	t.Logf("worst relative state error over 60 decisions: %.3g", worst)
	if worst > 1e-6 {
		t.Errorf("worst relative error %.3g > 1e-6", worst)
	}
}

func TestHIVStepAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race")
	}
	e := NewHIV()
	obs := make([]float64, 6)
	e.Reset(nil, obs)
	k := 0
	n := testing.AllocsPerRun(50, func() {
		k++
		if _, _, tr := e.Step(Action{Index: k % 4}, obs); tr {
			e.Reset(nil, obs)
		}
	})
	if n != 0 {
		t.Errorf("Step allocates %v per call", n)
	}
}

func BenchmarkStepHIV(b *testing.B) {
	e := NewHIV()
	obs := make([]float64, 6)
	e.Reset(rand.New(rand.NewPCG(1, 2)), obs)
	k := 0
	b.ReportAllocs()
	for b.Loop() {
		k++
		if _, _, tr := e.Step(Action{Index: k % 4}, obs); tr {
			e.Reset(nil, obs)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}
