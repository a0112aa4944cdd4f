package ope

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"dprl/sessionlog"
	"dprl/space"
)

// TestSmallLog checks every estimator against values computed by hand on a
// four-decision log.
func TestSmallLog(t *testing.T) {
	// Two actions; the target always takes action 1.
	always1 := func(dst, _ []float64) { dst[0], dst[1] = 0, 1 }
	l := &Log{Actions: 2, Policy: always1, Decisions: []Decision{
		{X: []float64{0}, Action: 1, Reward: 1, Prob: 0.5},
		{X: []float64{1}, Action: 0, Reward: 1, Prob: 0.5},
		{X: []float64{2}, Action: 1, Reward: 0, Prob: 0.25},
		{X: []float64{3}, Action: 1, Reward: 1, Prob: 0.25},
	}}
	opt := Options{Rand: rand.New(rand.NewPCG(1, 1)), WeightBound: 4, Bootstrap: 2000}
	// w = 2, 0, 4, 4; w r = 2, 0, 0, 4.
	ipsE, err := IPS(l, opt)
	if err != nil {
		t.Fatal(err)
	}
	if want := 6.0 / 4; math.Abs(ipsE.Value-want) > 1e-12 {
		t.Errorf("IPS %v, want %v", ipsE.Value, want)
	}
	// Wald: sd of (2, 0, 0, 4) = sqrt(11/3); half-width z sd / 2.
	wd, _ := ipsE.Interval(MethodWald)
	if want := 1.959963984540054 * math.Sqrt(11.0/3) / 2; math.Abs(wd.Width()/2-want) > 1e-9 {
		t.Errorf("IPS Wald half-width %v, want %v", wd.Width()/2, want)
	}
	// Bootstrap: inside the range of the resampled means [0, 4].
	bs, _ := ipsE.Interval(MethodBootstrap)
	if !(bs.Lo >= 0 && bs.Lo < ipsE.Value && bs.Hi > ipsE.Value && bs.Hi <= 4) {
		t.Errorf("IPS bootstrap %+v around %v", bs, ipsE.Value)
	}
	// Bernstein: n = 4, range [0, 4], delta = 0.025 per side: the deviation
	// sqrt(2 (11/3) ln 80 / 4) + 7 * 4 ln 80 / 9 exceeds the range: [0, 1].
	bn, _ := ipsE.Interval(MethodBernstein)
	if bn.Lo != 0 || bn.Hi != 1 {
		t.Errorf("IPS Bernstein %+v, want [0, 1] (vacuous at n = 4)", bn)
	}
	if got, want := bernsteinHalf(11.0/3, 4, 4, 0.025), math.Sqrt(2*11.0/3*math.Log(80)/4)+7*4*math.Log(80)/9; math.Abs(got-want) > 1e-12 {
		t.Errorf("bernsteinHalf %v, want %v", got, want)
	}
	sn, err := SNIPS(l, opt)
	if err != nil {
		t.Fatal(err)
	}
	if want := 6.0 / 10; math.Abs(sn.Value-want) > 1e-12 {
		t.Errorf("SNIPS %v, want %v", sn.Value, want)
	}
	// Thomas et al. Theorem 1 with c = 4 on Y = (2, 0, 0, 4):
	// 1.5 - 7*4 ln(2/0.05) / 9 - sqrt(2 ln 40 (11/3) / 4).
	if got, want := thomasBound([]float64{2, 0, 0, 4}, 4, 0.05, 4), 1.5-28*math.Log(40)/9-math.Sqrt(2*math.Log(40)*11/3/4); math.Abs(got-want) > 1e-12 {
		t.Errorf("thomasBound %v, want %v", got, want)
	}
}

// TestDRExactModel: when each action's reward is a constant, the
// cross-fitted reward model is exact, the residuals vanish, and DR (and
// DRos and Switch-DR) return the direct method's value sum_a pi(a | x) c_a with zero
// width, whatever the weights.
func TestDRExactModel(t *testing.T) {
	c := []float64{0.2, 0.7, 0.4}
	pi := func(dst, x []float64) { dst[0], dst[1], dst[2] = 0.5, 0.3, 0.2 }
	want := 0.5*0.2 + 0.3*0.7 + 0.2*0.4
	rng := rand.New(rand.NewPCG(3, 4))
	l := &Log{Actions: 3, Policy: pi}
	for range 60 {
		a := rng.IntN(3)
		l.Decisions = append(l.Decisions, Decision{X: []float64{rng.Float64(), rng.NormFloat64()}, Action: a, Reward: c[a], Prob: 1.0 / 3})
	}
	for _, f := range []func(*Log, Options) (Estimate, error){DR, DRos, SwitchDR} {
		e, err := f(l, Options{Rand: rng})
		if err != nil {
			t.Fatal(err)
		}
		wd, _ := e.Interval(MethodWald)
		if math.Abs(e.Value-want) > 1e-9 || wd.Width() > 1e-9 {
			t.Errorf("%s %v (Wald %+v), want %v with zero width", e.Estimator, e.Value, wd, want)
		}
	}
}

