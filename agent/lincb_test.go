package agent

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"dprl/agent/internal/agenttest"
	"dprl/internal/testutil"
	"dprl/ledger"
	"dprl/ledger/accountant"
	"dprl/noise"
	"dprl/policy"
	"dprl/policy/lincb"
	"dprl/sims"
)

// linConfig is the bandit with the linear contextual bandit at user-level
// epsilon 1 (z = 3.73, one release per session), K sessions per update.
func linConfig(t *testing.T, K int) Config {
	t.Helper()
	pc := policy.DefaultControlConfig()
	pc.DP.UsersPerUpdate = K
	z, err := accountant.GaussianSigma(1, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	pc.DP.NoiseMultiplier = z
	cfg := DefaultConfig(policy.Spec{ObsDim: 8, Kind: policy.ActionDiscrete, NumActions: 10}, pc)
	cfg.RewardLow, cfg.RewardHigh = 0, 1
	lc := lincb.DefaultConfig(0, 0, math.Sqrt(3))
	cfg.LinCB = &lc
	cfg.Seed = 11
	return cfg
}

// playBandit serves n simulated bandit users through the agent, one
// session each, a block at a time, waiting for each release (lockstep).
func playBandit(t *testing.T, a *Agent, env *sims.Bandit, rng *rand.Rand, from, n int) {
	t.Helper()
	obs := make([]float64, 8)
	for i := from; i < from+n; i++ {
		env.Reset(rng, obs)
		res, err := a.Act(fmt.Sprintf("s%d", i), fmt.Sprintf("u%d", i), obs, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		r, _, _ := env.Step(res.Action, obs)
		if _, err := a.End(fmt.Sprintf("s%d", i), fmt.Sprintf("u%d", i), r, true); err != nil {
			t.Fatal(err)
		}
		if c := a.cfg.LinCBConfig(); c.BlockOf(i+1) > c.BlockOf(i) {
			want := uint64(c.BlockOf(i + 1))
			testutil.EventuallyTrue(t, 20*time.Second, fmt.Sprintf("version %d", want), func() bool { return a.Version() >= want })
		}
	}
}

// TestLinCBAgent: the agent learns the bandit with the linear contextual
// bandit, writes one ledger entry per block at its sensitivity, resumes
// the same model after a restart, and refuses a ledger of the other
// learner.
func TestLinCBAgent(t *testing.T) {
	const K, versions = 500, 8
	dir := t.TempDir()
	cfg := linConfig(t, K)
	users := cfg.LinCBConfig().UsersBefore(versions) // 11,920: blocks of 500, 650, 845, ...
	a, store, stop := startAgent(t, cfg, dir)
	env, err := sims.NewBandit(sims.DefaultBanditConfig())
	if err != nil {
		t.Fatal(err)
	}
	held, err := env.HeldOut(5000, rand.New(rand.NewPCG(3, 3)))
	if err != nil {
		t.Fatal(err)
	}
	value := func(a *Agent) float64 {
		return held.Value(func(dst, x []float64) { a.current.Load().lin.Probs(dst, x) })
	}
	bl := held.Baselines()
	if v := value(a); math.Abs(v-bl.Uniform) > 1e-9 {
		t.Errorf("version 0 serves %v, want the uniform %v", v, bl.Uniform)
	}
	playBandit(t, a, env, rand.New(rand.NewPCG(1, 2)), 0, users)
	v := value(a)
	t.Logf("version %d: expected click %.4f (uniform %.4f, best fixed %.4f, oracle %.4f)", a.Version(), v, bl.Uniform, bl.BestFixed, bl.Oracle)
	if a.Version() != versions || v < bl.BestFixed+0.15 {
		t.Errorf("version %d serves %.4f; want version %d above the best fixed item %.4f by 0.15", a.Version(), v, versions, bl.BestFixed)
	}
	r, err := store.Verify()
	if err != nil || !r.OK() || r.Releases != versions || r.Users != users {
		t.Fatalf("verify %+v %v", r, err)
	}
	var e ledger.Entry
	if err := store.Entries(func(x ledger.Entry) error {
		if x.Seq == 3 {
			e = x
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if e.S != math.Sqrt2 || e.K != 845 || e.Participants != 845 || !strings.HasPrefix(e.Mechanism, "lincb:") || e.Epsilon > 1 || e.Sampler != noise.SamplerGaussianTable {
		t.Errorf("entry %+v", e)
	}
	p1 := make([]float64, 10)
	x := []float64{0, 1, 0, 1, 0, 0.3, -0.4, 0.9}
	a.current.Load().lin.Probs(p1, x)
	stop()

	a2, store2, stop2 := startAgent(t, cfg, dir)
	p2 := make([]float64, 10)
	a2.current.Load().lin.Probs(p2, x)
	if a2.Version() != versions || fmt.Sprint(p1) != fmt.Sprint(p2) {
		t.Errorf("resumed version %d serves %v, want %d serving %v", a2.Version(), p2, versions, p1)
	}
	stop2()
	_ = store2
	// The other learner on this ledger, or another block size, is refused.
	s3 := agenttest.OpenStore(t, dir)
	defer s3.Close()
	ppo := cfg
	ppo.LinCB = nil
	if _, err := New(ppo, s3, Options{}); !errors.Is(err, ledger.ErrIncompatibleSpec) {
		t.Errorf("DPPG on the linear bandit's ledger: %v", err)
	}
	k2 := cfg
	k2.Policy.DP.UsersPerUpdate = 2 * K
	if _, err := New(k2, s3, Options{}); err == nil || !strings.Contains(err.Error(), "linear contextual bandit") {
		t.Errorf("another K on the linear bandit's ledger: %v", err)
	}
}

// TestLinCBDescribe: the configuration line names the linear bandit's
// blocks and its sensitivity, not DPPG's clipping norm.
func TestLinCBDescribe(t *testing.T) {
	d := linConfig(t, 1000).Describe()
	for _, want := range []string{"linear contextual bandit: blocks of K = 1000 sessions growing 1.3x up to 16000", "S = 1.41421", "clipped to L2 norm 1.73205", "per-session epsilon 1 at delta 1e-05"} {
		if !strings.Contains(d, want) {
			t.Errorf("%q does not say %q", d, want)
		}
	}
}

// TestLinCBConfigRefusals: continuous actions, correlated noise, a fixed
// policy and a cluster role are refused with the linear bandit.
func TestLinCBConfigRefusals(t *testing.T) {
	cfg := linConfig(t, 100)
	cont := cfg
	cont.Spec = policy.Spec{ObsDim: 3, Kind: policy.ActionContinuous, ActionDim: 1}
	bandmf := cfg
	bandmf.Policy.DP.Noise, bandmf.Policy.DP.Band, bandmf.MaxUpdatesPerUser = policy.NoiseBandedSqrt, 4, 1
	for name, c := range map[string]Config{"continuous": cont, "bandmf": bandmf} {
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "linear contextual bandit") {
			t.Errorf("%s: %v", name, err)
		}
	}
	store := agenttest.OpenStore(t, t.TempDir())
	defer store.Close()
	if _, err := New(cfg, store, Options{Replica: &Replica{}}); err == nil || !strings.Contains(err.Error(), "cluster") {
		t.Errorf("replica: %v", err)
	}
}
