package policy

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/floats"

	"dprl/internal/gemm"
)

var cartPole = Spec{ObsDim: 4, Kind: ActionDiscrete, NumActions: 2}

func mustLearner(t testing.TB, spec Spec, cfg Config) *Learner {
	t.Helper()
	l, err := NewLearner(spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// synthTrajectory returns a T-step on-policy trajectory for theta: random
// observations, actions sampled from the policy with their log-probabilities,
// random rewards, truncated.
func synthTrajectory(t testing.TB, l *Learner, theta []float64, T int, rng *rand.Rand) *Trajectory {
	t.Helper()
	s := l.Spec()
	a, err := NewActor(s, l.Config().PPO.Hidden)
	if err != nil {
		t.Fatal(err)
	}
	tr := &Trajectory{
		Obs:      randSlice(rng, T*s.ObsDim, 1),
		Rewards:  make([]float64, T),
		LogProbs: make([]float64, T),
		FinalObs: randSlice(rng, s.ObsDim, 1),
	}
	if s.Kind == ActionDiscrete {
		tr.Actions = make([]int, T)
	} else {
		tr.ContActions = make([]float64, T*s.ActionDim)
	}
	for i := 0; i < T; i++ {
		obs := tr.Obs[i*s.ObsDim : (i+1)*s.ObsDim]
		if s.Kind == ActionDiscrete {
			tr.Actions[i], tr.LogProbs[i] = a.ActDiscrete(rng, theta, obs)
		} else {
			tr.LogProbs[i] = a.ActContinuous(tr.ContActions[i*s.ActionDim:(i+1)*s.ActionDim], rng, theta, obs)
		}
		tr.Rewards[i] = rng.Float64()
	}
	return tr
}

func smallConfig() Config {
	c := DefaultControlConfig()
	c.PPO.Hidden = []int{8, 6}
	c.PPO.StepsPerUser = 10
	return c
}

func TestLossGradFiniteDifference(t *testing.T) {
	for _, spec := range []Spec{
		{ObsDim: 3, Kind: ActionDiscrete, NumActions: 3},
		{ObsDim: 3, Kind: ActionContinuous, ActionDim: 2},
	} {
		t.Run(spec.Kind.String(), func(t *testing.T) {
			rng := testRNG(t)
			l := mustLearner(t, spec, smallConfig())
			theta := make([]float64, l.NumParams())
			l.Init(theta, rng)
			tr := synthTrajectory(t, l, theta, 10, rng)
			// Move away from theta0 (ratios != 1) and the tiny output layer.
			for i := range theta {
				theta[i] += 0.3 * rng.NormFloat64()
			}
			copy(l.adv, randSlice(rng, 10, 1))
			copy(l.ret, randSlice(rng, 10, 1))
			idx := []int{7, 2, 5, 0}
			l.gather(tr, idx)
			grad := make([]float64, l.NumParams())
			l.lossGrad(grad, theta, len(idx))
			scratch := make([]float64, l.NumParams())
			f := func(th []float64) float64 { return l.lossGrad(scratch, th, len(idx)) }
			fdCheck(t, "ppo loss "+spec.Kind.String(), f, theta, grad, 1e-6)
		})
	}
}

func TestLossValue(t *testing.T) {
	// At theta0 (ratio 1) with one row the loss is -A - c H + c_v 0.5 (V-R)^2.
	rng := testRNG(t)
	cfg := smallConfig()
	l := mustLearner(t, cartPole, cfg)
	theta := make([]float64, l.NumParams())
	l.Init(theta, rng)
	tr := synthTrajectory(t, l, theta, 3, rng)
	l.adv[1], l.ret[1] = 0.7, -0.2
	l.gather(tr, []int{1})
	got := l.lossGrad(make([]float64, l.NumParams()), theta, 1)
	logits, v := make([]float64, 2), make([]float64, 1)
	l.actor.Forward(logits, theta[:l.nActor], tr.Obs[4:8])
	l.critic.Forward(v, theta[l.nPi:], tr.Obs[4:8])
	h := Categorical{N: 2}.Entropy(logits)
	want := -0.7 - cfg.PPO.EntropyCoef*h + cfg.PPO.ValueCoef*0.5*(v[0]+0.2)*(v[0]+0.2)
	if math.Abs(got-want) > 1e-12 {
		t.Fatalf("loss %v, want %v", got, want)
	}
}

func norm(x []float64) float64 { return floats.Norm(x, 2) }

func TestProjectBall(t *testing.T) {
	x0 := []float64{1, 2, 3}
	x := []float64{1.1, 2, 3}
	projectBall(x, x0, 0.5) // inside: identity
	if !floats.Equal(x, []float64{1.1, 2, 3}) {
		t.Fatalf("inside the ball changed: %v", x)
	}
	x = []float64{4, 6, 3} // delta (3, 4, 0), norm 5
	projectBall(x, x0, 0.5)
	want := []float64{1.3, 2.4, 3}
	if !floats.EqualApprox(x, want, 1e-15) {
		t.Fatalf("projection %v, want %v", x, want)
	}
	d := []float64{3, 4}
	Clip(d, 10)
	if !floats.Equal(d, []float64{3, 4}) {
		t.Fatalf("Clip inside changed %v", d)
	}
	Clip(d, 1)
	if math.Abs(norm(d)-1) > 1e-15 || math.Abs(d[0]/d[1]-0.75) > 1e-15 {
		t.Fatalf("Clip %v", d)
	}
}

func TestLocalUpdateClip(t *testing.T) {
	for _, spec := range []Spec{cartPole, {ObsDim: 3, Kind: ActionContinuous, ActionDim: 2}} {
		rng := testRNG(t)
		cfg := smallConfig()
		cfg.DP.ClipNorm = 0.01
		cfg.PPO.Adam.LR = 0.01 // large steps: the clip must bind
		l := mustLearner(t, spec, cfg)
		theta := make([]float64, l.NumParams())
		l.Init(theta, rng)
		orig := append([]float64(nil), theta...)
		tr := synthTrajectory(t, l, theta, 10, rng)
		gu := make([]float64, l.NumParams())
		if err := l.LocalUpdate(gu, theta, tr, rng); err != nil {
			t.Fatal(err)
		}
		if !floats.Equal(theta, orig) {
			t.Fatal("LocalUpdate modified theta")
		}
		sPi, sV := cfg.DP.clipNorms()
		np := l.NumPolicyParams()
		nPi, nV, n := norm(gu[:np]), norm(gu[np:]), norm(gu)
		t.Logf("%v: |g_pi| %.6g (S_pi %.6g), |g_v| %.6g (S_v %.6g), |g| %.6g (S %g)", spec.Kind, nPi, sPi, nV, sV, n, cfg.DP.ClipNorm)
		if nPi > sPi*(1+1e-12) || nV > sV*(1+1e-12) || n > cfg.DP.ClipNorm*(1+1e-12) {
			t.Fatal("local update exceeds its clip norms")
		}
		if nPi < 0.99*sPi || nV < 0.99*sV {
			t.Fatal("test does not exercise the clip: raise the learning rate")
		}
		// Non-private PPO: same data, no projection.
		cfg.DP = DPConfig{Mode: ModePPO, UsersPerUpdate: 8}
		lp := mustLearner(t, spec, cfg)
		if err := lp.LocalUpdate(gu, theta, tr, rng); err != nil {
			t.Fatal(err)
		}
		if norm(gu) <= 0.01 {
			t.Fatalf("ppo update norm %v: looks clipped", norm(gu))
		}
	}
}

func TestLocalUpdateImprovesSurrogate(t *testing.T) {
	rng := testRNG(t)
	cfg := smallConfig()
	cfg.DP = DPConfig{Mode: ModePPO, UsersPerUpdate: 1}
	cfg.PPO.EntropyCoef = 0
	cfg.PPO.ValueCoef = 0
	l := mustLearner(t, cartPole, cfg)
	theta := make([]float64, l.NumParams())
	l.Init(theta, rng)
	tr := synthTrajectory(t, l, theta, 10, rng)
	gu := make([]float64, l.NumParams())
	if err := l.LocalUpdate(gu, theta, tr, rng); err != nil {
		t.Fatal(err)
	}
	// l.adv still holds the user's (normalised) advantages.
	all := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	l.gather(tr, all)
	before := l.lossGrad(l.grad, theta, 10)
	after := append([]float64(nil), theta...)
	floats.Add(after, gu)
	l.gather(tr, all)
	if got := l.lossGrad(l.grad, after, 10); !(got < before) {
		t.Fatalf("surrogate loss %v after the update, %v before", got, before)
	}
}

func TestLocalUpdateDeterministic(t *testing.T) {
	rng := testRNG(t)
	l := mustLearner(t, cartPole, smallConfig())
	theta := make([]float64, l.NumParams())
	l.Init(theta, rng)
	tr := synthTrajectory(t, l, theta, 10, rng)
	g1, g2 := make([]float64, l.NumParams()), make([]float64, l.NumParams())
	if err := l.LocalUpdate(g1, theta, tr, rand.New(rand.NewPCG(5, 6))); err != nil {
		t.Fatal(err)
	}
	// Another user in between must not influence the next one (same Adam start).
	other := synthTrajectory(t, l, theta, 7, rng)
	if err := l.LocalUpdate(g2, theta, other, rng); err != nil {
		t.Fatal(err)
	}
	if err := l.LocalUpdate(g2, theta, tr, rand.New(rand.NewPCG(5, 6))); err != nil {
		t.Fatal(err)
	}
	if !floats.Equal(g1, g2) {
		t.Fatal("the same user and seed gave different updates: state leaked between users")
	}
	// ResetMoments changes the start state, hence the update.
	l.ResetMoments(g1)
	if err := l.LocalUpdate(g2, theta, tr, rand.New(rand.NewPCG(5, 6))); err != nil {
		t.Fatal(err)
	}
	if floats.Equal(g1, g2) {
		t.Fatal("ResetMoments had no effect")
	}
}

func TestLocalUpdateBadTrajectory(t *testing.T) {
	rng := testRNG(t)
	l := mustLearner(t, cartPole, smallConfig())
	theta := make([]float64, l.NumParams())
	l.Init(theta, rng)
	gu := make([]float64, l.NumParams())
	for name, mutate := range map[string]func(*Trajectory){
		"empty":     func(tr *Trajectory) { *tr = Trajectory{} },
		"obs":       func(tr *Trajectory) { tr.Obs = tr.Obs[:5] },
		"action":    func(tr *Trajectory) { tr.Actions[2] = 2 },
		"nan":       func(tr *Trajectory) { tr.Rewards[1] = math.NaN() },
		"final obs": func(tr *Trajectory) { tr.FinalObs = nil },
		"logprob>0": func(tr *Trajectory) { tr.LogProbs[0] = 0.5 },
	} {
		tr := synthTrajectory(t, l, theta, 5, rng)
		mutate(tr)
		if err := l.LocalUpdate(gu, theta, tr, rng); !errors.Is(err, ErrTrajectory) {
			t.Errorf("%s: error %v, want ErrTrajectory", name, err)
		}
	}
}

func TestLocalUpdateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are unreliable under -race")
	}
	rng := testRNG(t)
	for _, spec := range []Spec{cartPole, {ObsDim: 3, Kind: ActionContinuous, ActionDim: 2}} {
		l := mustLearner(t, spec, DefaultControlConfig())
		theta := make([]float64, l.NumParams())
		l.Init(theta, rng)
		tr := synthTrajectory(t, l, theta, 64, rng)
		gu := make([]float64, l.NumParams())
		l.ResetMoments(gu)
		if n := testing.AllocsPerRun(5, func() {
			if err := l.LocalUpdate(gu, theta, tr, rng); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%v LocalUpdate: %v allocs, want 0", spec.Kind, n)
		}
		a, _ := NewActor(spec, DefaultControlConfig().PPO.Hidden)
		act := make([]float64, 2)
		if n := testing.AllocsPerRun(50, func() {
			if spec.Kind == ActionDiscrete {
				a.ActDiscrete(rng, theta, tr.Obs[:4])
			} else {
				a.ActContinuous(act, rng, theta, tr.Obs[:3])
			}
		}); n != 0 {
			t.Errorf("%v Act: %v allocs, want 0", spec.Kind, n)
		}
	}
}

func TestAggregatorNoiseStd(t *testing.T) {
	rng := testRNG(t)
	cfg := DPConfig{Mode: ModeDP, NoiseMultiplier: 2, ClipNorm: 0.5, UsersPerUpdate: 4, PolicyClipShare: 0.5}
	const n = 40000
	a, err := NewAggregator(cfg, n/2, n/2, rng)
	if err != nil {
		t.Fatal(err)
	}
	zero := make([]float64, n)
	for range 4 {
		if err := a.Add(zero); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Add(zero); !errors.Is(err, ErrBatchFull) {
		t.Fatalf("fifth Add: %v, want ErrBatchFull", err)
	}
	g := make([]float64, n)
	if err := a.Release(g); err != nil {
		t.Fatal(err)
	}
	mean := floats.Sum(g) / n
	sd := math.Sqrt(floats.Dot(g, g)/n - mean*mean)
	want := 2 * 0.5 / 4.0 // z S / K
	// The sample std of n normals has relative std 1/sqrt(2n) = 0.35%.
	if math.Abs(sd-want)/want > 0.02 || math.Abs(mean) > 5*want/math.Sqrt(n) {
		t.Fatalf("noise mean %v std %v, want 0 and %v", mean, sd, want)
	}
	if a.Len() != 0 {
		t.Fatal("Release did not empty the aggregator")
	}
	if err := a.Release(g); !errors.Is(err, ErrEmptyBatch) {
		t.Fatalf("empty Release: %v, want ErrEmptyBatch", err)
	}
}

func TestAggregatorMeanAndClip(t *testing.T) {
	// Clip-only mode: deterministic, fixed denominator K on an early flush.
	cfg := DPConfig{Mode: ModeClipOnly, ClipNorm: 1, UsersPerUpdate: 4, PolicyClipShare: 0.64}
	a, err := NewAggregator(cfg, 2, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	// S_pi = 0.8, S_v = 0.6.
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.Add([]float64{0.3, 0.4, 0.1})) // inside both balls
	must(a.Add([]float64{3, 4, -6}))      // clipped to (0.48, 0.64, -0.6)
	g := make([]float64, 3)
	must(a.Release(g)) // early flush: 2 of K = 4
	want := []float64{(0.3 + 0.48) / 4, (0.4 + 0.64) / 4, (0.1 - 0.6) / 4}
	if !floats.EqualApprox(g, want, 1e-15) {
		t.Fatalf("g~ = %v, want %v", g, want)
	}
	theta := []float64{1, 1, 1}
	ApplyUpdate(theta, g, 2)
	if !floats.EqualApprox(theta, []float64{1 + 2*want[0], 1 + 2*want[1], 1 + 2*want[2]}, 1e-15) {
		t.Fatalf("theta %v", theta)
	}
	// PPO mode: no clip, no noise.
	p, err := NewAggregator(DPConfig{Mode: ModePPO, UsersPerUpdate: 1}, 2, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	must(p.Add([]float64{3, 4, -6}))
	must(p.Release(g))
	if !floats.Equal(g, []float64{3, 4, -6}) {
		t.Fatalf("ppo g~ = %v", g)
	}
	if err := p.Add([]float64{math.NaN(), 0, 0}); !errors.Is(err, ErrNonFinite) {
		t.Fatalf("NaN update: %v, want ErrNonFinite", err)
	}
	if err := p.Add([]float64{math.Inf(1), 0, 0}); !errors.Is(err, ErrNonFinite) {
		t.Fatalf("Inf update: %v, want ErrNonFinite", err)
	}
	if _, err := NewAggregator(DPConfig{Mode: ModeDP, NoiseMultiplier: 1, ClipNorm: 1, UsersPerUpdate: 1, PolicyClipShare: 0.5}, 2, 1, nil); err == nil {
		t.Fatal("nil rng in mode dp accepted")
	}
}

func TestConfigs(t *testing.T) {
	c := DefaultControlConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	p, d := c.PPO, c.DP
	if p.Gamma != 0.99 || p.Adam.LR != 7.26e-4 || p.Minibatches != 2 || p.Epochs != 8 || p.StepsPerUser != 64 ||
		d.ClipNorm != 0.05 || p.EntropyCoef != 0.36 || p.Lambda != 0.85 || len(p.Hidden) != 2 || p.Hidden[0] != 64 || p.Hidden[1] != 64 || d.UsersPerUpdate != 8 {
		t.Errorf("control config %+v", c)
	}
	c.PPO.Hidden[0] = 3 // fresh values: no shared state
	if DefaultControlConfig().PPO.Hidden[0] != 64 {
		t.Fatal("DefaultControlConfig shares its Hidden slice")
	}
	ds := DefaultDosingConfig()
	if err := ds.Validate(); err != nil {
		t.Fatal(err)
	}
	if ds.PPO.Adam.LR != 9.25e-4 || ds.PPO.Epochs != 4 || ds.DP.ClipNorm != 0.08 || ds.PPO.EntropyCoef != 0.01 || ds.PPO.Lambda != 0.97 {
		t.Errorf("dosing config %+v", ds)
	}
	if err := DefaultMuJoCoConfig().Validate(); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		dp   DPConfig
		want []string
	}{
		{"zero value", DPConfig{}, []string{"mode unset", "users per update"}},
		{"dp with z=0", DPConfig{Mode: ModeDP, ClipNorm: 1, UsersPerUpdate: 1, PolicyClipShare: 0.5}, []string{"z = 0"}},
		{"dp bad S share K", DPConfig{Mode: ModeDP, NoiseMultiplier: 1, ClipNorm: -1, PolicyClipShare: 1}, []string{"clip norm", "share", "users per update"}},
		{"clip-only with noise", DPConfig{Mode: ModeClipOnly, NoiseMultiplier: 1, ClipNorm: 1, UsersPerUpdate: 1, PolicyClipShare: 0.5}, []string{"must be 0"}},
		{"ppo with clip", DPConfig{Mode: ModePPO, ClipNorm: 1, UsersPerUpdate: 1}, []string{"clip norm"}},
	} {
		err := tc.dp.Validate()
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tc.name, err, w)
			}
		}
	}
	bad := PPOConfig{Hidden: []int{0}, Gamma: 2, Lambda: -1}
	err := bad.Validate()
	for _, w := range []string{"hidden[0]", "steps per user", "gamma", "lambda", "epochs", "minibatches", "server lr", "adam: lr"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("ppo error %v lacks %q", err, w)
		}
	}
	if _, err := NewLearner(Spec{}, c); err == nil || !strings.Contains(err.Error(), "obs dim") {
		t.Errorf("NewLearner with a zero spec: %v", err)
	}
}

