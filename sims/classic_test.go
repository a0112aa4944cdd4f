package sims

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// refStep is one step of a reference trajectory from testdata/classic_ref.py,
// an independent Python statement of Gymnasium's equations.
type refStep struct {
	State      []float64 `json:"state"`
	Action     any       `json:"action"` // an index, or a list for pendulum
	NextState  []float64 `json:"next_state"`
	NextObs    []float64 `json:"next_obs"`
	Reward     float64   `json:"reward"`
	Terminated bool      `json:"terminated"`
}

type refTraj struct {
	Env   string    `json:"env"`
	Name  string    `json:"name"`
	Steps []refStep `json:"steps"`
}

func loadRef(t *testing.T) []refTraj {
	t.Helper()
	b, err := os.ReadFile("testdata/classic_ref.json")
	if err != nil {
		t.Fatal(err)
	}
	var trajs []refTraj
	if err := json.Unmarshal(b, &trajs); err != nil {
		t.Fatal(err)
	}
	return trajs
}

func refAction(t *testing.T, a any) Action {
	t.Helper()
	switch v := a.(type) {
	case float64:
		return Action{Index: int(v)}
	case []any:
		vec := make([]float64, len(v))
		for i, x := range v {
			vec[i] = x.(float64)
		}
		return Action{Vec: vec}
	}
	t.Fatalf("bad reference action %v", a)
	return Action{}
}

// close reports whether got matches want to 1e-9 relative (with an absolute
// floor of 1e-12 for values near zero, such as sin of a near-zero angle).
func closeTo(got, want float64) bool {
	return math.Abs(got-want) <= 1e-9*math.Abs(want)+1e-12
}

func checkVec(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: length %d, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !closeTo(got[i], want[i]) {
			t.Fatalf("%s[%d] = %.17g, want %.17g (all: %v vs %v)", what, i, got[i], want[i], got, want)
		}
	}
}

// TestClassicMatchesReference steps each environment from every reference
// pre-step state (stepwise) and also runs each whole trajectory from its
// first state (so errors would accumulate), comparing observations, rewards
// and termination at 1e-9 relative.
func TestClassicMatchesReference(t *testing.T) {
	for _, tr := range loadRef(t) {
		t.Run(tr.Env+"/"+tr.Name, func(t *testing.T) {
			env, err := New(tr.Env)
			if err != nil {
				t.Fatal(err)
			}
			ss := env.(StateSetter)
			obs := make([]float64, env.ObservationSpace().Dim())
			rng := rand.New(rand.NewPCG(1, 2))

			// Stepwise.
			for i, st := range tr.Steps {
				env.Reset(rng, obs)
				if err := ss.SetState(st.State, obs); err != nil {
					t.Fatal(err)
				}
				r, term, _ := env.Step(refAction(t, st.Action), obs)
				checkVec(t, "stepwise obs", obs, st.NextObs)
				if !closeTo(r, st.Reward) || term != st.Terminated {
					t.Fatalf("step %d: reward %v terminated %v, want %v %v", i, r, term, st.Reward, st.Terminated)
				}
			}

			// Whole trajectory.
			env.Reset(rng, obs)
			if err := ss.SetState(tr.Steps[0].State, obs); err != nil {
				t.Fatal(err)
			}
			for i, st := range tr.Steps {
				r, term, trunc := env.Step(refAction(t, st.Action), obs)
				checkVec(t, "trajectory obs", obs, st.NextObs)
				if !closeTo(r, st.Reward) || term != st.Terminated {
					t.Fatalf("step %d: reward %v terminated %v, want %v %v", i, r, term, st.Reward, st.Terminated)
				}
				if want := i+1 >= env.MaxSteps(); trunc != want {
					t.Fatalf("step %d: truncated %v, want %v", i, trunc, want)
				}
			}
		})
	}
}

