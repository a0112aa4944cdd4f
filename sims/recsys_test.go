package sims

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func newTestRecSys(t testing.TB, mod func(*RecSysConfig)) *RecSys {
	t.Helper()
	cfg := DefaultRecSysConfig()
	if mod != nil {
		mod(&cfg)
	}
	e, err := NewRecSys(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestRecSysTopicMeans(t *testing.T) {
	m := newTestRecSys(t, nil).TopicMeans()
	// RecSim: concat(linspace(-3, 0, 14), linspace(0, 3, 6)).
	if len(m) != 20 || m[0] != -3 || m[13] != 0 || m[14] != 0 || m[19] != 3 {
		t.Fatalf("means %v", m)
	}
	if math.Abs(m[1]-(-3+3.0/13)) > 1e-15 || math.Abs(m[15]-0.6) > 1e-15 {
		t.Errorf("means[1] %v means[15] %v", m[1], m[15])
	}
}

func TestRecSysInterestUpdate(t *testing.T) {
	tests := []struct {
		name    string
		u, flip float64
		want    float64
	}{
		// alpha = 0.3 (1 - |u|), step alpha (1 - u), up when flip < (u+1)/2.
		{"zero up", 0, 0.4, 0.3},
		{"zero down", 0, 0.6, -0.3},
		{"positive up", 0.5, 0.7, 0.5 + 0.15*0.5},
		{"positive down", 0.5, 0.8, 0.5 - 0.15*0.5},
		{"negative down", -0.5, 0.3, -0.5 - 0.15*1.5},
		{"negative up", -0.5, 0.2, -0.5 + 0.15*1.5},
		{"at one", 1, 0, 1},
		{"at minus one", -1, 0.5, -1},
	}
	e := newTestRecSys(t, nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.u[3] = tc.u
			e.updateInterest(3, tc.flip)
			if math.Abs(e.u[3]-tc.want) > 1e-15 {
				t.Errorf("u = %v, want %v", e.u[3], tc.want)
			}
		})
	}
}

func TestRecSysBudgetAccounting(t *testing.T) {
	e := newTestRecSys(t, func(c *RecSysConfig) { c.QualityStd = 0 })
	obs := make([]float64, 2*20+4)
	rng := rand.New(rand.NewPCG(3, 4))
	e.Reset(rng, obs)
	for i := range e.u {
		e.u[i] = 1 // weight 2 per doc: click prob 4/6
	}
	clicks, noClicks, predicted := 0, 0, 200.0
	for k := range 300 {
		c := k % 20
		before := e.budget
		r, term, _ := e.Step(Action{Index: c}, obs)
		if r > 0 {
			clicks++
			wt := math.Min(before, 4)
			want := before - wt + 0.9/3.4*wt*e.means[c]
			if r != wt || math.Abs(e.budget-want) > 1e-12 || obs[2*20+1] != 1 || obs[c] <= 0.5 {
				t.Fatalf("click: reward %v budget %v, want %v and %v", r, e.budget, wt, want)
			}
		} else {
			noClicks++
			if math.Abs(e.budget-(before-0.5)) > 1e-12 || obs[2*20+1] != 0 {
				t.Fatalf("no click: budget %v, want %v", e.budget, before-0.5)
			}
		}
		if obs[20+c] < 0.2-1e-12 {
			t.Fatalf("impression of topic %d not recorded: %v", c, obs[20+c])
		}
		// The remaining time predicted from the responses (QualityStd 0:
		// a clicked document's quality is its topic's mean).
		if r > 0 {
			predicted += -r + 0.9/3.4*r*e.means[c]
		} else {
			predicted -= 0.5
		}
		if got := 200 * obs[2*20+3]; math.Abs(got-predicted) > 1e-9 || math.Abs(got-e.budget) > 1e-9 {
			t.Fatalf("remaining time in the observation %v, want %v (budget %v)", got, predicted, e.budget)
		}
		if term != (e.budget <= 0) {
			t.Fatalf("terminated %v with budget %v", term, e.budget)
		}
		if term {
			break
		}
	}
	if clicks == 0 || noClicks == 0 {
		t.Errorf("%d clicks, %d no-clicks", clicks, noClicks)
	}
}

func TestRecSysChoiceProbability(t *testing.T) {
	e := newTestRecSys(t, nil)
	obs := make([]float64, 44)
	rng := rand.New(rand.NewPCG(5, 6))
	e.Reset(rng, obs)
	e.u[7] = 0.5
	// Hand-computed: 2 docs of weight 1.5, no click weight 2: 3/5.
	if p := e.ClickProb(7); math.Abs(p-0.6) > 1e-15 {
		t.Fatalf("ClickProb = %v, want 0.6", p)
	}
	const n = 20000
	clicks := 0
	for range n {
		e.u[7] = 0.5
		e.budget = 200
		if r, _, _ := e.Step(Action{Index: 7}, obs); r > 0 {
			clicks++
		}
		e.steps = 0
	}
	// 4 standard errors of a binomial(20000, 0.6) proportion.
	if got := float64(clicks) / n; math.Abs(got-0.6) > 4*math.Sqrt(0.24/n) {
		t.Errorf("empirical click rate %v, want 0.6", got)
	}
}

func TestRecSysEpisodeFixedPolicies(t *testing.T) {
	// Nutritious topic (mean 3) refunds most of the watch time, so sessions
	// last longer and earn more than the trashy one (mean -3).
	ret := func(topic int) float64 {
		e := newTestRecSys(t, nil)
		obs := make([]float64, 44)
		rng := rand.New(rand.NewPCG(9, 9))
		var sum float64
		for range 50 {
			e.Reset(rng, obs)
			for {
				r, term, trunc := e.Step(Action{Index: topic}, obs)
				sum += r
				if term || trunc {
					break
				}
			}
		}
		return sum / 50
	}
	trashy, nutritious := ret(0), ret(19)
	if !(nutritious > 2*trashy) || trashy <= 0 {
		t.Errorf("mean return trashy %v nutritious %v", trashy, nutritious)
	}
}

func TestRecSysConfigValidate(t *testing.T) {
	cfg := DefaultRecSysConfig()
	cfg.Topics, cfg.Decay, cfg.MaxSteps = 1, 1, 0
	_, err := NewRecSys(cfg)
	if !errors.Is(err, ErrRecSysConfig) {
		t.Fatalf("err = %v", err)
	}
	t.Log(err)
}

func TestRecSysStepAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race")
	}
	e := newTestRecSys(t, nil)
	obs := make([]float64, 44)
	rng := rand.New(rand.NewPCG(1, 2))
	e.Reset(rng, obs)
	k := 0
	n := testing.AllocsPerRun(200, func() {
		k++
		if _, te, tr := e.Step(Action{Index: k % 20}, obs); te || tr {
			e.Reset(rng, obs)
		}
	})
	if n != 0 {
		t.Errorf("Step allocates %v per call", n)
	}
}

func BenchmarkStepRecSys(b *testing.B) {
	e := newTestRecSys(b, nil)
	obs := make([]float64, 44)
	rng := rand.New(rand.NewPCG(1, 2))
	e.Reset(rng, obs)
	k := 0
	b.ReportAllocs()
	for b.Loop() {
		k++
		if _, te, tr := e.Step(Action{Index: k % 20}, obs); te || tr {
			e.Reset(rng, obs)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}
