package policy

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestObsScaleEquivalence checks that ObsScale is applied to every input of
// both networks: a learner and an actor with ObsScale s on observations x
// behave exactly as unscaled ones on s*x.
func TestObsScaleEquivalence(t *testing.T) {
	for _, spec := range []Spec{cartPole, {ObsDim: 4, Kind: ActionContinuous, ActionDim: 2}} {
		t.Run(spec.Kind.String(), func(t *testing.T) {
			rng := testRNG(t)
			scale := []float64{1, 0.5, 10, -2}
			plain := smallConfig()
			scaled := smallConfig()
			scaled.PPO.ObsScale = scale
			lp, ls := mustLearner(t, spec, plain), mustLearner(t, spec, scaled)
			theta := make([]float64, lp.NumParams())
			lp.Init(theta, rng)
			tr := synthTrajectory(t, ls, theta, 10, rng)
			pre := *tr
			pre.Obs, pre.FinalObs = slices.Clone(tr.Obs), slices.Clone(tr.FinalObs)
			scaleObs(pre.Obs, scale)
			scaleObs(pre.FinalObs, scale)

			// Actors: same log-probabilities for the same draws.
			ap, _ := NewActorFor(spec, plain.PPO)
			as, err := NewActorFor(spec, scaled.PPO)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 10 {
				o, po := tr.Obs[i*4:(i+1)*4], pre.Obs[i*4:(i+1)*4]
				if spec.Kind == ActionDiscrete {
					a1, l1 := as.ActDiscrete(rand.New(rand.NewPCG(1, uint64(i))), theta, o)
					a2, l2 := ap.ActDiscrete(rand.New(rand.NewPCG(1, uint64(i))), theta, po)
					if a1 != a2 || l1 != l2 {
						t.Fatalf("step %d: scaled actor (%d, %v), pre-scaled (%d, %v)", i, a1, l1, a2, l2)
					}
				} else {
					d1, d2 := make([]float64, 2), make([]float64, 2)
					l1 := as.ActContinuous(d1, rand.New(rand.NewPCG(1, uint64(i))), theta, o)
					l2 := ap.ActContinuous(d2, rand.New(rand.NewPCG(1, uint64(i))), theta, po)
					if !slices.Equal(d1, d2) || l1 != l2 {
						t.Fatalf("step %d: scaled actor (%v, %v), pre-scaled (%v, %v)", i, d1, l1, d2, l2)
					}
				}
			}
			if slices.Equal(pre.Obs, tr.Obs) {
				t.Fatal("scaling changed nothing")
			}

			g1, g2 := make([]float64, lp.NumParams()), make([]float64, lp.NumParams())
			if err := ls.LocalUpdate(g1, theta, tr, rand.New(rand.NewPCG(3, 3))); err != nil {
				t.Fatal(err)
			}
			if err := lp.LocalUpdate(g2, theta, &pre, rand.New(rand.NewPCG(3, 3))); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(g1, g2) {
				t.Fatal("local update with ObsScale differs from the unscaled update on scaled observations")
			}
		})
	}
	if _, err := NewLearner(cartPole, func() Config { c := smallConfig(); c.PPO.ObsScale = []float64{1, 2}; return c }()); err == nil {
		t.Error("obs scale of the wrong length accepted")
	}
	c := smallConfig()
	c.PPO.ObsScale = []float64{1, 0, 1, 1}
	if err := c.Validate(); err == nil {
		t.Error("zero obs scale accepted")
	}
}

// TestValueScaleLoss checks the value term of the loss with ValueScale c:
// c_v 0.5 (net_v(s) - R/c)^2, and that GAE uses V = c net_v.
func TestValueScaleLoss(t *testing.T) {
	rng := testRNG(t)
	cfg := smallConfig()
	cfg.PPO.ValueScale = 4
	cfg.PPO.NormalizeAdvantages = false
	l := mustLearner(t, cartPole, cfg)
	theta := make([]float64, l.NumParams())
	l.Init(theta, rng)
	tr := synthTrajectory(t, l, theta, 3, rng)
	l.adv[1], l.ret[1] = 0.7, -2
	l.gather(tr, []int{1})
	got := l.lossGrad(make([]float64, l.NumParams()), theta, 1)
	logits, v := make([]float64, 2), make([]float64, 1)
	l.actor.Forward(logits, theta[:l.nActor], tr.Obs[4:8])
	l.critic.Forward(v, theta[l.nPi:], tr.Obs[4:8])
	h := Categorical{N: 2}.Entropy(logits)
	want := -0.7 - cfg.PPO.EntropyCoef*h + cfg.PPO.ValueCoef*0.5*(v[0]+0.5)*(v[0]+0.5)
	if math.Abs(got-want) > 1e-12 {
		t.Fatalf("loss %v, want %v", got, want)
	}

	// GAE at theta: for one terminal step with reward 0 the advantage is
	// -V(s_0) = -c net_v(s_0).
	l = mustLearner(t, cartPole, cfg)
	tr = synthTrajectory(t, l, theta, 1, rng)
	tr.Terminal = true
	tr.Rewards[0] = 0
	gu := make([]float64, l.NumParams())
	if err := l.LocalUpdate(gu, theta, tr, rng); err != nil {
		t.Fatal(err)
	}
	l.critic.Forward(v, theta[l.nPi:], tr.Obs[0:4])
	if math.Abs(l.adv[0]+4*v[0]) > 1e-12 {
		t.Fatalf("advantage %v, want -4 net_v = %v", l.adv[0], -4*v[0])
	}
	cfg.PPO.ValueScale = -1
	if cfg.Validate() == nil {
		t.Error("negative value scale accepted")
	}
}

