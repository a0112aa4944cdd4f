package policy

import (
	"math"
	"strings"
	"testing"
)

func TestAdamTwoSteps(t *testing.T) {
	cfg := AdamConfig{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	a, err := NewAdam(1, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := []float64{1}
	// Step 1, g = 0.5: m = 0.05, v = 0.00025, mhat = 0.5, vhat = 0.25.
	a.Step(p, []float64{0.5})
	want := 1 - 0.1*0.5/(0.5+1e-8)
	if math.Abs(p[0]-want) > 1e-15 {
		t.Fatalf("step 1: %.17g, want %.17g", p[0], want)
	}
	// Step 2, g = -1: m = 0.045 - 0.1 = -0.055, v = 0.00024975 + 0.001 = 0.00124975,
	// mhat = -0.055/0.19, vhat = 0.00124975/0.001999.
	a.Step(p, []float64{-1})
	want -= 0.1 * (-0.055 / 0.19) / (math.Sqrt(0.00124975/0.001999) + 1e-8)
	if math.Abs(p[0]-want) > 1e-14 {
		t.Fatalf("step 2: %.17g, want %.17g", p[0], want)
	}
}

func TestAdamSetMoments(t *testing.T) {
	cfg := AdamConfig{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	a, _ := NewAdam(1, cfg)
	a.Step([]float64{0}, []float64{3}) // some history, erased by SetMoments
	a.SetMoments([]float64{0.2})
	p := []float64{1}
	// m = 0.18 + 0.05 = 0.23, v = 0.03996 + 0.00025 = 0.04021, no bias correction.
	a.Step(p, []float64{0.5})
	want := 1 - 0.1*0.23/(math.Sqrt(0.04021)+1e-8)
	if math.Abs(p[0]-want) > 1e-15 {
		t.Fatalf("warm step: %.17g, want %.17g", p[0], want)
	}
	// Reset restores the cold behaviour of TestAdamTwoSteps.
	a.Reset()
	p[0] = 1
	a.Step(p, []float64{0.5})
	if want := 1 - 0.1*0.5/(0.5+1e-8); math.Abs(p[0]-want) > 1e-15 {
		t.Fatalf("after reset: %.17g, want %.17g", p[0], want)
	}
}

func TestAdamConfigValidate(t *testing.T) {
	if err := DefaultAdamConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	err := AdamConfig{LR: 0, Beta1: 1, Beta2: -1, Eps: 0}.Validate()
	if err == nil {
		t.Fatal("want error")
	}
	for _, s := range []string{"lr", "beta1", "beta2", "eps"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}
}

func TestAdamAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are unreliable under -race")
	}
	a, _ := NewAdam(1000, DefaultAdamConfig())
	p, g := make([]float64, 1000), make([]float64, 1000)
	for i := range g {
		g[i] = float64(i%7) - 3
	}
	if n := testing.AllocsPerRun(50, func() { a.Step(p, g) }); n != 0 {
		t.Errorf("Step: %v allocs, want 0", n)
	}
}

func TestGAE(t *testing.T) {
	const gamma, lambda = 0.9, 0.5
	r := []float64{1, 0, 2}
	v := []float64{0.5, 1, 1.5, 4} // v[3] = V(final obs)
	for _, tc := range []struct {
		name     string
		terminal bool
		adv      []float64
	}{
		// terminal: d2 = 2 - 1.5 = 0.5; d1 = 0 + 0.9*1.5 - 1 = 0.35;
		// d0 = 1 + 0.9*1 - 0.5 = 1.4. A2 = 0.5; A1 = 0.35 + 0.45*0.5 = 0.575;
		// A0 = 1.4 + 0.45*0.575 = 1.65875.
		{"terminal", true, []float64{1.65875, 0.575, 0.5}},
		// truncated: d2 = 2 + 0.9*4 - 1.5 = 4.1; A1 = 0.35 + 0.45*4.1 = 2.195;
		// A0 = 1.4 + 0.45*2.195 = 2.38775.
		{"truncated", false, []float64{2.38775, 2.195, 4.1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			adv, ret := make([]float64, 3), make([]float64, 3)
			GAE(adv, ret, r, v, tc.terminal, gamma, lambda)
			for i := range adv {
				if math.Abs(adv[i]-tc.adv[i]) > 1e-12 {
					t.Errorf("adv[%d] = %v, want %v", i, adv[i], tc.adv[i])
				}
				if math.Abs(ret[i]-(tc.adv[i]+v[i])) > 1e-12 {
					t.Errorf("ret[%d] = %v, want %v", i, ret[i], tc.adv[i]+v[i])
				}
			}
		})
	}
	t.Run("lambda1-is-discounted-return", func(t *testing.T) {
		adv, ret := make([]float64, 3), make([]float64, 3)
		GAE(adv, ret, r, v, true, gamma, 1)
		want := []float64{1 + 0.81*2, 0.9 * 2, 2}
		for i := range ret {
			if math.Abs(ret[i]-want[i]) > 1e-12 {
				t.Errorf("ret[%d] = %v, want %v", i, ret[i], want[i])
			}
		}
	})
	t.Run("empty", func(t *testing.T) {
		GAE(nil, nil, nil, []float64{1}, false, gamma, lambda)
	})
}

// TestAdamResetDrift pins down why ResetSecond exists: after the paper's
// reset (m = -g~, v = g~^2) a zero gradient still moves every parameter by
// about lr per step along sign(g~), whatever the scale of g~; after
// SetSecondMoment (m = 0, v = g~^2) a zero gradient moves nothing.
func TestAdamResetDrift(t *testing.T) {
	cfg := AdamConfig{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-5}
	gTilde := []float64{1e-3, -2e-2, 5e-1}
	zero := make([]float64, 3)

	paper, _ := NewAdam(3, cfg)
	m0 := []float64{-gTilde[0], -gTilde[1], -gTilde[2]}
	paper.SetMoments(m0)
	p := make([]float64, 3)
	for range 4 {
		paper.Step(p, zero)
	}
	for i, g := range gTilde {
		// sum_k lr 0.9^k / 0.999^(k/2), k = 1..4, along sign(g~), minus eps effects.
		want := 0.0
		for k := 1; k <= 4; k++ {
			want += cfg.LR * math.Pow(0.9, float64(k)) / math.Sqrt(math.Pow(0.999, float64(k)))
		}
		if got := p[i] * math.Copysign(1, g); math.Abs(got-want) > 0.02*want {
			t.Errorf("paper reset, coordinate %d: moved %v along sign(g~), want about %v", i, got, want)
		}
	}

	second, _ := NewAdam(3, cfg)
	second.SetSecondMoment(gTilde)
	q := make([]float64, 3)
	for range 4 {
		second.Step(q, zero)
	}
	for i, v := range q {
		if v != 0 {
			t.Errorf("second-moment reset, coordinate %d moved by %v with zero gradient", i, v)
		}
	}
	// With a gradient it steps against it, more slowly where g~ was large.
	second.SetSecondMoment(gTilde)
	q = make([]float64, 3)
	second.Step(q, []float64{1e-2, 1e-2, 1e-2})
	if !(q[0] < 0 && q[1] < 0 && q[2] < 0 && -q[2] < -q[0]) {
		t.Errorf("second-moment reset step %v", q)
	}
}
