package sac

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"dprl/sims"
)

func smallAgent(t testing.TB, B int) *Agent {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Hidden = []int{8, 8}
	cfg.Batch = B
	a, err := New(cfg, 3, []float64{-2, 0}, []float64{2, 1}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestActorGradient checks the actor's gradient (through the squashed
// Gaussian, its log-probability and the twin critics' minimum) against
// central finite differences of the loss with the same noise.
func TestActorGradient(t *testing.T) {
	const B = 5
	a := smallAgent(t, B)
	rng := rand.New(rand.NewPCG(3, 4))
	s := make([]float64, B*3)
	for i := range s {
		s[i] = rng.NormFloat64()
	}
	for i := range a.actorP { // move away from the near-zero output layer
		a.actorP[i] += 0.3 * rng.NormFloat64()
	}
	const alpha = 0.37
	loss := func() float64 {
		l, _ := a.actorLossGrad(s, alpha, rand.New(rand.NewPCG(9, 9)))
		return l
	}
	loss()
	grad := append([]float64(nil), a.aGrad...)
	const h = 1e-6
	worst := 0.0
	for i := range a.actorP {
		orig := a.actorP[i]
		a.actorP[i] = orig + h
		fp := loss()
		a.actorP[i] = orig - h
		fm := loss()
		a.actorP[i] = orig
		fd := (fp - fm) / (2 * h)
		err := math.Abs(fd-grad[i]) / math.Max(1e-3, math.Abs(fd))
		worst = max(worst, err)
		if err > 1e-4 && math.Abs(fd-grad[i]) > 1e-8 {
			t.Fatalf("d L/d theta[%d] = %.10g, finite difference %.10g", i, grad[i], fd)
		}
	}
	t.Logf("%d parameters, worst relative error %.2g", len(grad), worst)
}

// TestLogProb checks the squashed Gaussian's log-density against a
// numerical change of variables: Act's log pi(a) must equal log N(u) -
// sum log |da/du|, computed here independently.
func TestLogProb(t *testing.T) {
	a := smallAgent(t, 1)
	obs := []float64{0.3, -0.1, 0.7}
	act := make([]float64, 2)
	for seed := range uint64(20) {
		logp := a.Act(act, rand.New(rand.NewPCG(seed, 1)), obs)
		// Recover u from the action, and the Gaussian's parameters.
		a.actor.Forward(a.one, a.actorP, obs)
		want := 0.0
		for j := range 2 {
			t := (act[j] - a.bias[j]) / a.scale[j]
			u := math.Atanh(t)
			ls := logStd(a.one[2+j])
			sd := math.Exp(ls)
			z := (u - a.one[j]) / sd
			want += -0.5*z*z - ls - 0.5*math.Log(2*math.Pi) - math.Log(1-t*t)
		}
		if math.Abs(logp-want) > 1e-6*math.Max(1, math.Abs(want)) {
			t.Fatalf("seed %d: log pi = %v, change of variables %v", seed, logp, want)
		}
	}
}

// target is a one-step task with a known optimum: the observation s is
// uniform on [-1, 1], the action a in [-1, 1], the reward -(a - s/2)^2.
type target struct {
	rng *rand.Rand
	s   float64
}

func (e *target) ObservationSpace() sims.Space {
	return sims.Space{Kind: sims.Box, Low: []float64{-1}, High: []float64{1}}
}
func (e *target) ActionSpace() sims.Space {
	return sims.Space{Kind: sims.Box, Low: []float64{-1}, High: []float64{1}}
}
func (e *target) MaxSteps() int { return 1 }
func (e *target) Reset(rng *rand.Rand, obs []float64) {
	e.rng = rng
	e.s = 2*rng.Float64() - 1
	obs[0] = e.s
}
func (e *target) Step(a sims.Action, obs []float64) (float64, bool, bool) {
	d := a.Vec[0] - e.s/2
	return -d * d, true, false
}

// TestTrainLearnsTarget: SAC learns the one-step task's optimum a = s/2 (a
// random policy scores about -0.42, the optimum 0).
func TestTrainLearnsTarget(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Hidden = []int{32, 32}
	cfg.Batch = 64
	cfg.ActorLR, cfg.CriticLR, cfg.AlphaLR = 3e-3, 3e-3, 3e-3
	steps := 3000
	res, err := Train(context.Background(), func() sims.Env { return &target{} }, cfg,
		TrainOptions{Steps: steps, LearningStarts: 200, EvalEpisodes: 200}, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	last := res.Curve[len(res.Curve)-1]
	t.Logf("after %d steps (%d updates): mean return %.4f (alpha %.3g)", steps, res.Updates, last.Mean, res.Agent.Alpha())
	if !(last.Mean > -0.02) {
		t.Fatalf("mean return %.4f, want > -0.02 (random: about -0.42)", last.Mean)
	}
	if res.Episodes != steps || res.Updates != steps-200 {
		t.Fatalf("%d episodes %d updates, want %d and %d", res.Episodes, res.Updates, steps, steps-200)
	}
}

// TestTrainDeterministic: one seed, one run.
func TestTrainDeterministic(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Hidden = []int{8}
	cfg.Batch = 16
	run := func(seed uint64) []float64 {
		res, err := Train(context.Background(), func() sims.Env { return sims.NewPendulum() }, cfg,
			TrainOptions{Steps: 300, LearningStarts: 100, EvalEpisodes: 1}, rand.New(rand.NewPCG(seed, 1)))
		if err != nil {
			t.Fatal(err)
		}
		return res.Agent.ActorParams()
	}
	a, b, c := run(1), run(1), run(2)
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("two runs with the same seed differ")
		}
	}
	same := true
	for i := range a {
		same = same && a[i] == c[i]
	}
	if same {
		t.Fatal("different seeds gave the same actor")
	}
}

func TestUpdateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are unreliable under -race")
	}
	a := smallAgent(t, 16)
	rng := rand.New(rand.NewPCG(1, 1))
	buf, err := NewBuffer(100, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		buf.Add([]float64{rng.NormFloat64(), 0, 1}, []float64{0.5, 0.2}, rng.NormFloat64(), []float64{0, 1, 0}, rng.IntN(5) == 0)
	}
	batch := NewBatch(16, 3, 2)
	act := make([]float64, 2)
	if n := testing.AllocsPerRun(10, func() {
		buf.Sample(batch, rng)
		a.Update(batch, rng)
		a.Act(act, rng, batch.S[:3])
	}); n != 0 {
		t.Fatalf("%v allocations per update, want 0", n)
	}
}

