package sims

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func newTestBandit(t testing.TB) *Bandit {
	t.Helper()
	e, err := NewBandit(DefaultBanditConfig())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestBanditConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*BanditConfig)
		want string // substring of the error; "" for valid
	}{
		{"default", func(*BanditConfig) {}, ""},
		{"no continuous", func(c *BanditConfig) { c.Continuous = 0 }, ""},
		{"segments do not sum to 1", func(c *BanditConfig) { c.SegmentProbs = []float64{0.5, 0.4} }, "SegmentProbs"},
		{"negative device prob", func(c *BanditConfig) { c.DeviceProbs = []float64{1.5, -0.5} }, "DeviceProbs"},
		{"no segments", func(c *BanditConfig) { c.SegmentProbs = nil }, "SegmentProbs"},
		{"one item", func(c *BanditConfig) { c.Items = 1 }, "Items"},
		{"negative continuous", func(c *BanditConfig) { c.Continuous = -1 }, "Continuous"},
		{"NaN scale", func(c *BanditConfig) { c.ItemScale = math.NaN() }, "ItemScale"},
		{"infinite base", func(c *BanditConfig) { c.BaseLogit = math.Inf(-1) }, "BaseLogit"},
		{"negative bias std", func(c *BanditConfig) { c.BiasStd = -1 }, "BiasStd"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultBanditConfig()
			tc.mod(&c)
			_, err := NewBandit(c)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("valid config rejected: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrBanditConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrBanditConfig naming %s", err, tc.want)
			}
		})
	}
	// Every problem at once.
	c := DefaultBanditConfig()
	c.Items, c.Continuous = 0, -2
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "Items") || !strings.Contains(err.Error(), "Continuous") {
		t.Errorf("error %v, want both Items and Continuous", err)
	}
}

func TestBanditFeatures(t *testing.T) {
	e := newTestBandit(t)
	obs := make([]float64, 8)
	sp := e.ObservationSpace()
	rng := rand.New(rand.NewPCG(1, 2))
	var seg [3]int
	const n = 20000
	for range n {
		e.Reset(rng, obs)
		ones := 0
		for j, v := range obs {
			if v < sp.Low[j] || v > sp.High[j] {
				t.Fatalf("feature %d = %v outside [%v, %v]", j, v, sp.Low[j], sp.High[j])
			}
			if j < 5 && v == 1 {
				ones++
			}
			if j < 3 && v == 1 {
				seg[j]++
			}
		}
		if ones != 2 {
			t.Fatalf("features %v: want one segment and one device set", obs)
		}
	}
	for i, p := range []float64{0.5, 0.3, 0.2} {
		if got := float64(seg[i]) / n; math.Abs(got-p) > 4*math.Sqrt(p*(1-p)/n) {
			t.Errorf("segment %d frequency %v, want %v", i, got, p)
		}
	}
}

// TestBanditClickModelMonteCarlo checks the exact click probabilities
// against the frequency of clicks Step gives, for fixed users.
func TestBanditClickModelMonteCarlo(t *testing.T) {
	e := newTestBandit(t)
	obs := make([]float64, 8)
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 20000
	for u := range 3 {
		e.Reset(rng, obs)
		x := append([]float64(nil), e.Features()...)
		for a := range 10 {
			w, b := e.Item(a)
			z := b
			for j := range x {
				z += w[j] * x[j]
			}
			want := 1 / (1 + math.Exp(-z))
			if p := e.ClickProb(a); math.Abs(p-want) > 1e-15 {
				t.Fatalf("user %d item %d: ClickProb %v, want sigmoid(w.x + b) = %v", u, a, p, want)
			}
			clicks := 0.0
			for range n {
				copy(e.x, x) // the same user, a fresh decision
				e.done = false
				r, term, trunc := e.Step(Action{Index: a}, obs)
				if !term || !trunc || (r != 0 && r != 1) {
					t.Fatalf("step: reward %v terminated %v truncated %v", r, term, trunc)
				}
				clicks += r
			}
			if got := clicks / n; math.Abs(got-want) > 4.5*math.Sqrt(want*(1-want)/n)+1e-9 {
				t.Errorf("user %d item %d: click frequency %v, exact %v", u, a, got, want)
			}
		}
	}
}

