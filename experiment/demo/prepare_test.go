package demo

import (
	"testing"

	"dprl/profile"
)

// TestPrepare: z is derived from UserEpsilon unless Z was given, the
// environment's target applies unless Target was given, and the
// per-session epsilon is that of one release at the resolved z.
func TestPrepare(t *testing.T) {
	prof, err := profile.Get("cartpole")
	if err != nil {
		t.Fatal(err)
	}
	none := func(string) bool { return false }
	base := Config{Env: "cartpole", Users: 10, Concurrency: 1, EvalEvery: 1, EvalEpisodes: 1, Pace: PaceLockstep, Z: 1, UserEpsilon: 2, MaxUpdatesPerUser: 1}
	c, ac, eps, err := base.Prepare(none)
	if err != nil || c.Z != 0 || ac.Policy.DP.NoiseMultiplier == 1 || c.Target != prof.DemoTargetReturn || !(eps > 0 && eps <= 2) {
		t.Errorf("derived: z %v (agent %v), target %v, eps %v, %v", c.Z, ac.Policy.DP.NoiseMultiplier, c.Target, eps, err)
	}
	base.Target = 5
	c, ac, _, err = base.Prepare(func(f string) bool { return f == "Z" || f == "Target" })
	if err != nil || c.Z != 1 || ac.Policy.DP.NoiseMultiplier != 1 || c.Target != 5 {
		t.Errorf("given: z %v (agent %v), target %v, %v", c.Z, ac.Policy.DP.NoiseMultiplier, c.Target, err)
	}
}

// TestPrepareAverage: the served average's decay is the profile's unless
// Average was given; the linear contextual bandit takes none.
func TestPrepareAverage(t *testing.T) {
	none := func(string) bool { return false }
	base := Config{Env: "recsys", Users: 10, Concurrency: 1, EvalEvery: 1, EvalEpisodes: 1, Pace: PaceLockstep, Z: 1}
	if _, ac, _, err := base.Prepare(none); err != nil || ac.AverageDecay != 0.9 {
		t.Errorf("recsys: decay %v, %v; want the profile's 0.9", ac.AverageDecay, err)
	}
	if _, ac, _, err := base.Prepare(func(f string) bool { return f == "Average" }); err != nil || ac.AverageDecay != 0 {
		t.Errorf("recsys --average 0: decay %v, %v", ac.AverageDecay, err)
	}
	base.Env = "cartpole"
	if _, ac, _, err := base.Prepare(none); err != nil || ac.AverageDecay != 0 {
		t.Errorf("cartpole: decay %v, %v", ac.AverageDecay, err)
	}
	lin := Config{Env: "bandit", Users: 10, Concurrency: 1, EvalEvery: 1, EvalEpisodes: 1, Pace: PaceLockstep, Z: 1, Learner: "lincb"}
	if _, ac, _, err := lin.Prepare(none); err != nil || ac.AverageDecay != 0 {
		t.Errorf("lincb: decay %v, %v", ac.AverageDecay, err)
	}
	lin.Average = 0.9
	if _, _, _, err := lin.Prepare(func(f string) bool { return f == "Average" }); err == nil {
		t.Error("lincb with an average accepted")
	}
}
