package qlearn

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"dprl/noise"
	"dprl/policy/qnet"
	"dprl/sessionlog"
	"dprl/space"
)

// banditSessions returns one-step sessions of a 2-action problem with a
// 2-dimensional observation: action 1 pays 1 and action 0 pays 0, both
// logged equally often, by experts e0..e(m-1) with k sessions each.
func banditSessions(m, k int, rng *rand.Rand) []sessionlog.Session {
	var ss []sessionlog.Session
	for e := range m {
		for j := range k {
			a := rng.IntN(2)
			ss = append(ss, sessionlog.Session{Session: "s", Expert: fmt.Sprintf("e%d", e),
				Steps:    []sessionlog.Step{{Obs: []float64{rng.NormFloat64(), float64(j % 2)}, Action: space.Action{Index: a}, Reward: float64(a)}},
				FinalObs: []float64{0, 0}, Terminal: true})
		}
	}
	return ss
}

func TestFromSessions(t *testing.T) {
	pv := uint64(1)
	ss := []sessionlog.Session{
		{Session: "a", Expert: "x", Steps: []sessionlog.Step{{Obs: []float64{1}, Action: space.Action{Index: 0}, Reward: 1}, {Obs: []float64{2}, Action: space.Action{Index: 1}, Reward: 2}}, FinalObs: []float64{3}, Terminal: true},
		{Session: "b", Expert: "y", Steps: []sessionlog.Step{{Obs: []float64{4}, Action: space.Action{Index: 1}, Reward: 4}}},                                     // no next state: dropped
		{Session: "c", Expert: "x", PolicyVersion: &pv, Steps: []sessionlog.Step{{Obs: []float64{5}, Action: space.Action{Index: 1}, Reward: 5}}, Terminal: true}, // terminal without final obs
	}
	d, err := FromSessions(ss, 1, 2, ByExpert)
	if err != nil {
		t.Fatal(err)
	}
	// Unit x holds a's two transitions and c's; unit y none.
	if d.Units() != 2 || !slices.Equal(d.Start, []int{0, 3, 3}) {
		t.Fatalf("units %d, start %v", d.Units(), d.Start)
	}
	if !slices.Equal(d.Obs, []float64{1, 2, 5}) || !slices.Equal(d.Next, []float64{2, 3, 0}) ||
		!slices.Equal(d.Actions, []int{0, 1, 1}) || !slices.Equal(d.Rewards, []float64{1, 2, 5}) ||
		!slices.Equal(d.Terminal, []bool{false, true, true}) {
		t.Fatalf("data %+v", d)
	}
	d, err = FromSessions(ss, 1, 2, nil)
	if err != nil || d.Units() != 3 || !slices.Equal(d.Start, []int{0, 2, 2, 3}) {
		t.Fatalf("per session: %v %v", err, d.Start)
	}
	// The two passes must see the same sessions.
	b, err := NewBuilder(1, 2, ByExpert)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Count(&ss[2]); err != nil {
		t.Fatal(err)
	}
	if err := b.Add(0, &ss[0]); err == nil || !strings.Contains(err.Error(), "more transitions than were counted") {
		t.Errorf("a longer session in pass 2: %v", err)
	}
	if err := b.Add(0, &ss[1]); err == nil || !strings.Contains(err.Error(), "not counted") {
		t.Errorf("another unit in pass 2: %v", err)
	}
	if _, err := b.Data(); err == nil {
		t.Error("Data before every session was added")
	}
	if err := b.Add(3, &ss[2]); err == nil || !strings.Contains(err.Error(), "out of order") {
		t.Errorf("a session out of order: %v", err)
	}
	for _, c := range []struct {
		name string
		s    sessionlog.Session
		want string
	}{
		{"no expert", sessionlog.Session{Session: "n", Steps: ss[0].Steps}, "names no unit"},
		{"action", sessionlog.Session{Session: "n", Expert: "x", Steps: []sessionlog.Step{{Obs: []float64{1}, Action: space.Action{Index: 2}}}}, "action 2"},
		{"dims", sessionlog.Session{Session: "n", Expert: "x", Steps: []sessionlog.Step{{Obs: []float64{1, 2}, Action: space.Action{Index: 0}}}}, "length 2"},
		{"nan", sessionlog.Session{Session: "n", Expert: "x", Steps: []sessionlog.Step{{Obs: []float64{1}, Action: space.Action{Index: 0}, Reward: math.NaN()}}}, "non-finite"},
	} {
		if _, err := FromSessions([]sessionlog.Session{c.s}, 1, 2, ByExpert); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestSampleUnits checks Poisson sampling of units: each unit is included
// with frequency q and the sample size has the binomial variance n q (1-q)
// (independent inclusions).
func TestSampleUnits(t *testing.T) {
	const n, q, draws = 300, 0.1, 4000
	rng := rand.New(rand.NewPCG(1, 1))
	counts := make([]int, n)
	var buf []int
	var s, s2 float64
	for range draws {
		buf = SampleUnits(buf, n, q, rng)
		if !slices.IsSorted(buf) || len(slices.Compact(slices.Clone(buf))) != len(buf) {
			t.Fatal("sample not strictly increasing")
		}
		for _, u := range buf {
			counts[u]++
		}
		k := float64(len(buf))
		s += k
		s2 += k * k
	}
	mean := s / draws
	variance := s2/draws - mean*mean
	if want := n * q; math.Abs(mean-want) > 4*math.Sqrt(n*q*(1-q)/draws) {
		t.Errorf("mean sample size %.2f, want %.1f", mean, want)
	}
	if want := n * q * (1 - q); math.Abs(variance/want-1) > 0.1 {
		t.Errorf("sample size variance %.2f, want %.1f", variance, want)
	}
	// Per unit: Binomial(draws, q); the extreme of 300 stays within 5 sd.
	sd := math.Sqrt(draws * q * (1 - q))
	for u, c := range counts {
		if math.Abs(float64(c)-draws*q) > 5*sd {
			t.Errorf("unit %d sampled %d times, want %.0f ± %.0f", u, c, draws*q, 5*sd)
		}
	}
	if got := SampleUnits(nil, 5, 1, rng); !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
		t.Errorf("q = 1: %v", got)
	}
}

// TestDPStepOneTransitionPerUnit checks that a DP step draws one
// transition from each sampled unit, and that the clipped sum of one step
// stays within Clip times the number of units even with an extreme reward.
func TestDPStepOneTransitionPerUnit(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	ss := banditSessions(40, 5, rng)
	ss[0].Steps[0].Reward = 1e300 // one extreme but valid record
	for _, algo := range []Algo{CQL, BCQ} {
		cfg := DefaultConfig()
		cfg.Algo, cfg.Hidden, cfg.Batch = algo, []int{8}, 10
		d, err := FromSessions(ss, 2, 2, ByExpert)
		if err != nil {
			t.Fatal(err)
		}
		l, err := New(cfg, 2, 2, rng)
		if err != nil {
			t.Fatal(err)
		}
		before := slices.Clone(l.theta)
		l.DPStep(d, DP{Clip: 0.5, Sigma: 1e-12, SampleRate: 0.5}, rng, noise.NewGaussian(rng))
		if len(l.units) == 0 || len(l.rows) != len(l.units) {
			t.Fatalf("%s: %d units, %d rows", algo, len(l.units), len(l.rows))
		}
		for i, u := range l.units {
			if r := l.rows[i]; r < d.Start[u] || r >= d.Start[u+1] {
				t.Errorf("%s: row %d not in unit %d [%d, %d)", algo, r, u, d.Start[u], d.Start[u+1])
			}
		}
		// The step's gradient (noise 1e-12) is the clipped sum over b:
		// its joint norm is at most Clip n / b.
		norm := math.Hypot(l2(l.gradQ), l2(l.gradG))
		if bound := 0.5 * float64(len(l.units)) / 10 * (1 + 1e-9); !(norm <= bound) || norm == 0 {
			t.Errorf("%s: noised, scaled gradient norm %v, want (0, %v]", algo, norm, bound)
		}
		if slices.Equal(before, l.theta) {
			t.Errorf("%s: the step did not move the parameters", algo)
		}
	}
}

func l2(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// TestLearnersLearnBandit trains both learners without privacy on the
// one-step problem: the greedy action must be the paying one, and CQL's
// Q-values must approach the rewards (terminal: no bootstrap).
func TestLearnersLearnBandit(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	d, err := FromSessions(banditSessions(20, 10, rng), 2, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, algo := range []Algo{CQL, BCQ} {
		cfg := DefaultConfig()
		cfg.Algo, cfg.Hidden, cfg.Batch, cfg.Alpha = algo, []int{16}, 32, 0.1
		l, err := New(cfg, 2, 2, rng)
		if err != nil {
			t.Fatal(err)
		}
		if err := Train(context.Background(), l, d, nil, TrainConfig{Plan: Plan{Private: make([]bool, 600)}}, rng, nil, nil); err != nil {
			t.Fatal(err)
		}
		for _, obs := range [][]float64{{0, 0}, {1, 1}, {-1, 0}} {
			if a := l.Act(obs); a != 1 {
				t.Errorf("%s: greedy action %d at %v, want 1", algo, a, obs)
			}
		}
		if algo == CQL {
			q := make([]float64, 2)
			l.q.Forward(q, l.theta, []float64{0.3, 1})
			// CQL(H) with alpha 0.1 and a uniform behaviour lowers both
			// by less than 0.2.
			if math.Abs(q[1]-1) > 0.2 || math.Abs(q[0]) > 0.2 {
				t.Errorf("CQL Q-values %v, want about [0, 1]", q)
			}
		}
	}
}

// TestDPTrainingLearnsBandit runs expert-level DP-SGD with moderate noise
// on the one-step problem: the greedy action is still the paying one.
func TestDPTrainingLearnsBandit(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	d, err := FromSessions(banditSessions(400, 3, rng), 2, 2, ByExpert)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Hidden, cfg.Batch, cfg.Alpha = []int{16}, 100, 0.1
	l, err := New(cfg, 2, 2, rng)
	if err != nil {
		t.Fatal(err)
	}
	plan := NewPlan(400, 1, rng)
	err = Train(context.Background(), l, nil, d, TrainConfig{Plan: plan, DP: DP{Clip: 1, Sigma: 1, SampleRate: 0.25}}, rng, noise.NewGaussian(rng), nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := l.Act([]float64{0, 1}); a != 1 {
		t.Errorf("greedy action %d, want 1", a)
	}
}

func TestNewPlan(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, c := range []struct {
		p      float64
		lo, hi int
	}{{1, 1000, 1000}, {0, 0, 0}, {0.8, 760, 840}} {
		pl := NewPlan(1000, c.p, rng)
		k := 0
		for _, b := range pl.Private {
			if b {
				k++
			}
		}
		if k != pl.DPSteps || k < c.lo || k > c.hi {
			t.Errorf("p %v: %d DP steps (counted %d), want [%d, %d]", c.p, pl.DPSteps, k, c.lo, c.hi)
		}
	}
}

func TestTrainErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	cfg := DefaultConfig()
	cfg.Hidden = []int{4}
	l, err := New(cfg, 2, 2, rng)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := FromSessions(banditSessions(2, 2, rng), 2, 2, nil)
	ctx := context.Background()
	if err := Train(ctx, l, d, nil, TrainConfig{Plan: Plan{Private: []bool{true}, DPSteps: 1}}, rng, nil, nil); err == nil {
		t.Error("a DP plan without private data or noise ran")
	}
	if err := Train(ctx, l, nil, d, TrainConfig{Plan: Plan{Private: []bool{false}}}, rng, nil, nil); err == nil {
		t.Error("a plain plan without public data ran")
	}
	if err := Train(ctx, l, d, d, TrainConfig{Plan: Plan{Private: []bool{true}, DPSteps: 1}, DP: DP{Clip: 1, Sigma: 0, SampleRate: 1}}, rng, noise.NewGaussian(rng), nil); err == nil {
		t.Error("sigma 0 ran")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := Train(cctx, l, d, nil, TrainConfig{Plan: Plan{Private: make([]bool, 10)}}, rng, nil, nil); err == nil {
		t.Error("a cancelled run did not stop")
	}
	bad := DefaultConfig()
	bad.Algo, bad.Gamma, bad.Batch, bad.Threshold = "dqn", 1, 0, 1
	err = bad.Validate()
	for _, want := range []string{"unknown algorithm", "gamma", "batch", "threshold"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want %q", err, want)
		}
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, algo := range []Algo{CQL, BCQ} {
		cfg := DefaultConfig()
		cfg.Algo, cfg.Hidden = algo, []int{6, 5}
		l, err := New(cfg, 3, 4, rng)
		if err != nil {
			t.Fatal(err)
		}
		b, err := l.Snapshot().Marshal()
		if err != nil {
			t.Fatal(err)
		}
		_, l2, err := qnet.ParseSnapshot(b)
		if err != nil {
			t.Fatal(err)
		}
		for range 50 {
			obs := []float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
			if a, b := l.Act(obs), l2.Act(obs); a != b {
				t.Fatalf("%s: actions %d and %d after a round trip", algo, a, b)
			}
		}
		s := string(b)
		for name, bad := range map[string]string{
			"unknown field": strings.Replace(s, `"format"`, `"extra":1,"format"`, 1),
			"trailing":      s + "{}",
			"format":        strings.Replace(s, qnet.SnapshotFormat, "dprl.qlearn.v0", 1),
			"sizes":         strings.Replace(s, `"hidden":[6,5]`, `"hidden":[6,6]`, 1),
			"not json":      "{",
		} {
			if _, _, err := qnet.ParseSnapshot([]byte(bad)); err == nil {
				t.Errorf("%s: %s snapshot parsed", algo, name)
			}
		}
	}
}

// BenchmarkDPStepCQL is one expert-level DP-SGD step of CQL with the
// paper's networks (2 x 256) at batch 128 on CartPole-sized data: the
// allocation count must be 0.
func BenchmarkDPStepCQL(b *testing.B) { benchStep(b, CQL, true) }

// BenchmarkDPStepBCQ is BenchmarkDPStepCQL for BCQ (two networks, joint
// clipping).
func BenchmarkDPStepBCQ(b *testing.B) { benchStep(b, BCQ, true) }

// BenchmarkStepCQL is a plain (non-private) step, the baseline of the DP
// step's overhead in the same run.
func BenchmarkStepCQL(b *testing.B) { benchStep(b, CQL, false) }

func benchStep(b *testing.B, algo Algo, dp bool) {
	rng := rand.New(rand.NewPCG(8, 8))
	const m = 3000
	d := &Data{ObsDim: 4, NumActions: 2}
	for u := range m {
		d.Start = append(d.Start, d.Len())
		for range 10 {
			for range 4 {
				d.Obs = append(d.Obs, rng.NormFloat64())
				d.Next = append(d.Next, rng.NormFloat64())
			}
			d.Actions = append(d.Actions, rng.IntN(2))
			d.Rewards = append(d.Rewards, 1)
			d.Terminal = append(d.Terminal, u%7 == 0)
		}
	}
	d.Start = append(d.Start, d.Len())
	cfg := DefaultConfig()
	cfg.Algo = algo
	l, err := New(cfg, 4, 2, rng)
	if err != nil {
		b.Fatal(err)
	}
	g := noise.NewGaussian(rng)
	p := DP{Clip: 1, Sigma: 1, SampleRate: float64(cfg.Batch) / m}
	step := func() {
		if dp {
			l.DPStep(d, p, rng, g)
		} else {
			l.Step(d, rng)
		}
	}
	for range 20 {
		step()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		step()
	}
}