func TestBufferRing(t *testing.T) {
	b, err := NewBuffer(3, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		f := float64(i)
		b.Add([]float64{f}, []float64{f}, f, []float64{f + 1}, i == 4)
	}
	if b.Len() != 3 {
		t.Fatalf("len %d, want 3", b.Len())
	}
	seen := map[float64]bool{}
	batch := NewBatch(200, 1, 1)
	b.Sample(batch, rand.New(rand.NewPCG(1, 1)))
	for k, r := range batch.R {
		seen[r] = true
		if batch.S[k] != r || batch.S2[k] != r+1 || (batch.Terminated[k] == 1) != (r == 4) {
			t.Fatalf("row %d: s %v a %v r %v s2 %v d %v", k, batch.S[k], batch.A[k], r, batch.S2[k], batch.Terminated[k])
		}
	}
	if len(seen) != 3 || seen[0] || seen[1] {
		t.Fatalf("sampled rewards %v, want exactly 2, 3 and 4", seen)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(*Config)
	}{
		{"no hidden", func(c *Config) { c.Hidden = nil }},
		{"gamma", func(c *Config) { c.Gamma = 1 }},
		{"tau", func(c *Config) { c.Tau = 0 }},
		{"lr", func(c *Config) { c.CriticLR = math.NaN() }},
		{"batch", func(c *Config) { c.Batch = 0 }},
		{"entropy", func(c *Config) { c.TargetEntropy = math.Inf(-1) }},
		{"alpha", func(c *Config) { c.InitAlpha = 0 }},
	} {
		c := DefaultConfig()
		tc.f(&c)
		if c.Validate() == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := New(DefaultConfig(), 3, []float64{math.Inf(-1)}, []float64{1}, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Fatal("an unbounded action box was accepted")
	}
}

// TestTrainReplays: after each training episode once learning has started,
// Replays extra episodes of the current policy reach OnEpisode, marked,
// with full-length observations and finite behaviour log-densities; the
// training itself (steps, updates, episodes) is unchanged.
func TestTrainReplays(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Hidden = []int{8}
	cfg.Batch = 16
	var train, replays int
	res, err := Train(context.Background(), func() sims.Env { return sims.NewPendulum() }, cfg,
		TrainOptions{Steps: 1000, LearningStarts: 400, EvalEpisodes: 1, Replays: 3, OnEpisode: func(ep Episode) {
			T := len(ep.Rewards)
			if T != 200 || len(ep.Obs) != 3*(T+1) || len(ep.Actions) != T || len(ep.LogP) != T {
				t.Fatalf("episode of %d steps, %d observations, %d actions, %d log-densities", T, len(ep.Obs), len(ep.Actions), len(ep.LogP))
			}
			var ret float64
			for i, r := range ep.Rewards {
				ret += r
				if math.IsNaN(ep.LogP[i]) || math.IsInf(ep.LogP[i], 0) || ep.Actions[i] < -2 || ep.Actions[i] > 2 {
					t.Fatalf("step %d: action %v, log-density %v", i, ep.Actions[i], ep.LogP[i])
				}
			}
			if math.Abs(ret-ep.Return) > 1e-9 {
				t.Fatalf("return %v, rewards sum to %v", ep.Return, ret)
			}
			if ep.Replay {
				replays++
			} else {
				train++
			}
		}}, rand.New(rand.NewPCG(3, 1)))
	if err != nil {
		t.Fatal(err)
	}
	// Episodes end at steps 200, 400, ..., 1000; learning starts at step
	// 400, so the episodes ending at 600, 800 and 1000 get replays.
	if train != 5 || res.Episodes != 5 || replays != 9 || res.Updates != 600 {
		t.Fatalf("%d training episodes (result %d), %d replays, %d updates; want 5, 9, 600", train, res.Episodes, replays, res.Updates)
	}
	if _, err := Train(context.Background(), func() sims.Env { return sims.NewPendulum() }, cfg, TrainOptions{Steps: 10, Replays: -1}, rand.New(rand.NewPCG(3, 1))); err == nil {
		t.Fatal("negative replays accepted")
	}
}

// TestTrainFixed: a fixed buffer's share of each batch must be in [0, 1),
// the buffer non-empty and of the environment's dimensions; Batch.rows
// views the batch's own storage.
func TestTrainFixed(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Hidden = []int{8}
	cfg.Batch = 20
	env := func() sims.Env { return sims.NewPendulum() }
	fixed, _ := NewBuffer(10, 3, 1)
	wrong, _ := NewBuffer(10, 2, 1)
	wrong.Add([]float64{0, 0}, []float64{0}, 0, []float64{0, 0}, false)
	for _, opts := range []TrainOptions{
		{Steps: 50, Fixed: fixed, FixedFraction: 0.05}, // empty
		{Steps: 50, Fixed: wrong, FixedFraction: 0.05}, // dimensions
		{Steps: 50, Fixed: fixed, FixedFraction: 1},    // share
		{Steps: 50, Fixed: fixed, FixedFraction: -0.1}, // share
	} {
		if _, err := Train(context.Background(), env, cfg, opts, rand.New(rand.NewPCG(1, 1))); err == nil {
			t.Errorf("%+v accepted", opts)
		}
	}
	for range 10 {
		fixed.Add([]float64{1, 0, 0}, []float64{0}, 7, []float64{1, 0, 0}, false)
	}
	res, err := Train(context.Background(), env, cfg, TrainOptions{Steps: 50, LearningStarts: 10, EvalEpisodes: 1, Fixed: fixed, FixedFraction: 0.25}, rand.New(rand.NewPCG(1, 1)))
	if err != nil || res.Updates != 40 {
		t.Fatalf("%d updates, %v", res.Updates, err)
	}
	b := NewBatch(4, 3, 1)
	v := b.rows(3, 4, 3, 1)
	v.R[0], v.S[2] = 5, 6
	if b.R[3] != 5 || b.S[11] != 6 || len(v.S) != 3 || len(v.A) != 1 {
		t.Fatal("rows is not a view of the batch's last row")
	}
}

// antiTarget is a rating against target's training: the observation fixed
// at s = 0.6, the return -(a + 0.3)^2 of the deterministic action a, where
// training drives a to +0.3. The untrained policies rate best.
type antiTarget struct{ target }

func (e *antiTarget) Reset(_ *rand.Rand, obs []float64) { e.s, obs[0] = 0.6, 0.6 }
func (e *antiTarget) Step(a sims.Action, obs []float64) (float64, bool, bool) {
	d := a.Vec[0] + 0.3
	return -d * d, true, false
}

// TestTrainKeepBest: with Select and KeepBest, every curve point carries
// its rating, and the actor returned is the best rated point's (its rating
// recomputed on the returned actor is the curve's maximum, at BestSteps).
func TestTrainKeepBest(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Hidden = []int{8}
	cfg.Batch = 16
	if _, err := Train(context.Background(), func() sims.Env { return &target{} }, cfg,
		TrainOptions{Steps: 10, KeepBest: true}, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Fatal("KeepBest without Select: no error")
	}
	res, err := Train(context.Background(), func() sims.Env { return &target{} }, cfg,
		TrainOptions{Steps: 1200, LearningStarts: 100, EvalEvery: 50, EvalEpisodes: 1,
			Select: func() sims.Env { return &antiTarget{} }, SelectEpisodes: 2, KeepBest: true}, rand.New(rand.NewPCG(3, 1)))
	if err != nil {
		t.Fatal(err)
	}
	best, at, last := math.Inf(-1), 0, 0.0
	for _, p := range res.Curve {
		if p.Select == nil {
			t.Fatalf("point at %d steps has no rating", p.Steps)
		}
		if *p.Select >= best {
			best, at = *p.Select, p.Steps
		}
		last = *p.Select
	}
	got, _ := Evaluate(&antiTarget{}, res.Agent, 1, rand.New(rand.NewPCG(0, 0)))
	if got != best || res.BestSteps != at {
		t.Fatalf("returned actor rated %v at %d steps, want the curve's best %v at %d", got, res.BestSteps, best, at)
	}
	if !(best > last) || at == 1200 {
		t.Fatalf("best rating %v at %d steps, last %v: want an earlier point rated above the trained one", best, at, last)
	}
	t.Logf("best rating %.5f at %d of %d steps (last %.5f)", best, at, 1200, last)
}