// TestEvaluate checks the report: lower bound, the estimators present with
// and without the target's distribution, weight diagnostics.
func TestEvaluate(t *testing.T) {
	w := newWorld(t)
	rng := rand.New(rand.NewPCG(5, 6))
	l := w.log(1000, rng)
	rep, err := Evaluate(l, Options{Rand: rng, WeightBound: w.weightBound(), Bootstrap: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.NonPrivate || rep.N != 1000 || len(rep.Estimates) != 6 || rep.Estimates[0].Estimator != EstEL {
		t.Fatalf("report %+v, want non-private, n 1000, 6 estimates, EL first", rep)
	}
	if !(rep.LowerBound.Value < rep.Estimates[1].Value) || rep.LowerBound.Method != MethodHCOPE || rep.LowerBound.Pre+rep.LowerBound.Post != 1000 {
		t.Errorf("lower bound %+v, IPS %v", rep.LowerBound, rep.Estimates[1].Value)
	}
	if !(rep.ESS > 10 && rep.ESS < 1000) || math.Abs(rep.MeanWeight-1) > 0.2 || rep.MaxWeight > w.weightBound() {
		t.Errorf("diagnostics ESS %v, mean weight %v, max weight %v", rep.ESS, rep.MeanWeight, rep.MaxWeight)
	}
	// Without the distribution: the target's probability of the logged
	// action only; EL, IPS and SNIPS, no DR.
	for i := range l.Decisions {
		w.target(w.pi, l.Decisions[i].X)
		l.Decisions[i].Target = w.pi[l.Decisions[i].Action]
	}
	l.Policy = nil
	rep2, err := Evaluate(l, Options{Rand: rand.New(rand.NewPCG(5, 6)), Bootstrap: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep2.Estimates) != 3 || rep2.Estimates[1].Value != rep.Estimates[1].Value {
		t.Errorf("without Policy: %d estimates, IPS %v; want 3 and the same IPS %v", len(rep2.Estimates), rep2.Estimates[1].Value, rep.Estimates[1].Value)
	}
}

// TestFromSessions reads one-step sessions written by the session-log
// writer and maps them onto decisions; other sessions are refused.
func TestFromSessions(t *testing.T) {
	var buf bytes.Buffer
	wr := sessionlog.NewWriter(&buf)
	for i, s := range []sessionlog.Session{
		{Session: "a", Steps: []sessionlog.Step{{Obs: []float64{1, 0}, Action: space.Action{Index: 2}, Reward: 1, LogP: math.Log(0.25)}}, Terminal: true},
		{Session: "b", Steps: []sessionlog.Step{{Obs: []float64{0, 1}, Action: space.Action{Index: 0}, Reward: 0, LogP: math.Log(0.5)}}, Terminal: true},
	} {
		if err := wr.Write(&s); err != nil {
			t.Fatal(i, err)
		}
	}
	if err := wr.Flush(); err != nil {
		t.Fatal(err)
	}
	r := sessionlog.NewReader(&buf, sessionlog.ReaderOptions{})
	var ss []sessionlog.Session
	for {
		s, err := r.Next()
		if err != nil {
			break
		}
		ss = append(ss, s)
	}
	uniform := func(dst, _ []float64) {
		for a := range dst {
			dst[a] = 1.0 / 3
		}
	}
	l, err := FromSessions(ss, 3, uniform)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Decisions) != 2 || l.Decisions[0].Action != 2 || math.Abs(l.Decisions[0].Prob-0.25) > 1e-12 || l.Decisions[1].Reward != 0 || l.Decisions[1].X[1] != 1 {
		t.Fatalf("decisions %+v", l.Decisions)
	}
	e, err := IPS(l, Options{Rand: rand.New(rand.NewPCG(1, 1))})
	if err != nil {
		t.Fatal(err)
	}
	if want := (1.0 / 3 / 0.25) / 2; math.Abs(e.Value-want) > 1e-12 {
		t.Errorf("IPS %v, want %v", e.Value, want)
	}
	bad := []struct {
		name string
		s    sessionlog.Session
		want string
	}{
		{"two steps", sessionlog.Session{Session: "c", Steps: make([]sessionlog.Step, 2)}, "2 steps"},
		{"no prob", sessionlog.Session{Session: "d", Steps: []sessionlog.Step{{Obs: []float64{0, 0}, NoProb: true, LogP: math.NaN()}}}, "no logging probability"},
		{"continuous", sessionlog.Session{Session: "e", Steps: []sessionlog.Step{{Obs: []float64{0, 0}, Action: space.Action{Vec: []float64{0.5}}}}}, "continuous"},
	}
	for _, b := range bad {
		_, err := FromSessions(append(ss[:1:1], b.s), 3, uniform)
		if !errors.Is(err, ErrSession) || !strings.Contains(err.Error(), b.want) || !strings.Contains(err.Error(), "session 1") {
			t.Errorf("%s: error %v, want ErrSession naming session 1 and %q", b.name, err, b.want)
		}
	}
}
