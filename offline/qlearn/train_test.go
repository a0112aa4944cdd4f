package qlearn

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"dprl/ledger"
	"dprl/noise"
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
		_, l2, err := ParseSnapshot(b)
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
			"format":        strings.Replace(s, SnapshotFormat, "dprl.qlearn.v0", 1),
			"sizes":         strings.Replace(s, `"hidden":[6,5]`, `"hidden":[6,6]`, 1),
			"not json":      "{",
		} {
			if _, _, err := ParseSnapshot([]byte(bad)); err == nil {
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

// FuzzParseSnapshot: any input is either refused with an error or yields
// a learner that acts with the snapshot's networks, never a panic.
func FuzzParseSnapshot(f *testing.F) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, algo := range []Algo{CQL, BCQ} {
		cfg := DefaultConfig()
		cfg.Algo, cfg.Hidden = algo, []int{3}
		l, err := New(cfg, 2, 2, rng)
		if err != nil {
			f.Fatal(err)
		}
		b, err := l.Snapshot().Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"format":"dprl.qlearn.v1","algo":"cql","obs_dim":1,"actions":2,"hidden":[1],"q":[0,0,0,0,0,0,0],"private":false}`))
	f.Add([]byte(`{"format":"dprl.qlearn.v2","algo":"cql","obs_dim":1,"actions":2,"hidden":[1],"q":[0,0,0,0,0,0],"private":true,"epsilon":10,"delta":1e-5,"unit":"expert","ledger_seq":3}`))
	// Size fields at their extremes: refused before anything is allocated.
	f.Add([]byte(`{"format":"dprl.qlearn.v2","algo":"cql","obs_dim":1,"actions":1099511627776,"hidden":[1],"q":[0],"private":false}`))
	f.Add([]byte(`{"format":"dprl.qlearn.v2","algo":"bcq","obs_dim":9223372036854775807,"actions":2,"hidden":[2147483647,2147483647],"q":[],"private":false}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, l, err := ParseSnapshot(b)
		if err != nil {
			return
		}
		if p, ok := s.Provenance(); ok {
			if err := p.Validate(); err != nil {
				t.Fatalf("parsed a snapshot whose provenance is invalid: %v", err)
			}
		} else if s.Format != SnapshotFormatV1 {
			t.Fatalf("format %q without provenance", s.Format)
		}
		if a := l.Act(make([]float64, s.ObsDim)); a < 0 || a >= s.Actions {
			t.Fatalf("action %d of %d", a, s.Actions)
		}
	})
}