// dgemmFLOPS measures the machine's single-threaded dense matmul rate with
// the learner's own GEMM (internal/gemm) on 256x256 float64 matrices.
func dgemmFLOPS() float64 {
	const n = 256
	rng := rand.New(rand.NewPCG(1, 1))
	a, b, c := randSlice(rng, n*n, 1), randSlice(rng, n*n, 1), randSlice(rng, n*n, 1)
	gemm.Dgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, a, n, b, n, 0, c, n)
	best := 0.0
	for range 5 {
		reps := 0
		start := time.Now()
		for time.Since(start) < 40*time.Millisecond {
			gemm.Dgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, a, n, b, n, 0, c, n)
			reps++
		}
		best = max(best, 2*n*n*n*float64(reps)/time.Since(start).Seconds())
	}
	return best
}

// localUpdateFLOPs counts the MLP flops of one LocalUpdate: the critic
// forward over T+1 observations for GAE, then per minibatch the forward and
// backward of both networks.
func localUpdateFLOPs(l *Learner, T int) float64 {
	p := l.cfg.PPO
	vf, _ := l.critic.FLOPs(T + 1)
	total := vf
	nmb := min(p.Minibatches, T)
	for k := 0; k < nmb; k++ {
		B := (k+1)*T/nmb - k*T/nmb
		af, ab := l.actor.FLOPs(B)
		cf, cb := l.critic.FLOPs(B)
		total += float64(p.Epochs) * (af + ab + cf + cb)
	}
	return total
}