// TestTrainDiagnostics checks the per-update diagnostics against what the
// mechanism must produce: the noise norm of each block is close to
// (z S / K) sqrt(block size), fractions are in [0, 1], clipped updates lie on
// their clipping spheres.
func TestTrainDiagnostics(t *testing.T) {
	cfg := DefaultControlConfig()
	cfg.PPO.Hidden = []int{16, 16}
	cfg.PPO.Epochs = 2
	cfg.DP.UsersPerUpdate = 8
	cfg.DP.ClipNorm = 0.1
	res, err := Train(context.Background(), cartpole, cfg, TrainOptions{Users: 48, Workers: 2, Diagnostics: true, ContinueEpisodes: true}, rand.New(rand.NewPCG(4, 4)))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Diagnostics) != res.Updates {
		t.Fatalf("%d diagnostics for %d updates", len(res.Diagnostics), res.Updates)
	}
	l := mustLearner(t, cartPole, cfg)
	nPi, nV := l.NumPolicyParams(), l.NumParams()-l.NumPolicyParams()
	std := cfg.DP.NoiseMultiplier * cfg.DP.ClipNorm / float64(cfg.DP.UsersPerUpdate)
	sPi, sV := cfg.DP.clipNorms()
	for i, d := range res.Diagnostics {
		for _, c := range []struct {
			name      string
			got, want float64
		}{{"policy noise", d.NoisePolicy, std * math.Sqrt(float64(nPi))}, {"value noise", d.NoiseValue, std * math.Sqrt(float64(nV))}} {
			if math.Abs(c.got/c.want-1) > 0.25 {
				t.Errorf("update %d: %s norm %v, want about %v", i, c.name, c.got, c.want)
			}
		}
		if d.PolicyClipped < 0 || d.PolicyClipped > 1 || d.ValueClipped < 0 || d.ValueClipped > 1 {
			t.Errorf("update %d: clipped fractions %v %v", i, d.PolicyClipped, d.ValueClipped)
		}
		if d.PolicyNorm > sPi*(1+1e-9) || d.ValueNorm > sV*(1+1e-9) || d.SignalPolicy > sPi*(1+1e-9) {
			t.Errorf("update %d: norms %v %v (signal %v) above the clipping norms %v %v", i, d.PolicyNorm, d.ValueNorm, d.SignalPolicy, sPi, sV)
		}
		if !(d.Entropy > 0 && d.Entropy <= math.Log(2)+1e-12) || d.Users != 8*(i+1) {
			t.Errorf("update %d: entropy %v, users %d", i, d.Entropy, d.Users)
		}
	}
}

// TestResetMomentsModes checks the state each MomentReset leaves for the
// next iteration's users.
func TestResetMomentsModes(t *testing.T) {
	for _, mode := range []MomentReset{ResetPaper, ResetSecond, ResetZero} {
		cfg := smallConfig()
		cfg.PPO.MomentReset = mode
		l := mustLearner(t, cartPole, cfg)
		g := randSlice(testRNG(t), l.NumParams(), 1)
		l.ResetMoments(g)
		for i, x := range g {
			var wantM, wantV float64
			switch mode {
			case ResetPaper:
				wantM, wantV = -x, x*x
			case ResetSecond:
				wantV = x * x
			}
			if l.base.m[i] != wantM || l.base.v[i] != wantV {
				t.Fatalf("mode %d, coordinate %d: m %v v %v, want %v %v", mode, i, l.base.m[i], l.base.v[i], wantM, wantV)
			}
		}
		if l.base.warm != (mode != ResetZero) {
			t.Errorf("mode %d: bias correction off = %v", mode, l.base.warm)
		}
	}
	c := smallConfig()
	c.PPO.MomentReset = 7
	if c.Validate() == nil {
		t.Error("moment reset 7 accepted")
	}
}
