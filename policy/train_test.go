package policy

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"dprl/sims"
)

func cartpole() sims.Env { return sims.NewCartPole() }

// smokeConfig is a quick-learning PPO-mode configuration for short tests.
func smokeConfig() Config {
	cfg := DefaultControlConfig()
	cfg.PPO.Hidden = []int{32, 32}
	cfg.PPO.EntropyCoef = 0.01
	cfg.DP = DPConfig{Mode: ModePPO, UsersPerUpdate: 8}
	return cfg
}

func TestTrainImprovesOverRandom(t *testing.T) {
	cfg := smokeConfig()
	users := 400
	if raceEnabled {
		users = 160
	}
	res, err := Train(context.Background(), cartpole, cfg, TrainOptions{Users: users}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Users != users || res.Updates != users/8 || res.Steps <= 0 || len(res.Curve) < 2 {
		t.Fatalf("counts: %d users, %d updates, %d steps, %d curve points", res.Users, res.Updates, res.Steps, len(res.Curve))
	}
	actor, err := NewActor(res.Spec, cfg.PPO.Hidden)
	if err != nil {
		t.Fatal(err)
	}
	// A random initial policy balances about 22 steps on average.
	m, s := Evaluate(sims.NewCartPole(), actor, res.Theta, 20, rand.New(rand.NewPCG(2, 2)))
	t.Logf("after %d users: return %.1f ± %.1f (initial %.1f)", users, m, s, res.Curve[0].Mean)
	if !(m > 40) {
		t.Fatalf("mean return %.1f after %d users, want > 40", m, users)
	}
}

func TestTrainDeterministic(t *testing.T) {
	cfg := DefaultControlConfig() // mode dp: noise included
	cfg.PPO.Hidden = []int{8}
	cfg.DP.UsersPerUpdate = 5
	testTrainDeterministic(t, cfg, 23, 5)
	// Lockstep rollouts: 1 worker rolls out 16 users side by side, 3 workers
	// 7, 7 and 6, and users drop out of the batched forward as their
	// episodes end; the trajectories must not depend on it.
	cfg.PPO.Hidden = []int{32, 32}
	cfg.DP.UsersPerUpdate = 20
	testTrainDeterministic(t, cfg, 45, 3)
}

func testTrainDeterministic(t *testing.T, cfg Config, users, updates int) {
	t.Helper()
	for _, cont := range []bool{false, true} {
		run := func(workers int) Result {
			res, err := Train(context.Background(), cartpole, cfg,
				TrainOptions{Users: users, Workers: workers, ContinueEpisodes: cont, CurveEvery: 10},
				rand.New(rand.NewPCG(9, 9)))
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		a, b := run(1), run(3)
		if !slices.Equal(a.Theta, b.Theta) || a.Steps != b.Steps || !slices.Equal(a.Curve, b.Curve) {
			t.Fatalf("continue %v: runs with the same seed differ (steps %d vs %d)", cont, a.Steps, b.Steps)
		}
		if a.Users != users || a.Updates != updates {
			t.Fatalf("%d users %d updates, want %d and %d (last batch flushed early)", a.Users, a.Updates, users, updates)
		}
		c, err := Train(context.Background(), cartpole, cfg, TrainOptions{Users: users, ContinueEpisodes: cont}, rand.New(rand.NewPCG(9, 10)))
		if err != nil {
			t.Fatal(err)
		}
		if slices.Equal(a.Theta, c.Theta) {
			t.Fatal("different seeds gave the same parameters")
		}
	}
}

func TestTrainErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	if _, err := Train(context.Background(), cartpole, DefaultControlConfig(), TrainOptions{Users: 0}, rng); err == nil {
		t.Error("users 0 accepted")
	}
	bad := DefaultControlConfig()
	bad.DP.UsersPerUpdate = 0
	if _, err := Train(context.Background(), cartpole, bad, TrainOptions{Users: 8}, rng); err == nil {
		t.Error("K = 0 accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Train(ctx, cartpole, DefaultControlConfig(), TrainOptions{Users: 8}, rng)
	if !errors.Is(err, context.Canceled) || res.Users != 0 {
		t.Errorf("cancelled: %d users, err %v", res.Users, err)
	}
}

func TestTrainContinuousSmoke(t *testing.T) {
	cfg := DefaultControlConfig()
	cfg.PPO.Hidden = []int{8}
	res, err := Train(context.Background(), func() sims.Env { return sims.NewPendulum() }, cfg, TrainOptions{Users: 16}, rand.New(rand.NewPCG(3, 3)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Spec.Kind != ActionContinuous || res.Steps != 16*64 {
		t.Fatalf("spec %+v, steps %d", res.Spec, res.Steps)
	}
	for _, x := range res.Theta {
		if math.IsNaN(x) {
			t.Fatal("NaN parameter")
		}
	}
}

func TestTrainSnapshotServes(t *testing.T) {
	cfg := smokeConfig()
	res, err := Train(context.Background(), cartpole, cfg, TrainOptions{Users: 16}, rand.New(rand.NewPCG(4, 4)))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := NewSnapshot(res.Spec, cfg, uint64(res.Updates), res.Theta)
	if err != nil {
		t.Fatal(err)
	}
	b, err := snap.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnmarshalSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := got.CheckCompatible(res.Spec, cfg.PPO.Hidden); err != nil {
		t.Fatal(err)
	}
	actor, err := NewActor(got.Spec, got.Hidden)
	if err != nil {
		t.Fatal(err)
	}
	m1, _ := Evaluate(sims.NewCartPole(), actor, res.Theta, 3, rand.New(rand.NewPCG(5, 5)))
	m2, _ := Evaluate(sims.NewCartPole(), actor, got.Theta, 3, rand.New(rand.NewPCG(5, 5)))
	if m1 != m2 || got.Version != 2 || got.Config != ConfigHash(cfg) {
		t.Fatalf("restored policy differs: %v vs %v, version %d", m1, m2, got.Version)
	}
}

// TestTrainInit checks that TrainOptions.Init starts from the given
// parameters: zero users of training are impossible, so one update from Init
// must stay close to Init and far from a fresh initialisation.
func TestTrainInit(t *testing.T) {
	cfg := smokeConfig()
	base, err := Train(context.Background(), cartpole, cfg, TrainOptions{Users: cfg.DP.UsersPerUpdate, Workers: 1}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	init := slices.Clone(base.Theta)
	for i := range init {
		init[i] += 3 // far from any fresh initialisation
	}
	ft, err := Train(context.Background(), cartpole, cfg, TrainOptions{Users: cfg.DP.UsersPerUpdate, Workers: 1, Init: init}, rand.New(rand.NewPCG(2, 2)))
	if err != nil {
		t.Fatal(err)
	}
	var far int
	for i := range init {
		if math.Abs(ft.Theta[i]-init[i]) > 1 {
			far++
		}
	}
	if far > 0 {
		t.Errorf("%d of %d parameters moved by more than 1 from Init in one update", far, len(init))
	}
	if _, err := Train(context.Background(), cartpole, cfg, TrainOptions{Users: 1, Init: init[:3]}, rand.New(rand.NewPCG(2, 2))); err == nil {
		t.Error("Init of the wrong length accepted")
	}
}

// TestTrainAverage checks the moving average of the released parameters
// against the iterates of the same seeded run stopped after 1, 2 and 3
// updates.
func TestTrainAverage(t *testing.T) {
	cfg := DefaultControlConfig() // dp: the iterates carry noise
	cfg.PPO.Hidden = []int{8}
	cfg.DP.UsersPerUpdate = 4
	const decay = 0.7
	run := func(users int, d float64) Result {
		t.Helper()
		res, err := Train(context.Background(), cartpole, cfg, TrainOptions{Users: users, AverageDecay: d, CurveEvery: 100},
			rand.New(rand.NewPCG(3, 3)))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	th1, th2, th3 := run(4, 0).Theta, run(8, 0).Theta, run(12, 0).Theta
	if run(12, 0).Average != nil {
		t.Error("Average set with averaging off")
	}
	if got := run(4, decay).Average; !slices.Equal(got, th1) {
		t.Error("average after one update is not the first iterate")
	}
	res := run(12, decay)
	if !slices.Equal(res.Theta, th3) {
		t.Error("averaging changed the iterates")
	}
	for i, got := range res.Average {
		want := decay*(decay*th1[i]+(1-decay)*th2[i]) + (1-decay)*th3[i]
		if math.Abs(got-want) > 1e-12*(1+math.Abs(want)) {
			t.Fatalf("average[%d] = %v, want %v", i, got, want)
		}
	}
	for _, d := range []float64{-0.1, 1, math.NaN()} {
		if _, err := Train(context.Background(), cartpole, cfg, TrainOptions{Users: 4, AverageDecay: d}, rand.New(rand.NewPCG(3, 3))); err == nil {
			t.Errorf("decay %v accepted", d)
		}
	}
}

// endlessEnv never terminates, and truncates only after 3 MaxSteps steps
// (50 if MaxSteps < 1), later than its MaxSteps says.
type endlessEnv struct {
	max, steps int
}

func (e *endlessEnv) ObservationSpace() sims.Space {
	return sims.Space{Kind: sims.Box, Low: []float64{-1}, High: []float64{1}}
}
func (e *endlessEnv) ActionSpace() sims.Space           { return sims.Space{Kind: sims.Discrete, N: 2} }
func (e *endlessEnv) MaxSteps() int                     { return e.max }
func (e *endlessEnv) Reset(_ *rand.Rand, obs []float64) { e.steps, obs[0] = 0, 0 }
func (e *endlessEnv) Step(a sims.Action, obs []float64) (float64, bool, bool) {
	e.steps++
	obs[0] = 0.1 * float64(a.Index)
	late := 3 * e.max
	if e.max < 1 {
		late = 50
	}
	return 1, false, e.steps >= late
}

// TestTrainEndsEpisodesAtMaxSteps: with continuing episodes Train ends every
// episode at the environment's MaxSteps even if the environment never says
// so, which EpisodeSegments' bound of ceil(MaxSteps / T) users per episode
// relies on; in mode dp it refuses an environment without a finite
// MaxSteps unless every user starts a fresh episode.
func TestTrainEndsEpisodesAtMaxSteps(t *testing.T) {
	cfg := DefaultControlConfig()
	cfg.PPO.Hidden = []int{4}
	cfg.PPO.StepsPerUser = 4
	cfg.DP.UsersPerUpdate = 2
	newEnv := func() sims.Env { return &endlessEnv{max: 10} }
	res, err := Train(context.Background(), newEnv, cfg, TrainOptions{Users: 24, Workers: 1, ContinueEpisodes: true, CurveEpisodes: 1, CurveEvery: 24}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}

	// 24 users of at most 4 steps in 2 slots, episodes of 10 steps = 4 + 4
	// + 2 (3 users, EpisodeSegments): 12 users per slot make 4 episodes,
	// 40 steps per slot. Episodes of 30 steps (the environment's own
	// truncation) would make 46.
	if res.Steps != 2*4*10 {
		t.Errorf("%d steps, want 80 (episodes of 4 + 4 + 2 steps)", res.Steps)
	}
	if ep, _ := EpisodeSegments(10, 4, true); ep != 3 {
		t.Errorf("EpisodeSegments(10, 4) = %d, want 3", ep)
	}

	unbounded := func() sims.Env { return &endlessEnv{} }
	if _, err := Train(context.Background(), unbounded, cfg, TrainOptions{Users: 4, ContinueEpisodes: true}, rand.New(rand.NewPCG(1, 2))); err == nil {
		t.Error("mode dp, continuing episodes of unbounded length: accepted")
	}
	if _, err := Train(context.Background(), unbounded, cfg, TrainOptions{Users: 4, CurveEpisodes: 1, CurveEvery: 4}, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Errorf("fresh episodes of an unbounded environment: %v", err)
	}
}
