package profile

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"dprl/internal/fielderr"
	"dprl/policy"
	"dprl/sims"
)

// TestTrainDefaults: dprl train's learner defaults per environment (the
// measured changes to Table 3), and every default observation scale fits
// its environment's observation.
func TestTrainDefaults(t *testing.T) {
	if cfg := TrainDefaults("cartpole"); cfg.PPO.ValueScale != 10 || len(cfg.PPO.ObsScale) != 4 || cfg.PPO.MomentReset != policy.ResetSecond || cfg.PPO.Lambda != 0.98 {
		t.Errorf("cartpole: value scale %v, obs scale %v, moment reset %v, lambda %v", cfg.PPO.ValueScale, cfg.PPO.ObsScale, cfg.PPO.MomentReset, cfg.PPO.Lambda)
	}
	if cfg := TrainDefaults("dosing-0"); cfg.PPO.MomentReset != policy.ResetPaper || cfg.DP.NoiseMultiplier != 0.1 || cfg.PPO.ValueScale != 10 {
		t.Errorf("dosing: moment reset %v, z %v, value scale %v", cfg.PPO.MomentReset, cfg.DP.NoiseMultiplier, cfg.PPO.ValueScale)
	}
	// recsys: whole sessions (T = the 400-step limit), undiscounted, GAE
	// lambda 0.9, standardised advantages, entropy 0.01.
	if cfg, limit := TrainDefaults("recsys"), sims.DefaultRecSysConfig().MaxSteps; cfg.PPO.StepsPerUser != limit || limit != 400 || cfg.PPO.Gamma != 1 || cfg.PPO.Lambda != 0.9 || !cfg.PPO.NormalizeAdvantages || cfg.PPO.ValueScale != 30 || cfg.PPO.EntropyCoef != 0.01 {
		t.Errorf("recsys: T %d (step limit %d), gamma %v, lambda %v, value scale %v, entropy %v", cfg.PPO.StepsPerUser, limit, cfg.PPO.Gamma, cfg.PPO.Lambda, cfg.PPO.ValueScale, cfg.PPO.EntropyCoef)
	}
	// recsys: the private learner's K, S, server step, users and served
	// average; the non-private baseline keeps K = 32, step 1 and 40,000
	// users.
	p, err := Get("recsys")
	if err != nil {
		t.Fatal(err)
	}
	dp, err := TrainConfig("recsys", true, p.Users, TrainOverrides{})
	if err != nil || dp.DP.UsersPerUpdate != 256 || dp.DP.ClipNorm != 0.25 || dp.PPO.ServerLR != 4 || p.Users != 120000 || p.Average != 0.9 {
		t.Errorf("recsys dppg: K %d, S %v, step %v, users %d, average %v (%v)", dp.DP.UsersPerUpdate, dp.DP.ClipNorm, dp.PPO.ServerLR, p.Users, p.Average, err)
	}
	ppo, err := TrainConfig("recsys", false, p.BaselineUsers, TrainOverrides{})
	if err != nil || ppo.DP.UsersPerUpdate != 32 || ppo.PPO.ServerLR != 1 || ppo.DP.Mode != policy.ModePPO || p.BaselineUsers != 40000 || ppo.PPO.StepsPerUser != 400 {
		t.Errorf("recsys ppo: K %d, step %v, mode %v, users %d (%v)", ppo.DP.UsersPerUpdate, ppo.PPO.ServerLR, ppo.DP.Mode, p.BaselineUsers, err)
	}
	if c, _ := Get("cartpole"); c.Users != DefaultTrainUsers || c.BaselineUsers != DefaultTrainUsers || c.Average != 0 || !reflect.DeepEqual(c.Baseline, NonPrivate(c.Learner)) {
		t.Errorf("cartpole: users %d/%d, average %v, baseline differs from the learner", c.Users, c.BaselineUsers, c.Average)
	}
	if cfg := TrainDefaults("pong"); !reflect.DeepEqual(cfg, policy.DefaultControlConfig()) {
		t.Errorf("unknown environment: %+v, want Table 3's control column", cfg)
	}
	for _, name := range sims.Names() {
		if sc := TrainDefaults(name).PPO.ObsScale; len(sc) != 0 && len(sc) != ObsDim(name) {
			t.Errorf("%s: %d observation scales for dimension %d", name, len(sc), ObsDim(name))
		}
	}
	if ObsDim("cartpole") != 4 || ObsDim("pong") != 0 {
		t.Errorf("ObsDim: cartpole %d, pong %d", ObsDim("cartpole"), ObsDim("pong"))
	}
}

