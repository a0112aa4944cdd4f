package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"dprl/internal/fielderr"
	"dprl/ledger/accountant"
	"dprl/policy"
	"dprl/profile"
)

// sqrtCartPole are the overrides of CartPole's former default: K = 8,
// square-root correlated noise, server step 0.5, 64-step segments of
// continuing episodes (an episode spans up to 8 users in 8 releases).
func sqrtCartPole() profile.TrainOverrides {
	k, lr, T, n := 8, 0.5, 64, policy.NoiseSqrt
	return profile.TrainOverrides{K: &k, ServerLR: &lr, StepsPerUser: &T, Noise: &n}
}

// smallTrain is a cartpole run of 24 users, K = 8: 3 releases of
// square-root noise.
func smallTrain() Train {
	return Train{Env: "cartpole", Method: MethodDPPG, Overrides: sqrtCartPole(), Delta: 1e-5, Users: 24, EvalEpisodes: 2}
}

// fieldsOf returns the field each joined error of err names first (its
// errors naming fields, *fielderr.Error, in order; others are skipped).
func fieldsOf(err error) []string {
	var leaves []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		leaves = j.Unwrap()
	} else if err != nil {
		leaves = []error{err}
	}
	var fields []string
	for _, e := range leaves {
		var fe *fielderr.Error
		if errors.As(e, &fe) {
			fields = append(fields, strings.FieldsFunc(fe.Error(), func(r rune) bool { return r == ' ' || r == ':' })[0])
		}
	}
	return fields
}

// TestTrainValidate: every invalid field is reported, in the order dprl
// train reports its flags, and the non-private baseline refuses privacy
// settings.
func TestTrainValidate(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	i := func(x int) *int { return &x }
	indep := policy.NoiseIndependent
	tests := []struct {
		name   string
		edit   func(*Train)
		fields []string
	}{
		{"ok", func(*Train) {}, nil},
		{"env", func(c *Train) { c.Env = "pong" }, []string{"Env"}},
		{"dp values", func(c *Train) {
			c.Overrides.Z, c.Overrides.Clip, c.Overrides.PolicyShare, c.Overrides.K = f(0), f(math.Inf(1)), f(1), i(0)
		}, []string{"Z", "Clip", "PolicyShare", "K"}},
		{"epsilon", func(c *Train) { c.Epsilon = f(math.NaN()) }, []string{"Epsilon"}},
		{"epsilon and z", func(c *Train) { c.Epsilon, c.Overrides.Z = f(1), f(1) }, []string{"Epsilon"}},
		{"non-private", func(c *Train) {
			c.Method, c.Overrides.Z, c.Epsilon, c.Overrides.Noise, c.Overrides.Horizon = MethodPPO, f(1), f(1), &indep, i(3)
		}, []string{"Z", "Epsilon", "Noise", "Horizon"}},
		{"method", func(c *Train) { c.Method = "sac" }, []string{"Method"}},
		{"horizon of independent noise", func(c *Train) { c.Overrides.Noise, c.Overrides.Horizon = &indep, i(0) }, []string{"Horizon"}},
		{"negative horizon", func(c *Train) { c.Overrides.Horizon = i(-1) }, []string{"Horizon"}},
		{"learner", func(c *Train) {
			o := &c.Overrides
			o.LR, o.ServerLR, o.EntropyCoef, o.Hidden, o.Epochs, o.Lambda, o.ValueScale, o.ObsScale = f(0), f(-1), f(-1), []int{4, 0}, i(0), f(2), f(0), &[]float64{1, 2}
		}, []string{"LR", "ServerLR", "EntropyCoef", "Hidden", "Epochs", "Lambda", "ValueScale", "ObsScale"}},
		{"run", func(c *Train) { c.Users, c.Delta, c.Average, c.EvalEpisodes, c.Workers = 0, 1, 1, 0, -1 },
			[]string{"Users", "Delta", "Average", "EvalEpisodes", "Workers"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := smallTrain()
			tc.edit(&c)
			err := c.Validate()
			if got := fieldsOf(err); !reflect.DeepEqual(got, tc.fields) {
				t.Fatalf("fields %v, want %v (%v)", got, tc.fields, err)
			}
			if _, perr := c.Plan(); (perr != nil) != (err != nil) {
				t.Errorf("Plan: %v", perr)
			}
		})
	}
}

