package sims

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestRiverSwimModel(t *testing.T) {
	for _, p := range []float64{0.6, 0.9} {
		m, err := RiverSwimModel(p)
		if err != nil {
			t.Fatal(err)
		}
		for s := range 6 {
			for a := range 2 {
				var sum float64
				for _, q := range m.P[s][a] {
					sum += q
				}
				if math.Abs(sum-1) > 1e-15 {
					t.Errorf("p=%v: P[%d][%d] sums to %v", p, s, a, sum)
				}
			}
			if m.P[s][0][max(0, s-1)] != 1 {
				t.Errorf("left from %d is not deterministic to %d", s, max(0, s-1))
			}
		}
		for _, c := range []struct {
			s, s2 int
			want  float64
		}{{0, 0, 0.4}, {0, 1, 0.6}, {3, 2, 0.05}, {3, 3, 0.6}, {3, 4, 0.35}, {5, 5, p}, {5, 4, 1 - p}} {
			if got := m.P[c.s][1][c.s2]; got != c.want {
				t.Errorf("p=%v: P[%d][right][%d] = %v, want %v", p, c.s, c.s2, got, c.want)
			}
		}
		if m.R[0][0] != 0.005 || m.R[5][1] != 1 || m.R[0][1] != 0 || m.R[5][0] != 0 {
			t.Errorf("rewards %v", m.R)
		}
	}
	for _, p := range []float64{-0.1, 1.1, math.NaN()} {
		if _, err := NewRiverSwim(p); err == nil {
			t.Errorf("NewRiverSwim(%v) accepted", p)
		}
	}
}

// TestRiverSwimOptimalValue compares V*_0(0) with values from an independent
// Python backward induction, and checks short horizons by hand.
func TestRiverSwimOptimalValue(t *testing.T) {
	for _, tc := range []struct{ p, want float64 }{{0.6, 3.3972639591508393}, {0.9, 5.195139661637651}} {
		got, err := RiverSwimOptimalValue(tc.p)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("p=%v: V*_0(0) = %.17g, want %.17g", tc.p, got, tc.want)
		}
	}
	m, _ := RiverSwimModel(0.6)
	v, greedy := m.OptimalValues(2)
	// Horizon 1: V = max_a R. Horizon 2 from state 5: right, 1 + 0.6*1.
	if v[1][0] != 0.005 || v[1][5] != 1 || v[1][3] != 0 {
		t.Errorf("last-step values %v", v[1])
	}
	if math.Abs(v[0][5]-1.6) > 1e-15 || greedy[0][5] != 1 || greedy[1][0] != 0 {
		t.Errorf("two-step value %v greedy %v", v[0], greedy)
	}
	// The optimal value dominates every stationary policy's value.
	vStar, _ := m.OptimalValues(RiverSwimHorizon)
	for _, pi := range [][][]float64{constPolicy(6, 0), constPolicy(6, 1), {{0.5, 0.5}, {0.5, 0.5}, {0.5, 0.5}, {0.5, 0.5}, {0.5, 0.5}, {0.5, 0.5}}} {
		pv, err := m.PolicyValue(pi, RiverSwimHorizon)
		if err != nil {
			t.Fatal(err)
		}
		if pv[0] > vStar[0][0]+1e-12 {
			t.Errorf("policy %v value %v exceeds V* %v", pi, pv[0], vStar[0][0])
		}
	}
	// Always left from 0 collects 0.005 per step.
	pv, _ := m.PolicyValue(constPolicy(6, 0), RiverSwimHorizon)
	if math.Abs(pv[0]-0.1) > 1e-15 {
		t.Errorf("always-left value %v, want 0.1", pv[0])
	}
}

func constPolicy(n, a int) [][]float64 {
	pi := make([][]float64, n)
	for s := range pi {
		pi[s] = make([]float64, 2)
		pi[s][a] = 1
	}
	return pi
}