// TestHandComputedSteps checks single steps against values worked out by hand
// from the written-out equations.
func TestHandComputedSteps(t *testing.T) {
	tests := []struct {
		name    string
		env     Env
		state   []float64
		action  Action
		obs     []float64
		reward  float64
		term    bool
		relTol  float64
		comment string
	}{
		{
			name: "cartpole/upright-push-right", env: NewCartPole(), state: []float64{0, 0, 0, 0}, action: Action{Index: 1},
			// temp = 10/1.1 = 100/11; thetaacc = -temp/(0.5*(4/3-0.1/1.1)) = -600/41;
			// xacc = temp - 0.05*thetaacc/1.1 = 4400/451.
			obs: []float64{0, 0.02 * 4400.0 / 451.0, 0, 0.02 * -600.0 / 41.0}, reward: 1, relTol: 1e-14,
		},
		{
			name: "cartpole/upright-push-left", env: NewCartPole(), state: []float64{0.1, 0.5, 0, 0}, action: Action{Index: 0},
			obs: []float64{0.1 + 0.02*0.5, 0.5 - 0.02*4400.0/451.0, 0, 0.02 * 600.0 / 41.0}, reward: 1, relTol: 1e-14,
		},
		{
			name: "pendulum/bottom-at-rest-full-torque", env: NewPendulum(), state: []float64{0, 0}, action: Action{Vec: []float64{2}},
			// cost 0.001*2^2; newthdot = 3*2*0.05 = 0.3; newth = 0.3*0.05.
			obs: []float64{math.Cos(0.015), math.Sin(0.015), 0.3}, reward: -0.004, relTol: 1e-14,
		},
		{
			name: "pendulum/torque-clipped", env: NewPendulum(), state: []float64{0, 0}, action: Action{Vec: []float64{7.5}},
			obs: []float64{math.Cos(0.015), math.Sin(0.015), 0.3}, reward: -0.004, relTol: 1e-14,
		},
		{
			name: "pendulum/top-angle-normalized", env: NewPendulum(), state: []float64{math.Pi, 0}, action: Action{Vec: []float64{0}},
			// angle_normalize(pi) = (2pi mod 2pi) - pi = -pi: cost pi^2.
			obs: []float64{math.Cos(math.Pi), math.Sin(math.Pi), 15 * math.Sin(math.Pi) * 0.05}, reward: -math.Pi * math.Pi, relTol: 1e-6,
		},
		{
			name: "pendulum/speed-clipped", env: NewPendulum(), state: []float64{math.Pi / 2, 7.9}, action: Action{Vec: []float64{2}},
			// 7.9 + (15 + 6)*0.05 = 8.95 -> 8; cost (pi/2)^2 + 0.1*7.9^2 + 0.004.
			obs:    []float64{math.Cos(math.Pi/2 + 0.4), math.Sin(math.Pi/2 + 0.4), 8},
			reward: -(math.Pi*math.Pi/4 + 0.1*7.9*7.9 + 0.004), relTol: 1e-14,
		},
		{
			name: "mountaincar/push-right", env: NewMountainCar(), state: []float64{-0.5, 0}, action: Action{Index: 2},
			obs:    []float64{-0.5 + 0.001 - 0.0025*math.Cos(-1.5), 0.001 - 0.0025*math.Cos(-1.5)},
			reward: -1, relTol: 1e-13,
		},
		{
			name: "mountaincar/velocity-clipped", env: NewMountainCar(), state: []float64{-0.5, 0.0699}, action: Action{Index: 2},
			obs: []float64{-0.5 + 0.07, 0.07}, reward: -1, relTol: 1e-15,
		},
		{
			name: "mountaincar/left-wall-stops", env: NewMountainCar(), state: []float64{-1.19, -0.05}, action: Action{Index: 0},
			obs: []float64{-1.2, 0}, reward: -1, relTol: 0,
		},
		{
			name: "mountaincar/goal", env: NewMountainCar(), state: []float64{0.49, 0.05}, action: Action{Index: 1},
			obs: []float64{0.49 + 0.05 - 0.0025*math.Cos(1.47), 0.05 - 0.0025*math.Cos(1.47)}, reward: -1, term: true, relTol: 1e-13,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obs := make([]float64, tc.env.ObservationSpace().Dim())
			tc.env.Reset(rand.New(rand.NewPCG(1, 1)), obs)
			if err := tc.env.(StateSetter).SetState(tc.state, obs); err != nil {
				t.Fatal(err)
			}
			r, term, _ := tc.env.Step(tc.action, obs)
			for i := range obs {
				if math.Abs(obs[i]-tc.obs[i]) > tc.relTol*math.Abs(tc.obs[i])+1e-15 {
					t.Errorf("obs[%d] = %.17g, want %.17g", i, obs[i], tc.obs[i])
				}
			}
			if math.Abs(r-tc.reward) > tc.relTol*math.Abs(tc.reward) || term != tc.term {
				t.Errorf("reward %v terminated %v, want %v %v", r, term, tc.reward, tc.term)
			}
		})
	}
}