// BenchmarkLocalUpdate: CartPole shapes (obs 4, 2 actions, T = 64, E = 8, 2
// minibatches, 64x64 networks), synthetic trajectory from a fixed seed.
// Reports users/s, the achieved MLP FLOP/s, the machine's single-threaded
// 256x256 GEMM FLOP/s (internal/gemm, the learner's kernel) measured in
// the same run, and their ratio.
func BenchmarkLocalUpdate(b *testing.B) {
	rng := rand.New(rand.NewPCG(42, 42))
	l := mustLearner(b, cartPole, DefaultControlConfig())
	theta := make([]float64, l.NumParams())
	l.Init(theta, rng)
	tr := synthTrajectory(b, l, theta, 64, rng)
	gu := make([]float64, l.NumParams())
	peak := dgemmFLOPS()
	flops := localUpdateFLOPs(l, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := l.LocalUpdate(gu, theta, tr, rng); err != nil {
			b.Fatal(err)
		}
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/sec, "users/s")
	achieved := flops * float64(b.N) / sec
	b.ReportMetric(achieved/1e9, "GFLOP/s")
	b.ReportMetric(peak/1e9, "dgemm-GFLOP/s")
	b.ReportMetric(100*achieved/peak, "%peak")
}

// BenchmarkForward serves one CartPole action (forward + sample + log-prob).
func BenchmarkForward(b *testing.B) {
	rng := rand.New(rand.NewPCG(42, 42))
	cfg := DefaultControlConfig()
	a, err := NewActor(cartPole, cfg.PPO.Hidden)
	if err != nil {
		b.Fatal(err)
	}
	l := mustLearner(b, cartPole, cfg)
	theta := make([]float64, l.NumParams())
	l.Init(theta, rng)
	obs := []float64{0.01, -0.02, 0.03, 0.04}
	b.ReportAllocs()
	for b.Loop() {
		a.ActDiscrete(rng, theta, obs)
	}
}

func TestAggregatorAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are unreliable under -race")
	}
	cfg := DPConfig{Mode: ModeDP, NoiseMultiplier: 1, ClipNorm: 1, UsersPerUpdate: 2, PolicyClipShare: 0.5}
	a, err := NewAggregator(cfg, 100, 50, testRNG(t))
	if err != nil {
		t.Fatal(err)
	}
	g := randSlice(testRNG(t), 150, 1)
	out := make([]float64, 150)
	if n := testing.AllocsPerRun(20, func() {
		_ = a.Add(g)
		_ = a.Add(g)
		_ = a.Release(out)
	}); n != 0 {
		t.Errorf("Add+Release: %v allocs, want 0", n)
	}
}

func TestLocalUpdateShortAndOddTrajectories(t *testing.T) {
	rng := testRNG(t)
	cfg := smallConfig()
	cfg.PPO.Minibatches = 3
	for _, spec := range []Spec{cartPole, {ObsDim: 3, Kind: ActionContinuous, ActionDim: 2}} {
		l := mustLearner(t, spec, cfg)
		theta := make([]float64, l.NumParams())
		l.Init(theta, rng)
		gu := make([]float64, l.NumParams())
		for _, T := range []int{1, 2, 7, 25} { // fewer rows than minibatches, uneven splits, growth past StepsPerUser
			for _, terminal := range []bool{true, false} {
				tr := synthTrajectory(t, l, theta, T, rng)
				tr.Terminal = terminal
				if err := l.LocalUpdate(gu, theta, tr, rng); err != nil {
					t.Fatalf("%v T=%d: %v", spec.Kind, T, err)
				}
				if n := norm(gu); n > cfg.DP.ClipNorm*(1+1e-12) || n == 0 {
					t.Fatalf("%v T=%d: update norm %v (S = %v)", spec.Kind, T, n, cfg.DP.ClipNorm)
				}
			}
		}
	}
}