// TestTrainConfig: the defaults dprl train resolves per environment
// (correlated noise and its horizon, the non-private baseline) and the
// overrides over them.
func TestTrainConfig(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	k4, h5, tree, indep, sqrt, zero := 4, 5, policy.NoiseTree, policy.NoiseIndependent, policy.NoiseSqrt, policy.ResetZero
	for _, c := range []struct {
		name       string
		env        string
		private    bool
		users      int
		o          TrainOverrides
		z          float64
		k          int
		noise      policy.Noise
		horizon    int
		serverLR   float64
		mode       policy.Mode
		checkOther func(policy.Config) bool
	}{
		{"cartpole: one user, one whole episode", "cartpole", true, 100, TrainOverrides{}, 1, 32, policy.NoiseIndependent, 0, 1, policy.ModeDP,
			func(c policy.Config) bool { return c.PPO.StepsPerUser == 500 }},
		{"cartpole K 4 sqrt", "cartpole", true, 100, TrainOverrides{K: &k4, Noise: &sqrt}, 1, 4, policy.NoiseSqrt, 25, 1, policy.ModeDP, nil},
		{"cartpole tree horizon 5", "cartpole", true, 100, TrainOverrides{Noise: &tree, Horizon: &h5}, 1, 32, policy.NoiseTree, 5, 1, policy.ModeDP, nil},
		{"cartpole independent", "cartpole", true, 100, TrainOverrides{Noise: &indep}, 1, 32, policy.NoiseIndependent, 0, 1, policy.ModeDP, nil},
		{"cartpole segments", "cartpole", true, 100, TrainOverrides{StepsPerUser: &k4}, 1, 32, policy.NoiseIndependent, 0, 1, policy.ModeDP,
			func(c policy.Config) bool { return c.PPO.StepsPerUser == 4 }},
		{"acrobot", "acrobot", true, 100, TrainOverrides{}, 1, 32, policy.NoiseIndependent, 0, 1, policy.ModeDP, nil},
		{"dosing", "dosing-0", true, 100, TrainOverrides{Z: f(0.5)}, 0.5, 8, policy.NoiseIndependent, 0, 1, policy.ModeDP, nil},
		{"ppo ignores DP settings", "cartpole", false, 100, TrainOverrides{Z: f(3), Clip: f(1), Noise: &tree}, 0, 32, policy.NoiseIndependent, 0, 1, policy.ModePPO,
			func(c policy.Config) bool { return c.DP.ClipNorm == 0 }},
		{"learner overrides", "acrobot", true, 10, TrainOverrides{LR: f(1e-3), EntropyCoef: f(0), Hidden: []int{8}, Lambda: f(0.5), MomentReset: &zero, ObsScale: &[]float64{}, StepsPerUser: &k4, Gamma: f(0.9)}, 1, 32, policy.NoiseIndependent, 0, 1, policy.ModeDP,
			func(c policy.Config) bool {
				return c.PPO.Adam.LR == 1e-3 && c.PPO.EntropyCoef == 0 && reflect.DeepEqual(c.PPO.Hidden, []int{8}) && c.PPO.Lambda == 0.5 && c.PPO.MomentReset == policy.ResetZero && len(c.PPO.ObsScale) == 0 &&
					c.PPO.StepsPerUser == 4 && c.PPO.Gamma == 0.9
			}},
	} {
		cfg, err := TrainConfig(c.env, c.private, c.users, c.o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		dp := cfg.DP
		if dp.NoiseMultiplier != c.z || dp.UsersPerUpdate != c.k || dp.Noise != c.noise || dp.Horizon != c.horizon || cfg.PPO.ServerLR != c.serverLR || dp.Mode != c.mode {
			t.Errorf("%s: z %v K %d noise %v horizon %d server lr %v mode %v; want %v %d %v %d %v %v", c.name, dp.NoiseMultiplier, dp.UsersPerUpdate, dp.Noise, dp.Horizon, cfg.PPO.ServerLR, dp.Mode,
				c.z, c.k, c.noise, c.horizon, c.serverLR, c.mode)
		}
		if c.checkOther != nil && !c.checkOther(cfg) {
			t.Errorf("%s: %+v", c.name, cfg.PPO)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if _, err := TrainConfig("pong", true, 1, TrainOverrides{}); !errors.Is(err, sims.ErrUnknownEnv) {
		t.Errorf("unknown environment: %v", err)
	}
	if TrainNoise("cartpole") != policy.NoiseIndependent || TrainNoise("acrobot") != policy.NoiseIndependent || TrainNoise("pong") != policy.NoiseIndependent {
		t.Error("TrainNoise")
	}
}

func TestParseTrainSettings(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []float64
		errs string
	}{
		{"1,1,10,1", []float64{1, 1, 10, 1}, ""},
		{" 1, 2 ,3,4 ", []float64{1, 2, 3, 4}, ""},
		{"none", nil, ""},
		{"", nil, ""},
		{"1,2", []float64{1, 2}, `ObsScale "1,2": want 4 values (the observation dimension of cartpole), or none`},
		{"1,x", []float64{1}, `ObsScale "1,x": strconv.ParseFloat: parsing "x": invalid syntax` + "\n" + `ObsScale "1,x": want 4 values (the observation dimension of cartpole), or none`},
		{"1,2,3,4,x", []float64{1, 2, 3, 4}, `ObsScale "1,2,3,4,x": strconv.ParseFloat: parsing "x": invalid syntax`},
	} {
		got, err := ParseObsScale(c.in, "cartpole")
		if msg := fmt.Sprint(err); err != nil && msg != c.errs || err == nil && c.errs != "" {
			t.Errorf("%q: error %v, want %q", c.in, err, c.errs)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %v, want %v", c.in, got, c.want)
		}
	}
	if sc, err := ParseObsScale("1,2,3", "pong"); err != nil || len(sc) != 3 {
		t.Errorf("unknown environment (no dimension to check): %v %v", sc, err)
	}
	for in, want := range map[string]int{"run": 0, "1": 1, "64": 64, "0": -1, "-2": -1, "x": -1, "": -1} {
		h, err := ParseHorizon(in)
		if (want < 0) != (err != nil) || want >= 0 && h != want || err != nil && err.Error() != fmt.Sprintf("Horizon %q: want run or a number of releases >= 1", in) {
			t.Errorf("ParseHorizon(%q) = %d, %v", in, h, err)
		}
	}
	for in, want := range map[string]policy.MomentReset{"paper": policy.ResetPaper, "second": policy.ResetSecond, "zero": policy.ResetZero} {
		if m, err := ParseMomentReset(in); err != nil || m != want {
			t.Errorf("ParseMomentReset(%q) = %v, %v", in, m, err)
		}
	}
	if _, err := ParseMomentReset("adam"); err == nil || err.Error() != `MomentReset "adam": want paper, second or zero` {
		t.Errorf("adam: %v", err)
	}
	for in, want := range map[string]policy.Noise{"independent": policy.NoiseIndependent, "tree": policy.NoiseTree, "sqrt": policy.NoiseSqrt} {
		if n, err := ParseNoise(in); err != nil || n != want {
			t.Errorf("ParseNoise(%q) = %v, %v", in, n, err)
		}
	}
	var fe *fielderr.Error
	if _, err := ParseNoise("gaussian"); !errors.As(err, &fe) || fielderr.Rename(err, func(string) string { return "--noise" }).Error() != `--noise "gaussian": want independent, tree or sqrt` {
		t.Errorf("gaussian: %v", err)
	}
}