// TestAcrobotDerivativeByHand checks _dsdt at theta = 0, dtheta = 0 and unit
// torque: d1 = 4.5, d2 = 1.75, phi1 = phi2 = 0 (to rounding), so
// ddtheta2 = 1/(1.25 - 1.75^2/4.5) = 72/41 and ddtheta1 = -1.75 ddtheta2/4.5.
func TestAcrobotDerivativeByHand(t *testing.T) {
	e := NewAcrobot()
	var d [5]float64
	e.dsdt(&d, &[5]float64{0, 0, 0, 0, 1})
	want := [5]float64{0, 0, -1.75 * 72.0 / 41.0 / 4.5, 72.0 / 41.0, 0}
	for i := range d {
		if math.Abs(d[i]-want[i]) > 1e-13 {
			t.Errorf("dsdt[%d] = %.17g, want %.17g", i, d[i], want[i])
		}
	}
	// Gravity alone at theta1 = pi/2 (arm horizontal), at rest, no torque:
	// phi2 = 4.9 cos(0) = 4.9, phi1 = 14.7 cos(0) + 4.9 = 19.6, d1 = 4.5,
	// d2 = 1.75; ddtheta2 = (d2/d1*phi1 - phi2)/(1.25 - d2^2/d1).
	e.dsdt(&d, &[5]float64{math.Pi / 2, 0, 0, 0, 0})
	dd2 := (1.75/4.5*19.6 - 4.9) / (1.25 - 1.75*1.75/4.5)
	dd1 := -(1.75*dd2 + 19.6) / 4.5
	if math.Abs(d[3]-dd2) > 1e-12 || math.Abs(d[2]-dd1) > 1e-12 {
		t.Errorf("gravity: ddtheta = (%v, %v), want (%v, %v)", d[2], d[3], dd1, dd2)
	}
}