// TestRiverSwimSimulationMatchesModel runs the backward-induction policy in
// the environment: the mean return matches V*_0(0) within 4 standard errors,
// and the empirical transitions of (3, right) match P.
func TestRiverSwimSimulationMatchesModel(t *testing.T) {
	for _, p := range []float64{0.6, 0.9} {
		e, _ := NewRiverSwim(p)
		m := e.Model()
		v, greedy := m.OptimalValues(RiverSwimHorizon)
		rng := rand.New(rand.NewPCG(11, uint64(p*10)))
		obs := make([]float64, 6)
		const episodes = 20000
		var sum, sumSq float64
		for range episodes {
			e.Reset(rng, obs)
			var ret float64
			for h := 0; ; h++ {
				r, term, trunc := e.Step(Action{Index: greedy[h][e.State()]}, obs)
				ret += r
				if term {
					t.Fatal("riverswim terminated")
				}
				if trunc {
					if h != RiverSwimHorizon-1 {
						t.Fatalf("truncated after %d steps", h+1)
					}
					break
				}
			}
			sum += ret
			sumSq += ret * ret
		}
		mean := sum / episodes
		se := math.Sqrt((sumSq/episodes - mean*mean) / episodes)
		if math.Abs(mean-v[0][0]) > 4*se {
			t.Errorf("p=%v: mean return %v, V* %v (se %v)", p, mean, v[0][0], se)
		}
	}
	e, _ := NewRiverSwim(0.6)
	rng := rand.New(rand.NewPCG(12, 12))
	obs := make([]float64, 6)
	e.Reset(rng, obs)
	counts := make([]float64, 6)
	const n = 100000
	for range n {
		if err := e.SetState([]float64{3}, obs); err != nil {
			t.Fatal(err)
		}
		e.Step(Action{Index: 1}, obs)
		counts[e.State()]++
	}
	for s, want := range []float64{0, 0, 0.05, 0.6, 0.35, 0} {
		if got := counts[s] / n; math.Abs(got-want) > 0.006 {
			t.Errorf("P(3, right, %d) empirical %v, want %v", s, got, want)
		}
	}
	for i, v := range obs {
		if want := map[bool]float64{true: 1}[i == e.State()]; v != want {
			t.Fatalf("observation %v is not one-hot of %d", obs, e.State())
		}
	}
}

func TestChainConfigValidate(t *testing.T) {
	if err := DefaultChainConfig().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	err := ChainConfig{States: 1, StayAdvance: 0.5, StayWait: 0.2, MaxSteps: 0}.Validate()
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, want := range []string{"States", "StayWait", "MaxSteps"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not report %s", err, want)
		}
	}
	if _, err := NewChain(ChainConfig{States: 5, StayAdvance: math.NaN(), StayWait: 1, MaxSteps: 10}); err == nil {
		t.Error("NaN StayAdvance accepted")
	}
}

func TestChainValueFunction(t *testing.T) {
	cfg := ChainConfig{States: 6, StayAdvance: 0.3, StayWait: 0.9, MaxSteps: 1000}
	mixed := make([][]float64, cfg.States)
	for s := range cfg.States - 1 {
		w := float64(s) / 5
		mixed[s] = []float64{w, 1 - w}
	}
	for _, tc := range []struct {
		name  string
		pi    [][]float64
		gamma float64
	}{
		{"advance/0.9", constPolicy(cfg.States, 1), 0.9},
		{"wait/0.95", constPolicy(cfg.States, 0), 0.95},
		{"mixed/0.8", mixed, 0.8},
		{"mixed/1", mixed, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := cfg.ValueFunction(tc.pi, tc.gamma)
			if err != nil {
				t.Fatal(err)
			}
			want := iterateChainValue(cfg, tc.pi, tc.gamma)
			for s := range v {
				if math.Abs(v[s]-want[s]) > 1e-9 {
					t.Errorf("V[%d] = %v, fixed-point iteration %v", s, v[s], want[s])
				}
			}
			if v[cfg.States-1] != 0 {
				t.Errorf("terminal value %v", v[cfg.States-1])
			}
			if tc.gamma == 1 {
				for s := range cfg.States - 1 {
					if math.Abs(v[s]-1) > 1e-12 {
						t.Errorf("undiscounted V[%d] = %v, want 1 (the end is reached surely)", s, v[s])
					}
				}
			}
		})
	}
	// Closed form next to the end: V = q / (1 - gamma (1 - q)).
	two := ChainConfig{States: 2, StayAdvance: 0.25, StayWait: 0.5, MaxSteps: 10}
	v, err := two.ValueFunction([][]float64{{0, 1}, nil}, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	if want := 0.75 / (1 - 0.9*0.25); math.Abs(v[0]-want) > 1e-14 {
		t.Errorf("two-state V = %v, want %v", v[0], want)
	}
	// Singular: waiting forever never ends, undiscounted.
	stuck := ChainConfig{States: 4, StayAdvance: 0.5, StayWait: 1, MaxSteps: 10}
	if _, err := stuck.ValueFunction(constPolicy(4, 0), 1); err == nil {
		t.Error("singular system accepted")
	}
	// Bad policies and gamma.
	for _, pi := range [][][]float64{constPolicy(3, 1), {{0.5, 0.6}, {1, 0}, {1, 0}, nil}, {{-1, 2}, {1, 0}, {1, 0}, nil}, {{1}, {1, 0}, {1, 0}, nil}} {
		if _, err := stuck.ValueFunction(pi, 0.9); err == nil {
			t.Errorf("bad policy %v accepted", pi)
		}
	}
	if _, err := stuck.ValueFunction(constPolicy(4, 1), 1.5); err == nil {
		t.Error("gamma 1.5 accepted")
	}
}

