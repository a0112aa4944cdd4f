package sims

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestCartPoleParamsValidate(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	cases := []struct {
		name string
		edit func(*CartPoleParams)
		want []string // substrings of the error; none: valid
	}{
		{"defaults", func(*CartPoleParams) {}, nil},
		{"paper variation", func(p *CartPoleParams) { p.Gravity, p.ForceMag, p.CartMass = 11, 9, 1.25 }, nil},
		{"zero gravity", func(p *CartPoleParams) { p.Gravity = 0 }, []string{"gravity = 0"}},
		{"negative cart mass", func(p *CartPoleParams) { p.CartMass = -1 }, []string{"cart_mass = -1"}},
		{"NaN pole mass", func(p *CartPoleParams) { p.PoleMass = nan }, []string{"pole_mass = NaN"}},
		{"infinite length", func(p *CartPoleParams) { p.HalfPoleLength = inf }, []string{"half_pole_length = +Inf"}},
		{"all reported", func(p *CartPoleParams) { p.ForceMag, p.Gravity = 0, nan }, []string{"force_mag = 0", "gravity = NaN"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := DefaultCartPoleParams()
			c.edit(&p)
			e, err := NewCartPoleWith(p)
			if c.want == nil {
				if err != nil || e == nil {
					t.Fatalf("NewCartPoleWith: %v", err)
				}
				if e.Params() != p {
					t.Errorf("Params %+v, want %+v", e.Params(), p)
				}
				return
			}
			checkBadParams(t, err, e == nil, c.want)
		})
	}
}

func TestAcrobotParamsValidate(t *testing.T) {
	cases := []struct {
		name string
		edit func(*AcrobotParams)
		want []string
	}{
		{"defaults", func(*AcrobotParams) {}, nil},
		{"paper variation", func(p *AcrobotParams) { p.Link1Length, p.Link2Length, p.Link1Mass, p.Link2Mass = 1.2, 1.2, 0.9, 1.1 }, nil},
		{"zero length", func(p *AcrobotParams) { p.Link1Length = 0 }, []string{"link1_length = 0"}},
		{"negative second length", func(p *AcrobotParams) { p.Link2Length = -0.5 }, []string{"link2_length = -0.5"}},
		{"NaN mass", func(p *AcrobotParams) { p.Link2Mass = math.NaN() }, []string{"link2_mass = NaN"}},
		{"zero com and moi", func(p *AcrobotParams) { p.Link1COM, p.Link2MOI = 0, 0 }, []string{"link1_com = 0", "link2_moi = 0"}},
		{"infinite gravity", func(p *AcrobotParams) { p.Gravity = math.Inf(-1) }, []string{"gravity = -Inf"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := DefaultAcrobotParams()
			c.edit(&p)
			e, err := NewAcrobotWith(p)
			if c.want == nil {
				if err != nil || e == nil {
					t.Fatalf("NewAcrobotWith: %v", err)
				}
				if e.Params() != p {
					t.Errorf("Params %+v, want %+v", e.Params(), p)
				}
				return
			}
			checkBadParams(t, err, e == nil, c.want)
		})
	}
}

// TestVariationDefaultsIdentical checks that the default parameters give
// the very same trajectory, bit for bit, as the plain constructors, and that
// a changed parameter changes it.
func TestVariationDefaultsIdentical(t *testing.T) {
	run := func(e Env, n int) []float64 {
		rng := rand.New(rand.NewPCG(5, 6))
		obs := make([]float64, e.ObservationSpace().Dim())
		e.Reset(rng, obs)
		var out []float64
		for i := 0; i < n; i++ {
			_, term, trunc := e.Step(Action{Index: rng.IntN(e.ActionSpace().N)}, obs)
			out = append(out, obs...)
			if term || trunc {
				e.Reset(rng, obs)
			}
		}
		return out
	}
	same := func(a, b []float64) bool {
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
				return false
			}
		}
		return len(a) == len(b)
	}
	cp, _ := NewCartPoleWith(DefaultCartPoleParams())
	if !same(run(NewCartPole(), 300), run(cp, 300)) {
		t.Error("cartpole: default params differ from NewCartPole")
	}
	p := DefaultCartPoleParams()
	p.Gravity = 10.5
	cp, _ = NewCartPoleWith(p)
	if same(run(NewCartPole(), 300), run(cp, 300)) {
		t.Error("cartpole: gravity 10.5 gives the default trajectory")
	}
	ac, _ := NewAcrobotWith(DefaultAcrobotParams())
	if !same(run(NewAcrobot(), 300), run(ac, 300)) {
		t.Error("acrobot: default params differ from NewAcrobot")
	}
	q := DefaultAcrobotParams()
	q.Link1Length = 1.2
	ac, _ = NewAcrobotWith(q)
	if same(run(NewAcrobot(), 300), run(ac, 300)) {
		t.Error("acrobot: link1 length 1.2 gives the default trajectory")
	}
}

// checkBadParams asserts a rejected construction: no environment, an error
// wrapping ErrBadParams that names every field in want.
func checkBadParams(t *testing.T, err error, nilEnv bool, want []string) {
	t.Helper()
	if !errors.Is(err, ErrBadParams) || !nilEnv {
		t.Fatalf("err %v, want ErrBadParams", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}