func TestTerminationThresholds(t *testing.T) {
	thr := 12 * 2 * math.Pi / 360
	tests := []struct {
		name   string
		env    Env
		state  []float64
		action int
		term   bool
	}{
		// CartPole: strict inequalities on the post-step state.
		{"cartpole/x-at-limit", NewCartPole(), []float64{2.4, 0, 0, 0}, 1, false},
		{"cartpole/x-past-limit", NewCartPole(), []float64{2.4, 0.01, 0, 0}, 1, true},
		{"cartpole/x-past-negative-limit", NewCartPole(), []float64{-2.4, -0.01, 0, 0}, 0, true},
		{"cartpole/theta-inside", NewCartPole(), []float64{0, 0, thr - 0.001, 0.04}, 1, false},
		{"cartpole/theta-past-limit", NewCartPole(), []float64{0, 0, thr - 0.001, 0.06}, 1, true},
		{"cartpole/theta-past-negative-limit", NewCartPole(), []float64{0, 0, -thr + 0.001, -0.06}, 0, true},
		// MountainCar: position >= 0.5 and velocity >= 0.
		{"mountaincar/at-goal", NewMountainCar(), []float64{0.45, 0.06}, 2, true},
		{"mountaincar/short", NewMountainCar(), []float64{0.4, 0.05}, 2, false},
		// Acrobot: -cos(t1) - cos(t1 + t2) > 1, i.e. tip above the bar.
		{"acrobot/hanging", NewAcrobot(), []float64{0, 0, 0, 0}, 1, false},
		{"acrobot/upright", NewAcrobot(), []float64{math.Pi - 0.01, 0, 0, 0}, 1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obs := make([]float64, tc.env.ObservationSpace().Dim())
			tc.env.Reset(rand.New(rand.NewPCG(1, 1)), obs)
			if err := tc.env.(StateSetter).SetState(tc.state, obs); err != nil {
				t.Fatal(err)
			}
			r, term, _ := tc.env.Step(Action{Index: tc.action}, obs)
			if term != tc.term {
				t.Fatalf("terminated = %v, want %v (obs %v)", term, tc.term, obs)
			}
			if _, ok := tc.env.(*Acrobot); ok {
				if want := map[bool]float64{true: 0, false: -1}[term]; r != want {
					t.Fatalf("acrobot reward %v, want %v", r, want)
				}
			}
		})
	}
}

// TestCartPoleRewardAfterTermination: reward 1 on the terminating step, 0 on
// steps taken after it, as Gymnasium's steps_beyond_terminated.
func TestCartPoleRewardAfterTermination(t *testing.T) {
	e := NewCartPole()
	obs := make([]float64, 4)
	e.Reset(rand.New(rand.NewPCG(1, 1)), obs)
	if err := e.SetState([]float64{2.4, 1, 0, 0}, obs); err != nil {
		t.Fatal(err)
	}
	if r, term, _ := e.Step(Action{Index: 1}, obs); r != 1 || !term {
		t.Fatalf("terminating step: reward %v terminated %v", r, term)
	}
	if r, term, _ := e.Step(Action{Index: 1}, obs); r != 0 || !term {
		t.Fatalf("step after termination: reward %v terminated %v", r, term)
	}
}

func TestResetBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	type bounds struct{ low, high []float64 }
	for _, tc := range []struct {
		env Env
		get func(Env) []float64
		b   bounds
	}{
		{NewCartPole(), func(e Env) []float64 { c := e.(*CartPole); return []float64{c.x, c.xDot, c.theta, c.thetaDot} },
			bounds{[]float64{-0.05, -0.05, -0.05, -0.05}, []float64{0.05, 0.05, 0.05, 0.05}}},
		{NewAcrobot(), func(e Env) []float64 { return e.(*Acrobot).s[:] },
			bounds{[]float64{-0.1, -0.1, -0.1, -0.1}, []float64{0.1, 0.1, 0.1, 0.1}}},
		{NewPendulum(), func(e Env) []float64 { p := e.(*Pendulum); return []float64{p.theta, p.thetaDot} },
			bounds{[]float64{-math.Pi, -1}, []float64{math.Pi, 1}}},
		{NewMountainCar(), func(e Env) []float64 { m := e.(*MountainCar); return []float64{m.position, m.velocity} },
			bounds{[]float64{-0.6, 0}, []float64{-0.4, 0}}},
	} {
		obs := make([]float64, tc.env.ObservationSpace().Dim())
		lo := make([]float64, len(tc.b.low))
		hi := make([]float64, len(tc.b.low))
		for i := range lo {
			lo[i], hi[i] = math.Inf(1), math.Inf(-1)
		}
		for range 2000 {
			tc.env.Reset(rng, obs)
			s := tc.get(tc.env)
			for i, v := range s {
				if v < tc.b.low[i] || v > tc.b.high[i] {
					t.Fatalf("%T: reset state %v outside %v", tc.env, s, tc.b)
				}
				lo[i], hi[i] = min(lo[i], v), max(hi[i], v)
			}
			if a, ok := tc.env.(*Acrobot); ok {
				for _, v := range a.s {
					if float64(float32(v)) != v {
						t.Fatalf("acrobot reset component %v is not float32-rounded", v)
					}
				}
			}
		}
		// The draws cover the interval (not a constant).
		for i := range lo {
			width := tc.b.high[i] - tc.b.low[i]
			if width > 0 && (lo[i] > tc.b.low[i]+0.05*width || hi[i] < tc.b.high[i]-0.05*width) {
				t.Errorf("%T: component %d spans [%v, %v], want most of %v..%v", tc.env, i, lo[i], hi[i], tc.b.low[i], tc.b.high[i])
			}
		}
	}
}