// TestSnapshotProvenance: a v2 snapshot carries a validated provenance
// (private: finite epsilon > 0, delta in (0, 1), an offline unit, a
// ledger entry; non-private: none of these); a v1 snapshot is read with no
// provenance, and one that names a ledger entry is refused.
func TestSnapshotProvenance(t *testing.T) {
	const head = `{"format":%q,"algo":"cql","obs_dim":1,"actions":2,"hidden":[1],"q":[0,0,0,0,0,0],%s}`
	for _, tc := range []struct {
		name, format, prov string
		ok, known          bool
		want               ledger.Provenance
	}{
		{"private", SnapshotFormat, `"private":true,"epsilon":10,"delta":1e-5,"unit":"expert","ledger_seq":3`, true, true,
			ledger.Provenance{Private: true, Epsilon: 10, Delta: 1e-5, Unit: ledger.UnitExpert, LedgerSeq: 3}},
		{"non-private", SnapshotFormat, `"private":false`, true, true, ledger.Provenance{}},
		{"v1 private", SnapshotFormatV1, `"private":true,"epsilon":10,"delta":1e-5,"unit":"expert"`, true, false, ledger.Provenance{}},
		{"v1 non-private", SnapshotFormatV1, `"private":false`, true, false, ledger.Provenance{}},
		{"v1 with an entry", SnapshotFormatV1, `"private":true,"epsilon":10,"delta":1e-5,"unit":"expert","ledger_seq":3`, false, false, ledger.Provenance{}},
		{"epsilon 0", SnapshotFormat, `"private":true,"epsilon":0,"delta":1e-5,"unit":"expert","ledger_seq":3`, false, false, ledger.Provenance{}},
		{"epsilon negative", SnapshotFormat, `"private":true,"epsilon":-1,"delta":1e-5,"unit":"expert","ledger_seq":3`, false, false, ledger.Provenance{}},
		{"epsilon overflows", SnapshotFormat, `"private":true,"epsilon":1e400,"delta":1e-5,"unit":"expert","ledger_seq":3`, false, false, ledger.Provenance{}},
		{"delta 0", SnapshotFormat, `"private":true,"epsilon":10,"unit":"expert","ledger_seq":3`, false, false, ledger.Provenance{}},
		{"delta 1", SnapshotFormat, `"private":true,"epsilon":10,"delta":1,"unit":"expert","ledger_seq":3`, false, false, ledger.Provenance{}},
		{"unknown unit", SnapshotFormat, `"private":true,"epsilon":10,"delta":1e-5,"unit":"household","ledger_seq":3`, false, false, ledger.Provenance{}},
		{"online unit", SnapshotFormat, `"private":true,"epsilon":10,"delta":1e-5,"unit":"session","ledger_seq":3`, false, false, ledger.Provenance{}},
		{"no entry", SnapshotFormat, `"private":true,"epsilon":10,"delta":1e-5,"unit":"expert"`, false, false, ledger.Provenance{}},
		{"non-private with a guarantee", SnapshotFormat, `"private":false,"epsilon":10`, false, false, ledger.Provenance{}},
		{"non-private with an entry", SnapshotFormat, `"private":false,"ledger_seq":2`, false, false, ledger.Provenance{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, err := ParseSnapshot(fmt.Appendf(nil, head, tc.format, tc.prov))
			if (err == nil) != tc.ok {
				t.Fatalf("parse: %v, want ok %v", err, tc.ok)
			}
			if err != nil {
				return
			}
			p, known := s.Provenance()
			if known != tc.known || p != tc.want {
				t.Errorf("provenance %+v (known %v), want %+v (known %v)", p, known, tc.want, tc.known)
			}
		})
	}
}

// TestSnapshotSizesBeforeAllocating: a small file whose sizes claim a huge
// network (2^40 actions, a 10^9-long observation, two 16384-wide layers)
// is refused without allocating for the sizes it claims (each of these
// ended in "fatal error: out of memory"); a repeated key is refused; and
// weights whose forward pass overflows are refused at load.
func TestSnapshotSizesBeforeAllocating(t *testing.T) {
	const tail = `,"q":[0,0,0,0,0,0],"private":false}`
	for _, b := range []string{
		`{"format":"dprl.qlearn.v2","algo":"cql","obs_dim":1,"actions":1099511627776,"hidden":[1]` + tail,
		`{"format":"dprl.qlearn.v2","algo":"cql","obs_dim":1000000000,"actions":2,"hidden":[1]` + tail,
		`{"format":"dprl.qlearn.v2","algo":"cql","obs_dim":1,"actions":2,"hidden":[16384,16384]` + tail,
		`{"format":"dprl.qlearn.v2","algo":"bcq","obs_dim":1,"actions":2,"hidden":[1],"g":[]` + tail,
		`{"format":"dprl.qlearn.v2","algo":"cql","obs_dim":1,"actions":2,"hidden":[1],"hidden":[1]` + tail,
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _, err := ParseSnapshot([]byte(b))
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("%.80s: accepted", b)
		}
		if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
			t.Errorf("%.80s: allocated %d bytes before refusing it", b, d)
		}
	}
	ok := `{"format":"dprl.qlearn.v2","algo":"cql","obs_dim":1,"actions":2,"hidden":[1],"q":[1,0,1,0,1,0],"private":false}`
	if _, _, err := ParseSnapshot([]byte(ok)); err != nil {
		t.Fatalf("a valid snapshot: %v", err)
	}
	huge := strings.Replace(ok, `"q":[1,0,1,0,1,0]`, `"q":[1e308,0,1e308,0,1e308,0]`, 1)
	if _, _, err := ParseSnapshot([]byte(huge)); err == nil || !strings.Contains(err.Error(), "not finite") {
		t.Errorf("weights of 1e308: %v, want refused as not finite", err)
	}
}
