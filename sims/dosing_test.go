package sims

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestDosingMeals(t *testing.T) {
	e := NewDosing(0)
	if e.meals0[0] != 1000 || e.meals0[43] != 1259 || e.meals0[144] != 986 {
		t.Fatalf("meal vector: d[0] %v d[43] %v d[144] %v", e.meals0[0], e.meals0[43], e.meals0[144])
	}
	e1 := NewDosing(1)
	obs := make([]float64, 9)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		e1.Reset(rng, obs)
		m := e1.Meals()
		lo, hi := m[0], m[0]
		for _, v := range m {
			lo, hi = min(lo, v), max(hi, v)
		}
		// Floored at the steady level U(800, 1200); smoothed meals of at
		// most ~3100 stay below that.
		if lo < 800 || lo > 1200 || hi > 3200 {
			t.Fatalf("meals in [%g, %g]", lo, hi)
		}
	}
}

func TestSavgol(t *testing.T) {
	h := savgolHat()
	want := []float64{-36, 9, 44, 69, 84, 89, 84, 69, 44, 9, -36}
	for j, w := range want {
		if math.Abs(h[5][j]-w/429) > 1e-14 {
			t.Errorf("hat[5][%d] = %.16g, want %.16g", j, h[5][j], w/429)
		}
	}
	// A cubic is reproduced exactly everywhere, edges included.
	var x, y [DosingPoints]float64
	for i := range x {
		s := float64(i) / 10
		x[i] = 3 - 2*s + 0.5*s*s - 0.1*s*s*s
	}
	savgol11x3(&y, &x, &h)
	for i := range x {
		if math.Abs(y[i]-x[i]) > 1e-9*(1+math.Abs(x[i])) {
			t.Fatalf("savgol of a cubic at %d: %g, want %g", i, y[i], x[i])
		}
	}
}

func TestDosingReward(t *testing.T) {
	tests := []struct {
		G, want float64
	}{
		{80, 1},
		{64.9, -1},
		{105.1, -1},
		{87, 1 - math.Pow(math.Tanh(1), 2)},
		{73, 1 - math.Pow(math.Tanh(1), 2)},
	}
	for _, tc := range tests {
		if got := DosingReward(tc.G); math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("DosingReward(%g) = %g, want %g", tc.G, got, tc.want)
		}
	}
}

func TestDosingRHS(t *testing.T) {
	y := []float64{100, 30, 40, 20, 25, 250}
	dy := make([]float64, 6)
	dosingRHS(dy, y, 2, 1000)
	want := []float64{
		60 * (-0.0317*(100-291) - 0.029*30*100 + 0.8*0.012/12*250 + 0.8/12*1000),
		60 * 0.0123 * (40 - 30),
		60 * (-0.09*40 + 2),
		60 * (2 - 0.18*20),
		60 * (-0.18 * (25 - 20)),
		60 * (0.18*25 - 0.012*250),
	}
	for i := range dy {
		if math.Abs(dy[i]-want[i]) > 1e-9*(1+math.Abs(want[i])) {
			t.Errorf("dy[%d] = %g, want %g", i, dy[i], want[i])
		}
	}
}

// TestDosingAccuracy runs a whole episode at the env's tolerances and at
// rtol = atol = 1e-13 and checks G agrees to 1e-8 relative at every step
// (the brief asks for 1e-6).
func TestDosingAccuracy(t *testing.T) {
	for variant := range 2 {
		a, b := NewDosing(variant), NewDosing(variant)
		b.ode.RTol, b.ode.ATol = 1e-13, 1e-13
		oa, ob := make([]float64, 9), make([]float64, 9)
		a.Reset(rand.New(rand.NewPCG(7, 8)), oa)
		b.Reset(rand.New(rand.NewPCG(7, 8)), ob)
		act := Action{Vec: []float64{0}}
		var worst float64
		for k := range DosingMaxSteps {
			act.Vec[0] = float64(k % 11)
			ra, _, ta := a.Step(act, oa)
			rb, _, tb := b.Step(act, ob)
			rel := math.Abs(oa[0]-ob[0]) / math.Abs(ob[0])
			worst = max(worst, rel)
			if rel > 1e-8 || ta != tb || math.Abs(ra-rb) > 1e-6 {
				t.Fatalf("variant %d step %d: G %.15g vs %.15g", variant, k, oa[0], ob[0])
			}
			if ta != (k == DosingMaxSteps-1) {
				t.Fatalf("step %d: truncated %v", k, ta)
			}
		}
		t.Logf("variant %d: worst relative G error %.3g", variant, worst)
	}
}

func TestDosingClipsAction(t *testing.T) {
	a, b := NewDosing(0), NewDosing(0)
	oa, ob := make([]float64, 9), make([]float64, 9)
	a.Reset(rand.New(rand.NewPCG(1, 1)), oa)
	b.Reset(rand.New(rand.NewPCG(1, 1)), ob)
	a.Step(Action{Vec: []float64{50}}, oa)
	b.Step(Action{Vec: []float64{10}}, ob)
	for i := range oa {
		if oa[i] != ob[i] {
			t.Fatalf("obs[%d]: %g vs %g", i, oa[i], ob[i])
		}
	}
	if oa[7] == oa[0] {
		t.Error("previous G should differ from G")
	}
}

func TestDosingStepAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race")
	}
	e := NewDosing(1)
	obs := make([]float64, 9)
	rng := rand.New(rand.NewPCG(1, 2))
	e.Reset(rng, obs)
	act := Action{Vec: []float64{3}}
	n := testing.AllocsPerRun(100, func() {
		if _, _, tr := e.Step(act, obs); tr {
			e.Reset(rng, obs)
		}
	})
	if n != 0 {
		t.Errorf("Step allocates %v per call", n)
	}
}

func BenchmarkStepDosing(b *testing.B) {
	e := NewDosing(1)
	obs := make([]float64, 9)
	rng := rand.New(rand.NewPCG(1, 2))
	e.Reset(rng, obs)
	act := Action{Vec: []float64{3}}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, tr := e.Step(act, obs); tr {
			e.Reset(rng, obs)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}