// iterateChainValue evaluates pi by iterating the Bellman equation with the
// transitions written out directly (independent of Model and the LU solve).
func iterateChainValue(cfg ChainConfig, pi [][]float64, gamma float64) []float64 {
	n := cfg.States
	v := make([]float64, n)
	stay := []float64{cfg.StayWait, cfg.StayAdvance}
	for range 20000 {
		nv := make([]float64, n)
		for s := range n - 1 {
			for a, pa := range pi[s] {
				adv := 1 - stay[a]
				var next float64
				if s+1 == n-1 {
					next = adv * 1 // reward 1, terminal value 0
				} else {
					next = adv * gamma * v[s+1]
				}
				nv[s] += pa * (next + stay[a]*gamma*v[s])
			}
		}
		v = nv
	}
	return v
}

// TestChainSimulation: the discounted Monte Carlo return of a mixed policy
// matches the exact value function, and resets are uniform over the
// non-terminal states.
func TestChainSimulation(t *testing.T) {
	cfg := ChainConfig{States: 8, StayAdvance: 0.2, StayWait: 0.7, MaxSteps: 10000}
	e, err := NewChain(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pi := make([][]float64, cfg.States)
	for s := range cfg.States - 1 {
		pi[s] = []float64{0.6, 0.4}
	}
	const gamma = 0.9
	v, err := cfg.ValueFunction(pi, gamma)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(21, 22))
	obs := make([]float64, cfg.States)
	const episodes = 20000
	var sum, sumSq, want float64
	starts := make([]float64, cfg.States)
	for range episodes {
		e.Reset(rng, obs)
		starts[e.State()]++
		want += v[e.State()]
		var ret, disc float64 = 0, 1
		for {
			a := 1
			if rng.Float64() < 0.6 {
				a = 0
			}
			r, term, trunc := e.Step(Action{Index: a}, obs)
			ret += disc * r
			disc *= gamma
			if term != (e.State() == cfg.States-1) || (r == 1) != term {
				t.Fatalf("terminated %v reward %v in state %d", term, r, e.State())
			}
			if term || trunc {
				break
			}
		}
		sum += ret
		sumSq += ret * ret
	}
	mean, want := sum/episodes, want/episodes
	se := math.Sqrt((sumSq/episodes - mean*mean) / episodes)
	if math.Abs(mean-want) > 4*se {
		t.Errorf("mean discounted return %v, exact %v (se %v)", mean, want, se)
	}
	if starts[cfg.States-1] != 0 {
		t.Error("reset into the terminal state")
	}
	for s := range cfg.States - 1 {
		if f := starts[s] / episodes; math.Abs(f-1.0/7) > 0.015 {
			t.Errorf("start frequency of %d = %v, want 1/7", s, f)
		}
	}
	// SetState refuses the terminal state and non-integers.
	for _, bad := range [][]float64{{7}, {-1}, {1.5}} {
		if err := e.SetState(bad, obs); !errors.Is(err, ErrBadState) {
			t.Errorf("SetState(%v) = %v", bad, err)
		}
	}
}