// TestTrainPlanEpsilon: the epsilon a plan reports, computed from the
// configuration that runs (no training). CartPole's defaults (10,000 users,
// K = 8, sqrt noise, episodes of 500 steps in segments of 64): epsilon 53.2
// per episode at z = 1 and delta 1e-5, 4.377 per segment; the analytic
// Gaussian mechanism of z / sensitivity.
func TestTrainPlanEpsilon(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	fresh := Train{Env: "cartpole", Method: MethodDPPG, Delta: 1e-5, Users: 10000, EvalEpisodes: 1, FreshEpisodes: true}
	for _, c := range []struct {
		name                       string
		train                      Train
		episode, segment, sens     float64
		segments, releases, within float64
	}{
		{"cartpole sqrt K 8", Train{Env: "cartpole", Method: MethodDPPG, Delta: 1e-5, Users: 10000, EvalEpisodes: 1, Overrides: sqrtCartPole()}, 53.21, 4.377, 6.968, 8, 8, 0.01},
		{"cartpole default: one user, one episode", Train{Env: "cartpole", Method: MethodDPPG, Delta: 1e-5, Users: 10000, EvalEpisodes: 1}, 4.377, 4.377, 1, 1, 1, 0.001},
		{"cartpole fresh", fresh, 4.377, 4.377, 1, 1, 1, 0.001},
		{"acrobot", Train{Env: "acrobot", Method: MethodDPPG, Delta: 1e-5, Users: 10000, EvalEpisodes: 1}, 15.46, 4.377, math.Sqrt(8), 8, 8, 0.01},
	} {
		p, err := c.train.Plan()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		a := p.Account
		if math.Abs(p.Epsilon-c.episode) > c.within || math.Abs(a.EpsilonPerSegment-c.segment) > 1e-3 || math.Abs(a.Sensitivity-c.sens) > 1e-3 ||
			float64(a.Segments) != c.segments || float64(a.EpisodeReleases) != c.releases || a.PrivacyUnit != "episode" || p.Accountant != "analytic" {
			t.Errorf("%s: epsilon %v (segment %v), account %+v", c.name, p.Epsilon, a.EpsilonPerSegment, *a)
		}
		g, _ := accountant.Analytic{}.Epsilon(1e-5, accountant.Gaussian(p.Config.DP.NoiseMultiplier/a.Sensitivity))
		if math.Abs(g.Epsilon-p.Epsilon) > 1e-6*p.Epsilon {
			t.Errorf("%s: epsilon %v, Gaussian of z / sensitivity %v", c.name, p.Epsilon, g.Epsilon)
		}
	}
	// A target epsilon per episode sets z: the smallest whose epsilon is at
	// most the target.
	tr := Train{Env: "cartpole", Method: MethodDPPG, Delta: 1e-5, Users: 10000, EvalEpisodes: 1, Epsilon: f(5), Overrides: sqrtCartPole()}
	p, err := tr.Plan()
	if err != nil || p.Epsilon > 5 || p.Epsilon < 5*(1-1e-4) || !(p.Config.DP.NoiseMultiplier > 6) {
		t.Errorf("epsilon 5: %v per episode at z = %v (%v)", p.Epsilon, p.Config.DP.NoiseMultiplier, err)
	}
	if tr.Epsilon = f(1e6); !reflect.DeepEqual(fieldsOf(func() error { _, err := tr.Plan(); return err }()), []string{"Epsilon"}) {
		t.Error("epsilon 1e6 (met by every z): no error naming Epsilon")
	}
	// The non-private baseline has no epsilon and no account.
	np := Train{Env: "cartpole", Method: MethodPPO, Delta: 1e-5, Users: 16, EvalEpisodes: 1}
	if p, err := np.Plan(); err != nil || !math.IsInf(p.Epsilon, 1) || p.Account != nil || p.Config.DP.Mode != policy.ModePPO {
		t.Errorf("non-private: %+v, %v", p, err)
	}
	// A combination the learner rejects is a *ConfigError.
	k, sq := 1, policy.NoiseSqrt
	big := Train{Env: "cartpole", Method: MethodDPPG, Delta: 1e-5, Users: 1 << 30, EvalEpisodes: 1, FreshEpisodes: true, Overrides: profile.TrainOverrides{K: &k, Noise: &sq}}
	var cerr *ConfigError
	if _, err := big.Plan(); !errors.As(err, &cerr) {
		t.Errorf("a horizon of 2^30 releases: %v, want a *ConfigError", err)
	}
}