func TestBanditBaselinesOrdering(t *testing.T) {
	e := newTestBandit(t)
	b := e.Baselines(50000, rand.New(rand.NewPCG(5, 6)))
	// Personalization matters: the best fixed item is well above uniform
	// and well below the per-user optimum.
	if !(b.Uniform+0.1 < b.BestFixed && b.BestFixed+0.1 < b.Oracle) {
		t.Fatalf("baselines uniform %v < best fixed %v < oracle %v: want gaps > 0.1", b.Uniform, b.BestFixed, b.Oracle)
	}
	mean := 0.0
	for a, m := range b.ArmMeans {
		mean += m / 10
		if m > b.BestFixed {
			t.Errorf("item %d mean %v above the best fixed %v", a, m, b.BestFixed)
		}
	}
	if math.Abs(mean-b.Uniform) > 1e-12 {
		t.Errorf("uniform %v, want the mean of the item means %v", b.Uniform, mean)
	}
	// The baselines are averages of exact probabilities: a second, disjoint
	// set of users agrees to within Monte Carlo error over users.
	b2 := e.Baselines(50000, rand.New(rand.NewPCG(7, 8)))
	if math.Abs(b2.Oracle-b.Oracle) > 0.01 || math.Abs(b2.Uniform-b.Uniform) > 0.01 || b2.BestArm != b.BestArm {
		t.Errorf("baselines %+v and %+v disagree", b, b2)
	}
	// The simulator's current user is left alone.
	obs := make([]float64, 8)
	e.Reset(rand.New(rand.NewPCG(1, 1)), obs)
	p := e.ClickProb(0)
	e.Baselines(10, rand.New(rand.NewPCG(2, 2)))
	if e.ClickProb(0) != p {
		t.Error("Baselines changed the current user")
	}
}

func TestBanditStepRules(t *testing.T) {
	e := newTestBandit(t)
	obs := make([]float64, 8)
	e.Reset(rand.New(rand.NewPCG(1, 1)), obs)
	if e.MaxSteps() != 1 || e.ActionSpace().N != 10 || e.ObservationSpace().Dim() != 8 {
		t.Fatalf("spaces %v %v, max steps %d", e.ObservationSpace(), e.ActionSpace(), e.MaxSteps())
	}
	for name, f := range map[string]func(){
		"action out of range": func() { e.Step(Action{Index: 10}, obs) },
		"box action":          func() { e.Step(Action{Vec: []float64{0}}, obs) },
		"short obs":           func() { e.Step(Action{Index: 0}, obs[:3]) },
		"second step": func() {
			e.Step(Action{Index: 0}, obs)
			e.Step(Action{Index: 0}, obs)
		},
	} {
		t.Run(name, func(t *testing.T) {
			e.Reset(rand.New(rand.NewPCG(1, 1)), obs)
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		})
	}
}

func BenchmarkStepBandit(b *testing.B) { benchmarkStep(b, "bandit") }

// TestBanditUsersExact: a held-out set scores a policy exactly (the uniform
// policy's value is the uniform baseline, a fixed item's is its mean, the
// per-user argmax's the oracle) and its baselines agree with Baselines'
// streaming ones on the same draws.
func TestBanditUsersExact(t *testing.T) {
	b, err := NewBandit(DefaultBanditConfig())
	if err != nil {
		t.Fatal(err)
	}
	u, err := b.HeldOut(5000, rand.New(rand.NewPCG(7, 7)))
	if err != nil {
		t.Fatal(err)
	}
	bl, stream := u.Baselines(), b.Baselines(5000, rand.New(rand.NewPCG(7, 7)))
	const tol = 1e-12
	if u.Len() != 5000 || math.Abs(bl.Uniform-stream.Uniform) > tol || math.Abs(bl.Oracle-stream.Oracle) > tol || bl.BestArm != stream.BestArm || math.Abs(bl.BestFixed-stream.BestFixed) > tol {
		t.Errorf("held-out baselines %+v, streaming %+v", bl, stream)
	}
	items := DefaultBanditConfig().Items
	uniform := u.Value(func(dst, _ []float64) {
		for a := range dst {
			dst[a] = 1 / float64(items)
		}
	})
	fixed := u.Value(func(dst, _ []float64) {
		clear(dst)
		dst[bl.BestArm] = 1
	})
	p := make([]float64, items)
	oracle := u.Value(func(dst, x []float64) {
		b.ClickProbsFor(p, x)
		clear(dst)
		best := 0
		for a := range p {
			if p[a] > p[best] {
				best = a
			}
		}
		dst[best] = 1
	})
	for _, c := range [][2]float64{{uniform, bl.Uniform}, {fixed, bl.BestFixed}, {oracle, bl.Oracle}} {
		if math.Abs(c[0]-c[1]) > 1e-9 {
			t.Errorf("value %v, baseline %v", c[0], c[1])
		}
	}
	if _, err := b.HeldOut(0, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("HeldOut(0): no error")
	}
}
