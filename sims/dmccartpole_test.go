package sims

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestDMCCartPoleReward(t *testing.T) {
	for _, c := range []struct {
		x, th, thd, u, want float64
	}{
		{0, 0, 0, 0, 1},       // upright, centred, still, no force
		{0, math.Pi, 0, 0, 0}, // hanging down
		{0, 0, 0, 1, 0.8},     // full force: (4 + 0)/5
		{2, 0, 0, 0, 0.55},    // x at the margin: (1 + 0.1)/2
		{0, 0, 5, 0, 0.55},    // angular speed at the margin
		{0, math.Pi / 2, 0, 0.5, 0.5 * (4 + 0.75) / 5}, // horizontal, half force
	} {
		if got := DMCCartPoleReward(c.x, c.th, c.thd, c.u); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("reward(x %v, theta %v, theta_dot %v, u %v) = %v, want %v", c.x, c.th, c.thd, c.u, got, c.want)
		}
	}
}

// TestDMCCartPoleEnergy: without force the cart-pole's mechanical energy
// falls by exactly what its joint damping dissipates (the power b v^2
// integrated over the steps), up to RK4's error.
func TestDMCCartPoleEnergy(t *testing.T) {
	e := NewDMCCartPole(false)
	obs := make([]float64, 5)
	if err := e.SetState([]float64{0, 0.5, 0, 0}, obs); err != nil {
		t.Fatal(err)
	}
	energy := func() float64 {
		const lc, ip = 0.5, 0.1 / 3
		kin := 0.5*(dmcCartMass+dmcPoleMass)*e.xDot*e.xDot + dmcPoleMass*lc*e.xDot*e.thDot*math.Cos(e.th) + 0.5*ip*e.thDot*e.thDot
		return kin + dmcPoleMass*dmcGravity*lc*math.Cos(e.th)
	}
	e0 := energy()
	var lost float64
	for range 300 {
		p0 := dmcSlideDamp*e.xDot*e.xDot + dmcHingeDamp*e.thDot*e.thDot
		e.Step(Action{Vec: []float64{0}}, obs)
		p1 := dmcSlideDamp*e.xDot*e.xDot + dmcHingeDamp*e.thDot*e.thDot
		lost += (p0 + p1) / 2 * dmcDt
		if math.Abs(e.x) >= dmcRailLimit {
			t.Fatal("the cart reached the rail's end")
		}
	}
	if d := math.Abs(energy() + lost - e0); d > 1e-6 || lost <= 0 {
		t.Fatalf("energy %v -> %v after 3 s without force, %v dissipated (off by %v)", e0, energy(), lost, d)
	}
}

// TestDMCCartPoleFalls: the unforced pole falls the way it leans, the
// force moves the cart, and the rail stops it.
func TestDMCCartPoleFalls(t *testing.T) {
	e := NewDMCCartPole(false)
	obs := make([]float64, 5)
	if err := e.SetState([]float64{0, 0.1, 0, 0}, obs); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		e.Step(Action{Vec: []float64{0}}, obs)
	}
	if !(e.th > 0.3 && e.thDot > 0) {
		t.Fatalf("after 0.5 s the pole is at %v rad (%v rad/s), want falling towards +x", e.th, e.thDot)
	}
	if !(obs[2] > 0 && math.Abs(obs[1]-math.Cos(e.th)) < 1e-15 && obs[4] == e.thDot) {
		t.Fatalf("observation %v does not match the state", obs)
	}
	if err := e.SetState([]float64{0, math.Pi, 0, 0}, obs); err != nil {
		t.Fatal(err)
	}
	for range 300 {
		e.Step(Action{Vec: []float64{5}}, obs) // clipped to 1
	}
	if e.x != dmcRailLimit || e.xDot != 0 {
		t.Fatalf("pushed right for 3 s: x %v, x_dot %v, want stopped at the rail's end", e.x, e.xDot)
	}
}

func TestDMCCartPoleEpisodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, up := range []bool{false, true} {
		e := NewDMCCartPole(up)
		obs := make([]float64, 5)
		e.Reset(rng, obs)
		wantCos := 1.0
		if up {
			wantCos = -1
		}
		if math.Abs(obs[1]-wantCos) > 0.01 || math.Abs(obs[0]) > 0.1 {
			t.Fatalf("swing-up %v: start %v", up, obs)
		}
		var ret float64
		for step := 1; ; step++ {
			r, term, trunc := e.Step(Action{Vec: []float64{2*rng.Float64() - 1}}, obs)
			if r < 0 || r > 1 || term {
				t.Fatalf("step %d: reward %v, terminated %v", step, r, term)
			}
			ret += r
			if trunc {
				if step != 1000 {
					t.Fatalf("truncated at step %d, want 1000", step)
				}
				break
			}
		}
		t.Logf("swing-up %v: random-control return %.1f", up, ret)
	}
	if err := NewDMCCartPole(false).SetState([]float64{2, 0, 0, 0}, make([]float64, 5)); err == nil {
		t.Fatal("a state off the rail was accepted")
	}
}

func TestDMCCartPoleAllocs(t *testing.T) {
	e := NewDMCCartPole(true)
	obs := make([]float64, 5)
	e.Reset(rand.New(rand.NewPCG(1, 1)), obs)
	a := Action{Vec: []float64{0.3}}
	if n := testing.AllocsPerRun(100, func() { e.Step(a, obs) }); n != 0 {
		t.Fatalf("%v allocations per step, want 0", n)
	}
}