// TestTrainPlanRun: a run is a function of its seed, its result records the
// plan, its diagnostics are labelled simulation only, and the non-private
// baseline's JSON epsilon is null.
func TestTrainPlanRun(t *testing.T) {
	tr := smallTrain()
	tr.Diagnostics, tr.Seeded = true, true
	p, err := tr.Plan()
	if err != nil {
		t.Fatal(err)
	}
	a, err := p.Run(context.Background(), 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := p.Run(context.Background(), 3, nil)
	if a.EvalMean != b.EvalMean || !reflect.DeepEqual(a.Curve, b.Curve) {
		t.Error("seed 3 gave two runs")
	}
	if a.Method != "dppg" || a.Users != 24 || a.Updates != 3 || a.K != 8 || a.Noise != "sqrt" || a.Horizon != 3 || !a.Seeded || a.Seed != 3 ||
		a.Epsilon != p.Epsilon || a.EpisodeAccount != p.Account || len(a.Diagnostics) != 3 {
		t.Errorf("result %+v", a)
	}
	var diag bytes.Buffer
	if err := WriteDiagnostics(&diag, a.Diagnostics); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(diag.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec["scope"] != policy.DiagnosticsScope {
			t.Errorf("diagnostics line %q: %v", line, err)
		}
	}
	js, err := json.Marshal(a)
	if err != nil || !bytes.Contains(js, []byte(`"epsilon":11.28`)) || bytes.Contains(js, []byte("scope")) || !bytes.Contains(js, []byte(`"episode_releases":3`)) {
		t.Errorf("JSON %s (%v)", js, err)
	}
	np := Train{Env: "acrobot", Method: MethodPPO, Delta: 1e-5, Users: 8, EvalEpisodes: 1}
	pp, err := np.Plan()
	if err != nil {
		t.Fatal(err)
	}
	r, err := pp.Run(context.Background(), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	js, err = json.Marshal(r)
	if err != nil || !bytes.HasSuffix(js, []byte(`,"epsilon":null}`)) || bytes.Contains(js, []byte("privacy_unit")) {
		t.Errorf("non-private JSON %s (%v)", js, err)
	}
}

// TestTrainResultText: the text dprl train prints, on fixed results.
func TestTrainResultText(t *testing.T) {
	p, err := smallTrain().Plan()
	if err != nil {
		t.Fatal(err)
	}
	r := TrainResult{Env: "cartpole", Method: "dppg", EvalMean: 29.5, EvalStd: 4.5, EvalEpisodes: 2, Epsilon: p.Epsilon, Delta: 1e-5, Accountant: p.Accountant,
		EpisodeAccount: p.Account, Z: 1, Clip: 0.2, K: 8, Noise: "sqrt", Horizon: 3, Users: 24, Updates: 3, Steps: 498, Seconds: 0.5, StepsPerSecond: 996, Seed: 3}
	privacy := "epsilon = 11.29 at delta = 1e-05 per episode (z = 1, S = 0.2, K = 8, sqrt noise over 3 releases, analytic)\n" +
		"  an episode of at most 500 steps is up to 8 segments (users) of at most 64 steps in 3 consecutive releases (the run has only 3), sensitivity 2.206 segments'; per segment: epsilon = 4.378\n"
	for _, c := range []struct {
		name string
		w    func(*bytes.Buffer) error
		want string
	}{
		{"run", func(b *bytes.Buffer) error { return r.WriteText(b) },
			"cartpole dppg: eval return 29.50 ± 4.50 over 2 episodes (standard error 3.18)\n" + privacy + "24 users, 3 updates, 498 steps in 0.5s (996 steps/s), seed 3\n"},
		{"non-private", func(b *bytes.Buffer) error {
			np := TrainResult{Env: "acrobot", Method: "ppo", EvalMean: -500, EvalEpisodes: 1, Epsilon: math.Inf(1), Users: 8, Updates: 1, Steps: 512, Seconds: 1.25, StepsPerSecond: 409.6, Seed: 1}
			return np.WriteText(b)
		}, "acrobot ppo: eval return -500.00 ± 0.00 over 1 episodes (standard error 0.00)\nnon-private (ppo)\n8 users, 1 updates, 512 steps in 1.2s (410 steps/s), seed 1\n"},
		{"seeds", func(b *bytes.Buffer) error {
			r2 := r
			r2.Seed, r2.EvalMean, r2.EvalStd = 4, 43, 18
			return SummarizeSeeds([]TrainResult{r, r2}).WriteText(b)
		}, "cartpole dppg over 2 seeds (3-4): eval return 36.25 ± 6.75 (mean ± std over seeds of each run's 2-episode mean; min 29.50, max 43.00)\n" + privacy +
			"24 users per run, 1.0s in all\n  seed 3: 29.50 ± 4.50 (standard error 3.18)\n  seed 4: 43.00 ± 18.00 (standard error 12.73)\n"},
		{"sweep", func(b *bytes.Buffer) error {
			acct := *p.Account
			acct.EpsilonPerSegment = 0
			s := TrainSweepResult{Env: "cartpole", Method: "dppg", Delta: 1e-5, Users: 24, Seeds: []uint64{3, 4}, EpisodeAccount: &acct, Points: []SweepPoint{
				{Z: 1, Epsilon: 11.286, EpsilonPerSegment: 4.3772, Mean: 36.25, Std: 6.75, Min: 29.5, Max: 43},
				{Z: 3, Epsilon: 3.0764, EpsilonPerSegment: 1.2708, Mean: 38, Std: 16, Min: 22, Max: 54}}}
			return s.WriteText(b)
		}, "cartpole dppg: eval return against per-episode epsilon at delta 1e-05 (24 users per run; mean ± std over seeds 3-4)\n" +
			"  (an episode of at most 500 steps is up to 8 segments (users) of at most 64 steps in 3 consecutive releases (the run has only 3), sensitivity 2.206 segments')\n" +
			"  z 1      epsilon 11.29    per episode (4.378    per segment)    36.25 ±   6.75  (min 29.50, max 43.00)\n" +
			"  z 3      epsilon 3.077    per episode (1.271    per segment)    38.00 ±  16.00  (min 22.00, max 54.00)\n"},
	} {
		var b bytes.Buffer
		if err := c.w(&b); err != nil || b.String() != c.want {
			t.Errorf("%s: %v\n%s\nwant\n%s", c.name, err, b.String(), c.want)
		}
	}
}

// TestSummarizeSeeds: the summary over seeds (population std), the mean
// learning curve, and no epsilon for the non-private baseline.
func TestSummarizeSeeds(t *testing.T) {
	runs := []TrainResult{
		{Method: "ppo", Epsilon: math.Inf(1), EvalMean: 1, Seconds: 1, Curve: []policy.CurvePoint{{Users: 8, Mean: 2}, {Users: 16, Mean: 4}}},
		{Method: "ppo", Epsilon: math.Inf(1), EvalMean: 3, Seconds: 2, Curve: []policy.CurvePoint{{Users: 8, Mean: 4}, {Users: 16, Mean: 8}}},
	}
	s := SummarizeSeeds(runs)
	if s.Epsilon != nil || s.Mean != 2 || s.Std != 1 || s.Min != 1 || s.Max != 3 || s.Seconds != 3 || len(s.Runs) != 2 ||
		!reflect.DeepEqual(s.Curve, []policy.CurvePoint{{Users: 8, Mean: 3, Std: 1}, {Users: 16, Mean: 6, Std: 2}}) {
		t.Errorf("summary %+v", s)
	}
	js, err := json.Marshal(s)
	if err != nil || !bytes.Contains(js, []byte(`"epsilon":null`)) {
		t.Errorf("JSON %s (%v)", js, err)
	}
	runs[0].Epsilon, runs[1].Epsilon = 2, 2
	if s := SummarizeSeeds(runs); s.Epsilon == nil || *s.Epsilon != 2 {
		t.Errorf("epsilon %v", s.Epsilon)
	}
}

// TestTrainPlanSweep: a plan's sweep gives one point per z, the episode
// structure without a per-segment epsilon (that is per point), and needs
// private training.
func TestTrainPlanSweep(t *testing.T) {
	tr := smallTrain()
	tr.Users, tr.EvalEpisodes, tr.Diagnostics = 8, 1, true
	p, err := tr.Plan()
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Sweep(context.Background(), []float64{2, 1, 2}, []uint64{1}, SweepHooks{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 2 || res.Points[0].Z != 1 || res.EpisodeAccount == nil || res.EpisodeAccount.EpsilonPerSegment != 0 ||
		p.Account.EpsilonPerSegment == 0 || res.Method != "dppg" || res.Users != 8 || !reflect.DeepEqual(res.Seeds, []uint64{1}) {
		t.Errorf("sweep %+v", res)
	}
	tr.Method, tr.Overrides = MethodPPO, profile.TrainOverrides{}
	np, err := tr.Plan()
	if err != nil {
		t.Fatal(err)
	}
	var cerr *ConfigError
	if _, err := np.Sweep(context.Background(), []float64{1}, []uint64{1}, SweepHooks{}); !errors.As(err, &cerr) {
		t.Errorf("non-private sweep: %v", err)
	}
}

// TestTrainErrorsRender: the errors name fields, so that a command renders
// them with its own names (internal/fielderr); with dprl train's flags they
// read as its usage errors.
func TestTrainErrorsRender(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	indep, h := policy.NoiseIndependent, 4
	flag := func(field string) string {
		return map[string]string{"Method": "--algo", "Z": "--z", "Epsilon": "--epsilon", "Horizon": "--horizon", "Noise": "--noise", "Clip": "--clip"}[field]
	}
	for _, c := range []struct {
		edit func(*Train)
		want string
	}{
		{func(c *Train) { c.Overrides.Z = f(0) }, "--z 0: the noise multiplier must be finite and > 0 (use --algo ppo for the non-private baseline)"},
		{func(c *Train) { c.Overrides.Z, c.Epsilon = f(1), f(2) }, "--epsilon and --z both set: give the target epsilon or the noise multiplier, not both"},
		{func(c *Train) { c.Method, c.Overrides.Clip, c.Overrides.Noise = MethodPPO, f(1), nil }, "--clip: --algo ppo neither clips nor adds noise; drop --clip or use --algo dppg"},
		{func(c *Train) { c.Overrides.Noise, c.Overrides.Horizon = &indep, &h }, "--horizon: independent noise has no horizon; add --noise tree or sqrt"},
	} {
		tr := smallTrain()
		c.edit(&tr)
		if got := fielderr.Rename(tr.Validate(), flag).Error(); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}