// TestPendulumBounds: over random rollouts the speed stays within ±8 and the
// reward within [-(pi^2 + 0.1*64 + 0.001*4), 0].
func TestPendulumBounds(t *testing.T) {
	e := NewPendulum()
	rng := rand.New(rand.NewPCG(3, 4))
	obs := make([]float64, 3)
	minR := -(math.Pi*math.Pi + 0.1*64 + 0.001*4)
	act := Action{Vec: make([]float64, 1)}
	for range 20 {
		e.Reset(rng, obs)
		for {
			act.Vec[0] = uniform(rng, -5, 5) // beyond the bounds: clipped
			r, term, trunc := e.Step(act, obs)
			if math.Abs(obs[2]) > 8 || r > 0 || r < minR || term {
				t.Fatalf("obs %v reward %v terminated %v", obs, r, term)
			}
			if math.Abs(obs[0]*obs[0]+obs[1]*obs[1]-1) > 1e-12 {
				t.Fatalf("cos^2 + sin^2 != 1: %v", obs)
			}
			if trunc {
				break
			}
		}
	}
}

// TestMountainCarInvariants: velocity within ±0.07 and position within
// [-1.2, 0.6] along random rollouts; at the left wall the velocity is never
// negative.
func TestMountainCarInvariants(t *testing.T) {
	e := NewMountainCar()
	rng := rand.New(rand.NewPCG(5, 6))
	obs := make([]float64, 2)
	hitWall := false
	for range 50 {
		e.Reset(rng, obs)
		for {
			r, term, trunc := e.Step(Action{Index: rng.IntN(3)}, obs)
			p, v := obs[0], obs[1]
			if math.Abs(v) > 0.07 || p < -1.2 || p > 0.6 || r != -1 {
				t.Fatalf("obs %v reward %v", obs, r)
			}
			if p == -1.2 {
				hitWall = true
				if v < 0 {
					t.Fatalf("left wall with negative velocity %v", v)
				}
			}
			if term || trunc {
				break
			}
		}
	}
	// Drive into the wall on purpose.
	if err := e.SetState([]float64{-1.1, -0.07}, obs); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		e.Step(Action{Index: 0}, obs)
		if obs[0] == -1.2 {
			hitWall = true
			if obs[1] != 0 {
				t.Fatalf("at the wall velocity %v, want 0", obs[1])
			}
		}
	}
	if !hitWall {
		t.Fatal("never reached the left wall")
	}
}

