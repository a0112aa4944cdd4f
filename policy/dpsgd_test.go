package policy

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"dprl/ledger/accountant"
	"dprl/noise"
	"dprl/sims"
)

// dpsgdSmokeConfig is a short run for the smoke tests.
func dpsgdSmokeConfig() DPSGDConfig {
	c := DefaultDPSGDConfig()
	c.EvalEpisodes = 10
	c.Reinforce.Updates = 25
	c.Reinforce.EpisodesPerUpdate = 16
	c.DQN.Steps = 6000
	c.DQN.LearningStarts = 500
	c.DQN.EpsDecaySteps = 3000
	c.DQN.TargetEvery = 250
	return c
}

// randomReturn is the mean return of the uniformly random policy on CartPole.
func randomReturn(rng *rand.Rand, episodes int) float64 {
	env := cartpole()
	obs := make([]float64, 4)
	total := 0.0
	for e := 0; e < episodes; e++ {
		env.Reset(rng, obs)
		for {
			r, term, trunc := env.Step(sims.Action{Index: rng.IntN(2)}, obs)
			total += r
			if term || trunc {
				break
			}
		}
	}
	return total / float64(episodes)
}

func TestDPSGDConfigValidate(t *testing.T) {
	if err := DefaultDPSGDConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*DPSGDConfig)
		want []string
	}{
		{"zero z is not a default", func(c *DPSGDConfig) { c.Reinforce.Privacy.NoiseMultiplier = 0 }, []string{"reinforce", "noise multiplier z = 0"}},
		{"dqn clip and delta", func(c *DPSGDConfig) { c.DQN.Privacy.ClipNorm = math.Inf(1); c.DQN.Privacy.Delta = 1 }, []string{"clip norm C = +Inf", "delta = 1"}},
		{"buffer below batch", func(c *DPSGDConfig) { c.DQN.BufferSize = 10 }, []string{"buffer size 10"}},
		{"network and eval", func(c *DPSGDConfig) { c.Hidden = []int{0}; c.EvalEpisodes = 0 }, []string{"hidden[0] = 0", "eval episodes 0"}},
		{"reinforce counts", func(c *DPSGDConfig) { c.Reinforce.Updates = 0; c.Reinforce.Gamma = 1.5 }, []string{"updates 0", "gamma 1.5"}},
		{"dqn schedule", func(c *DPSGDConfig) { c.DQN.TargetEvery = 0; c.DQN.EpsEnd = -1; c.DQN.HuberDelta = 0 }, []string{"target every 0", "exploration", "huber delta 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultDPSGDConfig()
			tc.edit(&c)
			err := c.Validate()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestTrainDPSGDRejects(t *testing.T) {
	rng := testRNG(t)
	ctx := context.Background()
	if _, err := TrainDPSGD(ctx, "dpsgd-a2c", cartpole, dpsgdSmokeConfig(), rng, nil); !errors.Is(err, ErrUnknownDPSGDAlgo) {
		t.Errorf("unknown algo: %v", err)
	}
	if _, err := TrainDPSGD(ctx, AlgoDPSGDDQN, func() sims.Env { return sims.NewPendulum() }, dpsgdSmokeConfig(), rng, nil); err == nil {
		t.Error("continuous actions accepted")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	for _, algo := range []string{AlgoDPSGDReinforce, AlgoDPSGDDQN} {
		if _, err := TrainDPSGD(cctx, algo, cartpole, dpsgdSmokeConfig(), rng, nil); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: cancelled context: %v", algo, err)
		}
	}
}

func TestNormalisedReturns(t *testing.T) {
	dst := make([]float64, 3)
	normalisedReturns(dst, []float64{1, 1, 1}, 0.5) // G = 1.75, 1.5, 1
	mean := (1.75 + 1.5 + 1) / 3
	sd := math.Sqrt(((1.75-mean)*(1.75-mean) + (1.5-mean)*(1.5-mean) + (1-mean)*(1-mean)) / 3)
	for i, g := range []float64{1.75, 1.5, 1} {
		if want := (g - mean) / sd; math.Abs(dst[i]-want) > 1e-12 {
			t.Errorf("Ghat[%d] = %v, want %v", i, dst[i], want)
		}
	}
	one := []float64{7}
	normalisedReturns(one, []float64{1}, 0.9)
	if one[0] != 0 {
		t.Errorf("single-step episode: %v, want 0", one[0])
	}
}

func TestReplayPoissonSample(t *testing.T) {
	rng := testRNG(t)
	r := newReplay(1, 1000)
	x := []float64{0}
	for i := 0; i < 1000; i++ {
		r.add(x, 0, 0, x, false)
	}
	q := 0.05
	counts := make([]int, r.size)
	var idx []int
	trials := 4000
	total := 0
	for k := 0; k < trials; k++ {
		idx = r.poissonSample(idx, q, rng)
		total += len(idx)
		for j, i := range idx {
			if j > 0 && i <= idx[j-1] {
				t.Fatal("indices not increasing")
			}
			counts[i]++
		}
	}
	// Batch size ~ Binomial(1000, q): mean 50, sd of the mean over trials ~0.11.
	if mean := float64(total) / float64(trials); math.Abs(mean-50) > 0.6 {
		t.Errorf("mean batch %v, want 50", mean)
	}
	// Inclusion is uniform: the first and last hundred indices are drawn
	// alike (each sum ~ Binomial(4000*100, q), sd ~ 138).
	lo, hi := 0, 0
	for i := 0; i < 100; i++ {
		lo += counts[i]
		hi += counts[900+i]
	}
	if math.Abs(float64(lo-hi)) > 6*math.Sqrt(2*20000*0.95) {
		t.Errorf("inclusion counts %d (first 100) vs %d (last 100)", lo, hi)
	}
}

func TestDPSGDEpsilon(t *testing.T) {
	c := DefaultDPSGDConfig()
	eps, err := reinforceEpsilon(c.Reinforce.Privacy)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := accountant.Analytic{}.Epsilon(1e-5, accountant.Gaussian(1))
	if eps != g.Epsilon || eps <= 0 {
		t.Errorf("reinforce epsilon %v, want the analytic Gaussian %v", eps, g.Epsilon)
	}
	e1, _ := c.DQN.Epsilon(1000)
	e2, _ := c.DQN.Epsilon(2000)
	if e0, _ := c.DQN.Epsilon(0); e0 != 0 || !(e1 > 0 && e2 > e1) {
		t.Errorf("dqn epsilon 0, 1000, 2000 updates: %v, %v, %v", 0, e1, e2)
	}
	// DQN is charged with the PLD accountant; RDP, the cross-check, is
	// looser for the subsampled Gaussian.
	ev := accountant.Event{Q: c.DQN.SampleRate(), Z: c.DQN.Privacy.NoiseMultiplier, Steps: 2000}
	p, _ := accountant.PLD{}.Epsilon(c.DQN.Privacy.Delta, ev)
	r, _ := accountant.RDP{}.Epsilon(c.DQN.Privacy.Delta, ev)
	if rdp, _ := c.DQN.EpsilonRDP(2000); e2 != p.Epsilon || rdp != r.Epsilon || !(rdp > e2) {
		t.Errorf("dqn 2000 updates: epsilon %v (pld %v), rdp cross-check %v (rdp %v)", e2, p.Epsilon, rdp, r.Epsilon)
	}
}

// TestDPSGDSmoke trains each algorithm briefly on CartPole and checks the
// greedy policy beats the random one.
func TestDPSGDSmoke(t *testing.T) {
	rng := testRNG(t)
	random := randomReturn(rng, 200)
	for _, algo := range []string{AlgoDPSGDReinforce, AlgoDPSGDDQN} {
		t.Run(algo, func(t *testing.T) {
			calls := 0
			res, err := TrainDPSGD(context.Background(), algo, cartpole, dpsgdSmokeConfig(), rand.New(rand.NewPCG(*seedFlag, 7)),
				func(p DPSGDProgress) { calls++ })
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: eval %.1f ± %.1f (random %.1f), epsilon %.3g at delta %g, %d updates, %d episodes, %d steps, %.1fs",
				algo, res.EvalMean, res.EvalStd, random, res.Epsilon, res.Delta, res.Updates, res.Episodes, res.Steps, res.Seconds)
			if calls == 0 {
				t.Error("progress never called")
			}
			if !(res.Epsilon > 0) || res.Delta != 1e-5 || res.NoiseMultiplier != 1 {
				t.Errorf("privacy fields %+v", res)
			}
			if algo == AlgoDPSGDDQN && (res.Accountant != "pld" || !(res.RDPEpsilon > res.Epsilon)) {
				t.Errorf("dqn accountant %q, epsilon %v, rdp cross-check %v", res.Accountant, res.Epsilon, res.RDPEpsilon)
			}
			if res.EvalMean < 1.5*random {
				t.Errorf("eval return %.1f, not above 1.5 x random %.1f", res.EvalMean, random)
			}
		})
	}
}

func TestDPSGDDeterministic(t *testing.T) {
	c := dpsgdSmokeConfig()
	c.Reinforce.Updates = 3
	c.Reinforce.EpisodesPerUpdate = 4
	c.DQN.Steps = 800
	c.DQN.LearningStarts = 200
	c.EvalEpisodes = 2
	for _, algo := range []string{AlgoDPSGDReinforce, AlgoDPSGDDQN} {
		run := func() DPSGDResult {
			res, err := TrainDPSGD(context.Background(), algo, cartpole, c, rand.New(rand.NewPCG(*seedFlag, 3)), nil)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		a, b := run(), run()
		if !slices.Equal(a.Params, b.Params) || a.EvalMean != b.EvalMean || a.Steps != b.Steps || a.Epsilon != b.Epsilon {
			t.Errorf("%s: two runs with the same seed differ", algo)
		}
		other, err := TrainDPSGD(context.Background(), algo, cartpole, c, rand.New(rand.NewPCG(*seedFlag+1, 3)), nil)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Equal(a.Params, other.Params) {
			t.Errorf("%s: different seeds gave identical parameters", algo)
		}
	}
}

// TestDPSGDLong runs the default configurations (opt-in: DPRL_LONG=1) and
// checks they reach a decent return.
func TestDPSGDLong(t *testing.T) {
	if os.Getenv("DPRL_LONG") == "" {
		t.Skip("set DPRL_LONG=1 for the long CartPole runs")
	}
	for _, tc := range []struct {
		algo string
		min  float64
	}{{AlgoDPSGDReinforce, 400}, {AlgoDPSGDDQN, 100}} {
		res, err := TrainDPSGD(context.Background(), tc.algo, cartpole, DefaultDPSGDConfig(), rand.New(rand.NewPCG(*seedFlag, 7)), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: eval %.1f ± %.1f, epsilon %.3g at delta %g (%s, unit %s, q %.4g, z %g), %d updates, %d episodes, %d steps, %.1fs",
			tc.algo, res.EvalMean, res.EvalStd, res.Epsilon, res.Delta, res.Accountant, res.PrivacyUnit, res.SampleRate, res.NoiseMultiplier,
			res.Updates, res.Episodes, res.Steps, res.Seconds)
		if res.EvalMean < tc.min {
			t.Errorf("%s: eval return %.1f < %v", tc.algo, res.EvalMean, tc.min)
		}
	}
}

func TestDQNStepAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are unreliable under -race")
	}
	rng := testRNG(t)
	cfg := DefaultDQNConfig()
	cfg.BufferSize = 2000
	m := mustMLP(t, 4, 64, 64, 2)
	u, err := newDQNUpdater(m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	params := make([]float64, m.NumParams())
	m.Init(params, rng, GainValueOut)
	target := append([]float64(nil), params...)
	buf := newReplay(4, cfg.BufferSize)
	for i := 0; i < cfg.BufferSize; i++ {
		o, o2 := randSlice(rng, 4, 0.1), randSlice(rng, 4, 0.1)
		buf.add(o, rng.IntN(2), 1, o2, rng.IntN(20) == 0)
	}
	if a := testing.AllocsPerRun(50, func() { u.step(params, target, buf, rng) }); a != 0 {
		t.Errorf("DP-SGD DQN step: %v allocs, want 0", a)
	}
}

// TestReplayPoissonSampleIsBernoulli: the DQN baseline's Poisson sample
// includes each stored transition exactly when noise.Bernoulli(rng, q),
// drawn in index order from the same generator, says so: its inclusion
// probability is floor(q 2^64)/2^64 <= q (noise.Bernoulli), never above
// the q the accountant charges. Float geometric gaps, which this replaces,
// include a transition with a probability that rounding can put above q.
func TestReplayPoissonSampleIsBernoulli(t *testing.T) {
	r := newReplay(1, 300)
	x := []float64{0}
	for i := 0; i < 300; i++ {
		r.add(x, 0, 0, x, false)
	}
	for _, q := range []float64{1e-3, 0.01, 0.05, 1.0 / 3, 0.5, 0.9, 1 - 1e-9, 1} {
		for seed := uint64(0); seed < 5; seed++ {
			got := r.poissonSample(nil, q, rand.New(rand.NewPCG(seed, 7)))
			ref := rand.New(rand.NewPCG(seed, 7))
			var want []int
			for i := 0; i < r.size; i++ {
				if noise.Bernoulli(ref, q) {
					want = append(want, i)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("q %v seed %d: sample %v, want the Bernoulli draws %v", q, seed, got, want)
			}
		}
	}
}
