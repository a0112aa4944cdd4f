package primorl

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"dprl/sims"
)

// constEnsemble returns a 2-model ensemble for Pendulum whose models predict
// constant scaled targets means[i] with log-variances at their minimum.
func constEnsemble(t *testing.T, means [2][4]float64) (*Ensemble, []float64) {
	t.Helper()
	cfg := DefaultModelConfig()
	cfg.Ensemble, cfg.Hidden = 2, []int{4}
	e, err := NewEnsemble(cfg, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float64, e.NumParams())
	last := e.layers[len(e.layers)-1]
	wEnd := e.weights[len(e.weights)-1][1]
	for i := range 2 {
		m := e.Model(p, i)
		b := m[wEnd:last[1]] // the output biases: 4 means, then 4 raw log-variances
		for j := range 4 {
			b[j] = means[i][j]
			b[4+j] = -1e3
		}
	}
	return e, p
}

func TestModelEnvStep(t *testing.T) {
	means := [2][4]float64{{0.1, -0.2, 0.05, -0.5}, {0.1, -0.2, 0.05, -0.5}}
	e, p := constEnsemble(t, means)
	sc := Scales{In: []float64{1, 1, 8, 2}, Out: []float64{1, 1, 8, 16}}
	m, err := NewModelEnv(sims.NewPendulum(), e, p, sc, MPD, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	obs := make([]float64, 3)
	m.Reset(rand.New(rand.NewPCG(1, 2)), obs)
	start := append([]float64(nil), obs...)
	a := sims.Action{Vec: []float64{0.5}}
	sd := math.Exp(-5) // the minimum log-variance's standard deviation
	for step := 1; step <= 3; step++ {
		prev := append([]float64(nil), obs...)
		r, term, trunc := m.Step(a, obs)
		for i := range 3 {
			want := min(max(prev[i]+means[0][i]*sc.Out[i], m.low[i]), m.high[i])
			if math.Abs(obs[i]-want) > 5*sd*sc.Out[i] {
				t.Fatalf("step %d: obs[%d] = %v, want %v", step, i, obs[i], want)
			}
		}
		// Identical models: u_MPD = 0, so the reward is the model's.
		if math.Abs(r-(-0.5*16)) > 5*sd*16 || term || trunc != (step == 3) {
			t.Fatalf("step %d: reward %v terminated %v truncated %v", step, r, term, trunc)
		}
	}
	if start[0]*start[0]+start[1]*start[1] < 0.99 {
		t.Fatalf("start state %v is not Pendulum's (cos, sin, velocity)", start)
	}
}

func TestUncertainty(t *testing.T) {
	means := [2][4]float64{{0, 0, 0, 0}, {0.3, 0, 0.4, 0}}
	e, p := constEnsemble(t, means)
	sc := Scales{In: []float64{1, 1, 8, 2}, Out: []float64{1, 1, 8, 16}}
	for _, u := range []Uncertainty{MPD, MA} {
		m, err := NewModelEnv(sims.NewPendulum(), e, p, sc, u, 2, 10)
		if err != nil {
			t.Fatal(err)
		}
		obs := make([]float64, 3)
		m.Reset(rand.New(rand.NewPCG(3, 4)), obs)
		r, _, _ := m.Step(sims.Action{Vec: []float64{0}}, obs)
		var want float64
		if u == MPD {
			want = 0.5 // ||(0.3, 0, 0.4, 0)||
		} else {
			lo, _ := e.logVar(-1e3)
			want = math.Sqrt(4 * math.Exp(2*lo)) // sqrt(sum of 4 variances squared)
		}
		if got := m.uncertainty(); math.Abs(got-want) > 1e-12 {
			t.Fatalf("%v: u = %v, want %v", u, got, want)
		}
		if math.Abs(r-(0-2*want)) > 5*math.Exp(-5)*16 {
			t.Fatalf("%v: reward %v, want %v (a zero reward less lambda u)", u, r, -2*want)
		}
	}
	if _, err := NewModelEnv(sims.NewCartPole(), e, p, sc, MPD, 2, 10); err == nil {
		t.Fatal("a discrete-action environment was accepted")
	}
	if _, err := NewModelEnv(sims.NewPendulum(), e, p, sc, MPD, -1, 10); err == nil {
		t.Fatal("a negative penalty was accepted")
	}
}

// TestModelEnvCircle: with a Circle pair the predicted cosine and sine are
// put back on the unit circle.
func TestModelEnvCircle(t *testing.T) {
	e, p := constEnsemble(t, [2][4]float64{{0.3, 0.3, 0, 0}, {0.3, 0.3, 0, 0}})
	sc := Scales{In: []float64{1, 1, 8, 2}, Out: []float64{1, 1, 8, 16}, Circle: [][2]int{{0, 1}}}
	m, err := NewModelEnv(sims.NewPendulum(), e, p, sc, MPD, 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	obs := make([]float64, 3)
	m.Reset(rand.New(rand.NewPCG(5, 6)), obs)
	for range 5 {
		m.Step(sims.Action{Vec: []float64{0}}, obs)
		if r := math.Hypot(obs[0], obs[1]); math.Abs(r-1) > 1e-12 {
			t.Fatalf("cos, sin = %v, %v: radius %v", obs[0], obs[1], r)
		}
	}
	if (Scales{In: sc.In, Out: sc.Out, Circle: [][2]int{{0, 3}}}).Validate(3, 1) == nil {
		t.Fatal("a circle pair outside the observation was accepted")
	}
}

// TestModelEnvBranch: with SetBranch a rollout can start where an earlier
// one went (a state it visited, beyond any start state's reach in h steps),
// the pool keeps at most its capacity, p = 0 leaves the rollouts as
// before, and bad settings are refused.
func TestModelEnvBranch(t *testing.T) {
	// Both models move the speed (scaled by 8) by +0.05 a step: a rollout
	// of h = 3 adds at most 3 x 0.4 to the start's speed.
	means := [2][4]float64{{0, 0, 0.05, 0}, {0, 0, 0.05, 0}}
	e, p := constEnsemble(t, means)
	sc := Scales{In: []float64{1, 1, 8, 2}, Out: []float64{1, 1, 8, 16}}
	run := func(branch float64, capacity, rollouts int) (*ModelEnv, []float64) {
		t.Helper()
		m, err := NewModelEnv(sims.NewPendulum(), e, p, sc, MPD, 0, 3)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.SetBranch(branch, capacity); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(3, 4))
		obs := make([]float64, 3)
		var starts []float64
		for range rollouts {
			m.Reset(rng, obs)
			starts = append(starts, obs[2])
			for range 3 {
				m.Step(sims.Action{Vec: []float64{0}}, obs)
			}
		}
		return m, starts
	}
	// Pendulum's start speeds are in [-1, 1]; chained rollouts go further.
	m, starts := run(1, 50, 200)
	if len(m.pool) != 50*3 || m.visited != 600 {
		t.Errorf("pool of %d values after %d states, want 50 rows of 3", len(m.pool), m.visited)
	}
	fast := 0
	for _, v := range starts {
		if v > 1.5 {
			fast++
		}
	}
	if fast < 100 {
		t.Errorf("%d of 200 rollouts start beyond the start states' speed, want most", fast)
	}
	_, plain := run(0, 50, 50)
	for _, v := range plain {
		if v < -1 || v > 1 {
			t.Fatalf("without branching a rollout starts at speed %v, outside the reset distribution", v)
		}
	}
	m2, _ := NewModelEnv(sims.NewPendulum(), e, p, sc, MPD, 0, 3)
	for _, c := range []struct {
		p   float64
		cap int
	}{{-0.1, 10}, {1.5, 10}, {math.NaN(), 10}, {0.5, 0}} {
		if err := m2.SetBranch(c.p, c.cap); err == nil {
			t.Errorf("SetBranch(%v, %d) accepted", c.p, c.cap)
		}
	}
}

// stateSetter is a simulator whose state can be set.
type stateSetter interface {
	sims.Env
	SetState(state, obs []float64) error
}

// simCase is a simulator PriMORL has public scales for, with a draw of its
// states (angles over several turns, the cart anywhere on the rail).
type simCase struct {
	env   string
	new   func() stateSetter
	state func(r *rand.Rand) []float64
}

func simCases() []simCase {
	return []simCase{
		{"pendulum", func() stateSetter { return sims.NewPendulum() }, func(r *rand.Rand) []float64 {
			return []float64{(2*r.Float64() - 1) * 3 * math.Pi, (2*r.Float64() - 1) * 8}
		}},
		{"cartpole-balance", func() stateSetter { return sims.NewDMCCartPole(false) }, func(r *rand.Rand) []float64 {
			return []float64{(2*r.Float64() - 1) * 1.8, (2*r.Float64() - 1) * 3 * math.Pi, 3 * r.NormFloat64(), 5 * r.NormFloat64()}
		}},
		{"cartpole-swingup", func() stateSetter { return sims.NewDMCCartPole(true) }, func(r *rand.Rand) []float64 {
			return []float64{1.79 * (2*r.Float64() - 1), math.Pi + r.NormFloat64(), 3 * r.NormFloat64(), 5 * r.NormFloat64()}
		}},
	}
}

// TestPublicMirror checks each environment's declared mirror symmetry
// against its simulator: stepping from the mirrored state under the
// mirrored action reaches the mirrored observation with the same reward.
func TestPublicMirror(t *testing.T) {
	for _, tc := range simCases() {
		t.Run(tc.env, func(t *testing.T) {
			sc, err := PublicScales(tc.env)
			if err != nil {
				t.Fatal(err)
			}
			a, b := tc.new(), tc.new()
			od, ad := a.ObservationSpace().Dim(), a.ActionSpace().Dim()
			if err := sc.Validate(od, ad); err != nil || sc.Mirror == nil {
				t.Fatalf("scales %+v: %v", sc, err)
			}
			r := rand.New(rand.NewPCG(5, 6))
			obsA, obsB := make([]float64, od), make([]float64, od)
			act, mact := sims.Action{Vec: make([]float64, ad)}, sims.Action{Vec: make([]float64, ad)}
			for range 2000 {
				st := tc.state(r)
				mst := make([]float64, len(st))
				for i, v := range st {
					mst[i] = -v // every coordinate of both simulators' states is odd under the mirror
				}
				if err := a.SetState(st, obsA); err != nil {
					t.Fatal(err)
				}
				if err := b.SetState(mst, obsB); err != nil {
					t.Fatal(err)
				}
				for i := range od {
					if math.Abs(obsB[i]-sc.Mirror[i]*obsA[i]) > 1e-12 {
						t.Fatalf("state %v: mirrored observation %v, want the mirror of %v", st, obsB, obsA)
					}
				}
				for j := range ad {
					act.Vec[j] = 2.2 * (2*r.Float64() - 1)
					mact.Vec[j] = sc.Mirror[od+j] * act.Vec[j]
				}
				ra, _, _ := a.Step(act, obsA)
				rb, _, _ := b.Step(mact, obsB)
				if math.Abs(ra-rb) > 1e-12*(1+math.Abs(ra)) {
					t.Fatalf("state %v action %v: reward %v, mirrored %v", st, act.Vec, ra, rb)
				}
				for i := range od {
					if math.Abs(obsB[i]-sc.Mirror[i]*obsA[i]) > 1e-9*(1+math.Abs(obsA[i])) {
						t.Fatalf("state %v action %v: next %v, mirrored step reached %v", st, act.Vec, obsA, obsB)
					}
				}
			}
		})
	}
}

// TestModelEnvMirror shows the mirror cancelling a constant drift of the
// speed that both models share, keeping the rest of their prediction.
func TestModelEnvMirror(t *testing.T) {
	means := [2][4]float64{{0.1, 0, 0.05, -0.5}, {0.1, 0, 0.05, -0.5}}
	e, p := constEnsemble(t, means)
	sc := Scales{In: []float64{1, 1, 8, 2}, Out: []float64{1, 1, 8, 16}}
	m, err := NewModelEnv(sims.NewPendulum(), e, p, sc, MPD, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetMirror(true); err == nil {
		t.Fatal("SetMirror without Scales.Mirror: no error")
	}
	sc.Mirror = []float64{1, -1, -1, -1}
	if m, err = NewModelEnv(sims.NewPendulum(), e, p, sc, MPD, 2, 3); err != nil {
		t.Fatal(err)
	}
	sd := math.Exp(-5) // the minimum log-variance's standard deviation
	for _, on := range []bool{false, true} {
		if err := m.SetMirror(on); err != nil {
			t.Fatal(err)
		}
		obs := make([]float64, 3)
		m.Reset(rand.New(rand.NewPCG(1, 2)), obs)
		prev := append([]float64(nil), obs...)
		r, _, _ := m.Step(sims.Action{Vec: []float64{0.5}}, obs)
		drift := 0.05 * 8
		if on {
			drift = 0 // the constant push on the speed is odd under the mirror: it cancels
		}
		if got := obs[2] - prev[2]; math.Abs(got-drift) > 5*sd*8 {
			t.Fatalf("mirror %v: the speed changed by %v, want %v", on, got, drift)
		}
		if math.Abs(r-(-0.5*16)) > 5*sd*16 {
			t.Fatalf("mirror %v: reward %v, want the models' %v", on, r, -0.5*16)
		}
	}
}

// TestPublicReward checks each environment's public reward function
// against its simulator's reward on random states and actions (actions past
// the bounds too, which both clip).
func TestPublicReward(t *testing.T) {
	for _, tc := range simCases() {
		t.Run(tc.env, func(t *testing.T) {
			sc, err := PublicScales(tc.env)
			if err != nil || sc.Reward == nil {
				t.Fatalf("scales %+v: %v", sc, err)
			}
			env := tc.new()
			od, ad := env.ObservationSpace().Dim(), env.ActionSpace().Dim()
			r := rand.New(rand.NewPCG(7, 8))
			obs, next := make([]float64, od), make([]float64, od)
			act := sims.Action{Vec: make([]float64, ad)}
			for range 2000 {
				if err := env.SetState(tc.state(r), obs); err != nil {
					t.Fatal(err)
				}
				for j := range act.Vec {
					act.Vec[j] = 2.5 * env.ActionSpace().High[j] * (2*r.Float64() - 1)
				}
				copy(next, obs)
				want, _, _ := env.Step(act, next)
				if got := sc.Reward(obs, act.Vec, next); math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
					t.Fatalf("obs %v action %v next %v: public reward %v, simulator %v", obs, act.Vec, next, got, want)
				}
			}
		})
	}
}

// TestModelEnvPublicReward checks that SetPublicReward replaces the
// ensemble's reward by the public function of the model's transition, the
// penalty still subtracted, and that it needs the function.
func TestModelEnvPublicReward(t *testing.T) {
	means := [2][4]float64{{0.1, 0, 0.05, -0.5}, {0.1, 0, 0.05, -0.3}}
	e, p := constEnsemble(t, means)
	sc := Scales{In: []float64{1, 1, 8, 2}, Out: []float64{1, 1, 8, 16}}
	m, err := NewModelEnv(sims.NewPendulum(), e, p, sc, MPD, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetPublicReward(true); err == nil {
		t.Fatal("SetPublicReward without Scales.Reward: no error")
	}
	var seen [3][]float64
	sc.Reward = func(obs, act, next []float64) float64 {
		seen = [3][]float64{append([]float64(nil), obs...), append([]float64(nil), act...), append([]float64(nil), next...)}
		return 0.25
	}
	if m, err = NewModelEnv(sims.NewPendulum(), e, p, sc, MPD, 2, 3); err != nil {
		t.Fatal(err)
	}
	if err := m.SetPublicReward(true); err != nil {
		t.Fatal(err)
	}
	obs := make([]float64, 3)
	m.Reset(rand.New(rand.NewPCG(1, 2)), obs)
	prev := append([]float64(nil), obs...)
	got, _, _ := m.Step(sims.Action{Vec: []float64{0.5}}, obs)
	u := 0.2 // the two models disagree on the scaled reward only, by 0.2
	if want := 0.25 - 2*u; math.Abs(got-want) > 1e-9 {
		t.Fatalf("reward %v, want the public 0.25 minus the penalty 2 x %v", got, u)
	}
	if !slices.Equal(seen[0], prev) || !slices.Equal(seen[1], []float64{0.5}) || !slices.Equal(seen[2], obs) {
		t.Fatalf("the reward function saw %v, want the step's observation %v, action [0.5] and next observation %v", seen, prev, obs)
	}
}

// TestModelEnvMeanStep: with SetMeanStep every step goes exactly to the
// models' average prediction; with SetModelPerRollout each rollout follows
// one model throughout, and both models lead rollouts.
func TestModelEnvMeanStep(t *testing.T) {
	means := [2][4]float64{{0, 0, 0.05, -0.5}, {0, 0, -0.15, -0.3}}
	e, p := constEnsemble(t, means)
	sc := Scales{In: []float64{1, 1, 8, 2}, Out: []float64{1, 1, 8, 16}}
	m, err := NewModelEnv(sims.NewPendulum(), e, p, sc, MPD, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	obs := make([]float64, 3)
	rng := rand.New(rand.NewPCG(3, 4))
	m.SetMeanStep(true)
	m.Reset(rng, obs)
	for range 3 {
		prev := obs[2]
		r, _, _ := m.Step(sims.Action{Vec: []float64{0.5}}, obs)
		if d := obs[2] - prev; math.Abs(d-(-0.05*8)) > 1e-12 || math.Abs(r-(-0.4*16)) > 1e-12 {
			t.Fatalf("mean step: speed change %v and reward %v, want the average %v and %v exactly", d, r, -0.05*8, -0.4*16)
		}
	}
	m.SetMeanStep(false)
	m.SetModelPerRollout(true)
	sd := math.Exp(-5) * 8
	var led [2]int
	for range 40 {
		m.Reset(rng, obs)
		first := -1
		for range 3 {
			prev := obs[2]
			m.Step(sims.Action{Vec: []float64{0.5}}, obs)
			d := obs[2] - prev
			k := 0
			if math.Abs(d-(-0.15*8)) < 5*sd {
				k = 1
			} else if math.Abs(d-0.05*8) > 5*sd {
				t.Fatalf("speed change %v: neither model's", d)
			}
			if first >= 0 && k != first {
				t.Fatalf("a rollout switched from model %d to %d", first, k)
			}
			first = k
		}
		led[first]++
	}
	if led[0] == 0 || led[1] == 0 {
		t.Fatalf("rollouts led by each model: %v, want both", led)
	}
}