func TestAngleNormalize(t *testing.T) {
	for _, tc := range []struct{ x, want float64 }{
		{0, 0},
		{math.Pi, -math.Pi},
		{-math.Pi, -math.Pi},
		{3 * math.Pi / 2, -math.Pi / 2},
		{-3 * math.Pi / 2, math.Pi / 2},
		{10, 10 - 4*math.Pi},
		{-10, -10 + 4*math.Pi},
	} {
		if got := angleNormalize(tc.x); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("angleNormalize(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
	// Python: (-1.0) % 3.0 == 2.0, 1.0 % -3.0 == -2.0, (-0.0) % 3.0 == 0.0.
	for _, tc := range []struct{ x, m, want float64 }{{-1, 3, 2}, {1, -3, -2}, {7, 3, 1}, {-7, -3, -1}, {-6, 3, 0}} {
		if got := pyMod(tc.x, tc.m); got != tc.want {
			t.Errorf("pyMod(%v, %v) = %v, want %v", tc.x, tc.m, got, tc.want)
		}
	}
	if got := pyMod(-6, 3); math.Signbit(got) {
		t.Errorf("pyMod(-6, 3) = -0, want +0")
	}
}

func TestWrap(t *testing.T) {
	pi := math.Pi
	for _, tc := range []struct{ x, want float64 }{
		{0, 0}, {pi, pi}, {-pi, -pi}, {pi + 0.5, pi + 0.5 - 2*pi}, {-pi - 0.5, -pi - 0.5 + 2*pi}, {5 * pi, pi},
	} {
		if got := wrap(tc.x, -pi, pi); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("wrap(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
	if got := wrap(1e300, -pi, pi); !(got >= -pi && got <= pi) {
		t.Errorf("wrap(1e300) = %v, want in [-pi, pi]", got)
	}
	if got := wrap(math.Inf(1), -pi, pi); !math.IsNaN(got) {
		t.Errorf("wrap(+Inf) = %v, want NaN", got)
	}
}

func TestSetStateRejects(t *testing.T) {
	for _, name := range []string{"cartpole", "acrobot", "pendulum", "mountaincar", "riverswim", "chain"} {
		env, err := New(name)
		if err != nil {
			t.Fatal(err)
		}
		ss := env.(StateSetter)
		obs := make([]float64, env.ObservationSpace().Dim())
		env.Reset(rand.New(rand.NewPCG(1, 1)), obs)
		n := len(stateNames(t, env))
		good := make([]float64, n)
		if err := ss.SetState(good, obs); err != nil {
			t.Errorf("%s: zero state rejected: %v", name, err)
		}
		for _, bad := range [][]float64{nil, make([]float64, n+1), withValue(n, math.NaN()), withValue(n, math.Inf(-1))} {
			if err := ss.SetState(bad, obs); err == nil {
				t.Errorf("%s: SetState(%v) accepted", name, bad)
			} else if !errors.Is(err, ErrBadState) {
				t.Errorf("%s: SetState(%v) error %v does not wrap ErrBadState", name, bad, err)
			}
		}
	}
}

func withValue(n int, v float64) []float64 {
	s := make([]float64, n)
	s[n-1] = v
	return s
}

// stateNames returns the state layout of an environment (its length is what
// SetState wants).
func stateNames(t *testing.T, env Env) []string {
	t.Helper()
	switch env.(type) {
	case *CartPole, *Acrobot, *DMCCartPole:
		return make([]string, 4)
	case *Pendulum, *MountainCar:
		return make([]string, 2)
	case *RiverSwim, *Chain:
		return make([]string, 1)
	}
	t.Fatalf("no state layout for %T", env)
	return nil
}

// TestStepPanicsOnBadAction: Step treats an action outside the space as a
// programmer error.
func TestStepPanicsOnBadAction(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  Env
		act  Action
	}{
		{"cartpole/index-2", NewCartPole(), Action{Index: 2}},
		{"cartpole/vector", NewCartPole(), Action{Vec: []float64{1}}},
		{"acrobot/negative", NewAcrobot(), Action{Index: -1}},
		{"pendulum/nan", NewPendulum(), Action{Vec: []float64{math.NaN()}}},
		{"pendulum/two-dims", NewPendulum(), Action{Vec: []float64{1, 1}}},
		{"mountaincar/index-3", NewMountainCar(), Action{Index: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := make([]float64, tc.env.ObservationSpace().Dim())
			tc.env.Reset(rand.New(rand.NewPCG(1, 1)), obs)
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			tc.env.Step(tc.act, obs)
		})
	}
}
