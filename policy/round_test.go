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

// roundLearners returns w learners of a small discrete policy under dp.
func roundLearners(t *testing.T, dp DPConfig, w int) (Config, []*Learner) {
	t.Helper()
	cfg := DefaultControlConfig()
	cfg.PPO.Hidden = []int{4}
	cfg.DP = dp
	ls := make([]*Learner, w)
	for i := range ls {
		l, err := NewLearner(Spec{ObsDim: 2, Kind: ActionDiscrete, NumActions: 2}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ls[i] = l
	}
	return cfg, ls
}

// TestRoundFailedUpdateIsZeroInItsPlace checks Round's one rule for a failed
// local update, in every mode and for every kind of failure: the round
// releases exactly what an Aggregator releases, from the same noise seed,
// when the failed update is replaced by the zero vector in its place (the
// denominator K and the count unchanged), and the same as a round in which
// that user's update really was zero.
func TestRoundFailedUpdateIsZeroInItsPlace(t *testing.T) {
	const K = 4
	modes := []struct {
		name string
		dp   DPConfig
	}{
		{"dp", DPConfig{Mode: ModeDP, NoiseMultiplier: 1, ClipNorm: 0.5, UsersPerUpdate: K, PolicyClipShare: 0.8}},
		{"dp-sqrt", DPConfig{Mode: ModeDP, NoiseMultiplier: 1, ClipNorm: 0.5, UsersPerUpdate: K, PolicyClipShare: 0.8, Noise: NoiseSqrt, Horizon: 8}},
		{"clip-only", DPConfig{Mode: ModeClipOnly, ClipNorm: 0.5, UsersPerUpdate: K, PolicyClipShare: 0.8}},
		{"ppo", DPConfig{Mode: ModePPO, UsersPerUpdate: K}},
	}
	failures := []struct {
		name string
		fail func(gu []float64) error
	}{
		{"error", func(gu []float64) error { gu[0] = 3; return ErrNonFinite }},
		{"trajectory error", func([]float64) error { return ErrTrajectory }},
		{"nan", func(gu []float64) error { gu[1] = math.NaN(); return nil }},
		{"inf", func(gu []float64) error { gu[len(gu)-1] = math.Inf(-1); return nil }},
	}
	for _, m := range modes {
		for _, f := range failures {
			for _, n := range []int{K, K - 1} { // a full batch and an early flush
				t.Run(m.name+"/"+f.name, func(t *testing.T) {
					_, ls := roundLearners(t, m.dp, 2)
					np := ls[0].NumParams()
					vec := func(i int) []float64 {
						g := make([]float64, np)
						r := rand.New(rand.NewPCG(uint64(i), 9))
						for j := range g {
							g[j] = 0.3 * r.NormFloat64()
						}
						return g
					}
					const failed = 1
					round, err := NewRound(m.dp, ls, rand.New(rand.NewPCG(5, 5)))
					if err != nil {
						t.Fatal(err)
					}
					got, err := round.Run(n, func(w, i int, gu []float64) error {
						if w != i%2 {
							t.Errorf("slot %d on worker %d, want %d", i, w, i%2)
						}
						copy(gu, vec(i))
						if i == failed {
							return f.fail(gu)
						}
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
					if g, isFailed := round.Local(failed); !isFailed || slices.ContainsFunc(g, func(v float64) bool { return v != 0 }) {
						t.Errorf("Local(%d) = failed %v, %v; want failed, zero", failed, isFailed, g[:3])
					}
					if _, isFailed := round.Local(0); isFailed {
						t.Error("Local(0) failed")
					}

					agg, err := NewAggregator(m.dp, ls[0].NumPolicyParams(), np-ls[0].NumPolicyParams(), rand.New(rand.NewPCG(5, 5)))
					if err != nil {
						t.Fatal(err)
					}
					for i := range n {
						g := vec(i)
						if i == failed {
							clear(g)
						}
						if err := agg.Add(g); err != nil {
							t.Fatal(err)
						}
					}
					want := make([]float64, np)
					if err := agg.Release(want); err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, want) {
						t.Errorf("round released %v..., aggregator of the zero vector in place %v...", got[:3], want[:3])
					}

					_, ls2 := roundLearners(t, m.dp, 2)
					zero, err := NewRound(m.dp, ls2, rand.New(rand.NewPCG(5, 5)))
					if err != nil {
						t.Fatal(err)
					}
					got2, err := zero.Run(n, func(_, i int, gu []float64) error {
						if i != failed {
							copy(gu, vec(i))
						}
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got2, want) {
						t.Error("a failed update and a zero update give different releases")
					}
				})
			}
		}
	}
}

// TestRoundCommit checks that Commit, and only Commit, resets every
// learner's moments from the released g~: a local update after Commit
// equals one by a learner reset by hand from g~, one before it that of a
// learner never reset.
func TestRoundCommit(t *testing.T) {
	dp := DPConfig{Mode: ModeDP, NoiseMultiplier: 1, ClipNorm: 0.5, UsersPerUpdate: 2, PolicyClipShare: 0.8}
	cfg, ls := roundLearners(t, dp, 2)
	round, err := NewRound(dp, ls, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	np := ls[0].NumParams()
	theta := make([]float64, np)
	ls[0].Init(theta, rand.New(rand.NewPCG(3, 3)))
	tr := Trajectory{Obs: []float64{0.1, -0.2, 0.3, 0.1, -0.1, 0.2}, Actions: []int{0, 1, 1}, Rewards: []float64{1, 0, 1}, LogProbs: []float64{-0.7, -0.7, -0.7}, FinalObs: []float64{0, 0.1}}
	local := func(l *Learner) []float64 {
		g := make([]float64, np)
		if err := l.LocalUpdate(g, theta, &tr, rand.New(rand.NewPCG(4, 4))); err != nil {
			t.Fatal(err)
		}
		return g
	}
	gTilde, err := round.Run(2, func(w, _ int, gu []float64) error {
		return ls[w].LocalUpdate(gu, theta, &tr, rand.New(rand.NewPCG(4, 4)))
	})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := NewLearner(ls[0].Spec(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(local(ls[1]), local(fresh)) {
		t.Fatal("Run reset the moments before Commit")
	}
	round.Commit()
	fresh.ResetMoments(gTilde)
	want := local(fresh)
	for w, l := range ls {
		if !slices.Equal(local(l), want) {
			t.Errorf("learner %d: local update after Commit differs from one reset from g~", w)
		}
	}
}

func TestRoundErrors(t *testing.T) {
	dp := DPConfig{Mode: ModeDP, NoiseMultiplier: 1, ClipNorm: 0.5, UsersPerUpdate: 2, PolicyClipShare: 0.8}
	_, ls := roundLearners(t, dp, 1)
	if _, err := NewRound(dp, nil, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("NewRound without learners succeeded")
	}
	round, err := NewRound(dp, ls, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 3} {
		if _, err := round.Run(n, func(int, int, []float64) error { return nil }); err == nil {
			t.Errorf("Run(%d) with K = 2 succeeded", n)
		}
	}
	if _, err := round.Run(1, func(int, int, []float64) error { return errors.New("x") }); err != nil {
		t.Errorf("a failed local update made Run fail: %v", err)
	}
}

// overflowEnv is a two-dimensional environment whose every reward is half
// the largest float64: a few steps overflow the return to +Inf, so every
// local update on it fails (ErrNonFinite).
type overflowEnv struct{ t int }

func (e *overflowEnv) ObservationSpace() sims.Space {
	return sims.Space{Kind: sims.Box, Low: []float64{-1, -1}, High: []float64{1, 1}}
}
func (e *overflowEnv) ActionSpace() sims.Space { return sims.Space{Kind: sims.Discrete, N: 2} }
func (e *overflowEnv) MaxSteps() int           { return 6 }
func (e *overflowEnv) Reset(rng *rand.Rand, obs []float64) {
	e.t = 0
	obs[0], obs[1] = rng.Float64()-0.5, 0
}
func (e *overflowEnv) Step(a sims.Action, obs []float64) (float64, bool, bool) {
	e.t++
	obs[1] = float64(a.Index) - 0.5
	return math.MaxFloat64 / 2, false, e.t >= e.MaxSteps()
}

// TestTrainFailedLocalUpdatesKeepTheirPlace runs Train on users whose local
// updates all fail: each is counted (Skipped) and aggregated as the zero
// vector in its place, so the released parameters are exactly the initial
// ones plus eta times the noise-only releases of an Aggregator fed K zero
// vectors (the fixed denominator K, for the short last batch too) from
// Train's noise seed.
func TestTrainFailedLocalUpdatesKeepTheirPlace(t *testing.T) {
	cfg := DefaultControlConfig()
	cfg.PPO.Hidden = []int{4}
	cfg.PPO.StepsPerUser = 6
	cfg.DP.UsersPerUpdate = 4
	newEnv := func() sims.Env { return &overflowEnv{} }
	spec, err := SpecOf(newEnv())
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLearner(spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	np, nPi := l.NumParams(), l.NumPolicyParams()
	init := make([]float64, np)
	l.Init(init, rand.New(rand.NewPCG(8, 8)))
	const users = 6 // a batch of 4 and an early flush of 2
	res, err := Train(context.Background(), newEnv, cfg, TrainOptions{Users: users, Workers: 2, Init: slices.Clone(init), CurveEpisodes: 1}, rand.New(rand.NewPCG(11, 12)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped != users || res.Updates != 2 {
		t.Fatalf("skipped %d of %d users in %d updates, want all in 2", res.Skipped, users, res.Updates)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	_, noiseSeed := rng.Uint64(), rng.Uint64()
	agg, err := NewAggregator(cfg.DP, nPi, np-nPi, rand.New(rand.NewPCG(noiseSeed, 0)))
	if err != nil {
		t.Fatal(err)
	}
	want, g := slices.Clone(init), make([]float64, np)
	for _, n := range []int{4, 2} {
		for range n {
			if err := agg.Add(make([]float64, np)); err != nil {
				t.Fatal(err)
			}
		}
		if err := agg.Release(g); err != nil {
			t.Fatal(err)
		}
		ApplyUpdate(want, g, cfg.PPO.ServerLR)
	}
	if !slices.Equal(res.Theta, want) {
		t.Errorf("theta %v..., want init + noise-only releases %v...", res.Theta[:3], want[:3])
	}
}
