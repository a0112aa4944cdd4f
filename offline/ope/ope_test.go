package ope

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"dprl/sims"
)

// world is the bandit simulator (exact click probabilities) with an
// epsilon-greedy logger around the best fixed item and a personalised
// epsilon-greedy target around each user's best item: both known exactly,
// so the target's true value is known up to the Monte Carlo error of the
// held-out users (about 5e-4 with 200,000 users, far below any interval
// width here).
type world struct {
	env       *sims.Bandit
	A, d      int
	bestFixed int
	epsLog    float64
	epsTarget float64
	truth     float64
	q, pi, mu []float64
	x         []float64
}

func newWorld(t testing.TB) *world {
	t.Helper()
	env, err := sims.NewBandit(sims.DefaultBanditConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg := env.Config()
	w := &world{env: env, A: cfg.Items, d: cfg.Dim(), epsLog: 0.3, epsTarget: 0.1}
	users, err := env.HeldOut(200_000, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	w.bestFixed = users.Baselines().BestArm
	w.truth = users.Value(w.target)
	w.q, w.pi, w.mu, w.x = make([]float64, w.A), make([]float64, w.A), make([]float64, w.A), make([]float64, w.d)
	return w
}

// greedy writes the epsilon-greedy distribution around item g into dst.
func greedy(dst []float64, g int, eps float64) {
	for a := range dst {
		dst[a] = eps / float64(len(dst))
	}
	dst[g] += 1 - eps
}

// target is the personalised policy: epsilon-greedy around argmax_a
// P(click | x, a).
func (w *world) target(dst, x []float64) {
	q := make([]float64, w.A)
	w.env.ClickProbsFor(q, x)
	best := 0
	for a, v := range q {
		if v > q[best] {
			best = a
		}
	}
	greedy(dst, best, w.epsTarget)
}

// weightBound is the public bound max pi / min mu.
func (w *world) weightBound() float64 {
	return (1 - w.epsTarget + w.epsTarget/float64(w.A)) / (w.epsLog / float64(w.A))
}

// log draws n decisions logged by the epsilon-greedy logger.
func (w *world) log(n int, rng *rand.Rand) *Log {
	l := &Log{Actions: w.A, Policy: w.target, Decisions: make([]Decision, n)}
	for i := range l.Decisions {
		x := make([]float64, w.d)
		w.env.DrawUser(rng, x)
		w.env.ClickProbsFor(w.q, x)
		greedy(w.mu, w.bestFixed, w.epsLog)
		a, u := 0, rng.Float64()
		for acc := w.mu[0]; u >= acc && a < w.A-1; {
			a++
			acc += w.mu[a]
		}
		r := 0.0
		if rng.Float64() < w.q[a] {
			r = 1
		}
		l.Decisions[i] = Decision{X: x, Action: a, Reward: r, Prob: w.mu[a]}
	}
	return l
}

// TestCoverage measures, over 300 logs at n = 500 and 2,000, the coverage
// and mean width of the Wald, percentile-bootstrap and empirical-Bernstein
// intervals, how often the lower bound is at or below the true value, and
// the mean of IPS and DR against the true value (unbiasedness).
func TestCoverage(t *testing.T) {
	w := newWorld(t)
	t.Logf("true value %.4f, weight bound %.2f", w.truth, w.weightBound())
	reps, sizes := 300.0, []int{500, 2000}
	if raceEnabled || testing.Short() {
		// The race detector slows the estimators fivefold: fewer logs, n =
		// 500 only (the floors below still hold on these seeds).
		reps, sizes = 100, []int{500}
	}
	for _, n := range sizes {
		t.Run(fmt.Sprint("n", n), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(n), 7))
			opt := Options{WeightBound: w.weightBound(), Bootstrap: 200, Rand: rng}
			type key struct{ est, method string }
			cover, width := map[key]float64{}, map[key]float64{}
			sum, sum2 := map[string]float64{}, map[string]float64{}
			lbOK, lbSum := 0, 0.0
			for range int(reps) {
				l := w.log(n, rng)
				p, o, err := start(l, opt)
				if err != nil {
					t.Fatal(err)
				}
				ests := []Estimate{ips(p, o), snips(p, o)}
				e, err := dr(p, o)
				if err != nil {
					t.Fatal(err)
				}
				noBoot := o
				noBoot.Bootstrap = -1 // DRos, Switch-DR: Wald only, to keep the test fast
				e2, err := dros(p, noBoot)
				if err != nil {
					t.Fatal(err)
				}
				e3, err := switchDR(p, noBoot)
				if err != nil {
					t.Fatal(err)
				}
				e4, err := el(p, o)
				if err != nil {
					t.Fatal(err)
				}
				ests = append(ests, e, e2, e3, e4)
				for _, e := range ests {
					sum[e.Estimator] += e.Value
					sum2[e.Estimator] += e.Value * e.Value
					for _, iv := range e.Intervals {
						k := key{e.Estimator, iv.Method}
						if iv.Lo <= w.truth && w.truth <= iv.Hi {
							cover[k]++
						}
						width[k] += iv.Width()
					}
				}
				b, err := lowerBound(p, o)
				if err != nil {
					t.Fatal(err)
				}
				if b.Value <= w.truth {
					lbOK++
				}
				lbSum += b.Value
			}
			for _, est := range []string{EstIPS, EstSNIPS, EstDR, EstDRos, EstSwitchDR, EstEL} {
				for _, m := range []string{MethodWald, MethodBootstrap, MethodBernstein, MethodEL} {
					k := key{est, m}
					if _, ok := width[k]; !ok {
						continue
					}
					t.Logf("n=%d %-5s %-21s coverage %.3f mean width %.4f", n, est, m, cover[k]/reps, width[k]/reps)
				}
			}
			t.Logf("n=%d lower bound <= truth in %.3f, mean bound %.4f (truth %.4f)", n, float64(lbOK)/reps, lbSum/reps, w.truth)
			// (i) unbiasedness of IPS and DR: the mean over reps is within 4
			// standard errors of the truth (plus the truth's own MC error).
			// (0) the recommended interval: empirical likelihood covers at
			// >= 0.93 and is at most 1.5 times as wide as the oracle Wald
			// interval of its estimate (2 z sd, sd over the logs).
			{
				m := sum[EstEL] / reps
				sd := math.Sqrt(max(0, sum2[EstEL]/reps-m*m))
				oracle := 2 * zQuantile(0.95) * sd
				k := key{EstEL, MethodEL}
				t.Logf("n=%d EL coverage %.3f, width %.4f = %.2f x the oracle's %.4f", n, cover[k]/reps, width[k]/reps, width[k]/reps/oracle, oracle)
				if c := cover[k] / reps; c < 0.93 {
					t.Errorf("EL coverage %.3f, want >= 0.93", c)
				}
				if r := width[k] / reps / oracle; r > 1.5 {
					t.Errorf("EL width %.2f x the oracle's, want <= 1.5", r)
				}
			}
			for _, est := range []string{EstIPS, EstDR} {
				m := sum[est] / reps
				sd := math.Sqrt(max(0, sum2[est]/reps-m*m))
				se := sd / math.Sqrt(reps)
				t.Logf("n=%d %s mean %.4f sd %.4f bias %+.4f (se %.4f)", n, est, m, sd, m-w.truth, se)
				if math.Abs(m-w.truth) > 4*se+2e-3 {
					t.Errorf("%s mean %.4f over %.0f logs, truth %.4f: more than 4 se (%.4f) away", est, m, reps, w.truth, se)
				}
			}
			// (ii) coverage floors.
			floors := []struct {
				k   key
				min float64
			}{
				{key{EstIPS, MethodBernstein}, 0.95},
				{key{EstIPS, MethodWald}, 0.80}, {key{EstDR, MethodWald}, 0.80}, {key{EstSNIPS, MethodWald}, 0.80},
				{key{EstIPS, MethodBootstrap}, 0.80}, {key{EstDR, MethodBootstrap}, 0.80}, {key{EstSNIPS, MethodBootstrap}, 0.80},
			}
			for _, f := range floors {
				if c := cover[f.k] / reps; c < f.min {
					t.Errorf("%s %s coverage %.3f, want >= %.2f", f.k.est, f.k.method, c, f.min)
				}
			}
			// (iii) the lower bound is valid.
			if c := float64(lbOK) / reps; c < 0.95 {
				t.Errorf("lower bound <= truth in %.3f of logs, want >= 0.95", c)
			}
			// DR's reward model must earn its keep: narrower than IPS.
			if width[key{EstDR, MethodWald}] >= width[key{EstIPS, MethodWald}] {
				t.Errorf("DR Wald width %.4f not below IPS's %.4f: the reward model does not help", width[key{EstDR, MethodWald}]/reps, width[key{EstIPS, MethodWald}]/reps)
			}
		})
	}
}

// TestBadInput checks that degenerate logs and options are refused with a
// clear error naming the decision and the problem.
func TestBadInput(t *testing.T) {
	uniform := func(dst, _ []float64) {
		for a := range dst {
			dst[a] = 1 / float64(len(dst))
		}
	}
	notDist := func(dst, _ []float64) {
		for a := range dst {
			dst[a] = 0.4
		}
	}
	negative := func(dst, _ []float64) {
		dst[0], dst[1] = 1.5, -0.5
	}
	ok := Decision{X: []float64{1, 0}, Action: 1, Reward: 1, Prob: 0.5, Target: 0.5}
	with := func(f func(*Decision)) []Decision {
		d := ok
		f(&d)
		return []Decision{ok, d}
	}
	rng := rand.New(rand.NewPCG(1, 1))
	cases := []struct {
		name string
		log  Log
		opt  Options
		want string
	}{
		{"empty log", Log{Actions: 2}, Options{}, "empty log"},
		{"no actions", Log{Decisions: []Decision{ok}}, Options{}, "Actions 0"},
		{"p = 0", Log{Actions: 2, Decisions: with(func(d *Decision) { d.Prob = 0 })}, Options{}, "decision 1: logging probability 0"},
		{"p > 1", Log{Actions: 2, Decisions: with(func(d *Decision) { d.Prob = 1.2 })}, Options{}, "logging probability 1.2"},
		{"p NaN", Log{Actions: 2, Decisions: with(func(d *Decision) { d.Prob = math.NaN() })}, Options{}, "logging probability NaN"},
		{"NaN reward", Log{Actions: 2, Decisions: with(func(d *Decision) { d.Reward = math.NaN() })}, Options{}, "reward NaN"},
		{"infinite reward", Log{Actions: 2, Decisions: with(func(d *Decision) { d.Reward = math.Inf(1) })}, Options{}, "reward +Inf"},
		{"reward out of range", Log{Actions: 2, Decisions: with(func(d *Decision) { d.Reward = 2 })}, Options{}, "outside the declared range"},
		{"target > 1", Log{Actions: 2, Decisions: with(func(d *Decision) { d.Target = 1.5 })}, Options{}, "target probability 1.5"},
		{"target not a distribution", Log{Actions: 2, Policy: notDist, Decisions: []Decision{ok}}, Options{}, "sum to 0.8"},
		{"target negative", Log{Actions: 2, Policy: negative, Decisions: []Decision{ok}}, Options{}, "pi(0 | x) = 1.5"},
		{"target disagrees with policy", Log{Actions: 2, Policy: uniform, Decisions: with(func(d *Decision) { d.Target = 0.9 })}, Options{}, "disagrees"},
		{"action out of range", Log{Actions: 2, Decisions: with(func(d *Decision) { d.Action = 2 })}, Options{}, "action 2 outside [0, 2)"},
		{"ragged context", Log{Actions: 2, Decisions: with(func(d *Decision) { d.X = []float64{1} })}, Options{}, "context length 1, want 2"},
		{"NaN context", Log{Actions: 2, Decisions: with(func(d *Decision) { d.X = []float64{1, math.NaN()} })}, Options{}, "context[1] = NaN"},
		{"no rng", Log{Actions: 2, Decisions: []Decision{ok}}, Options{Rand: nil}, "Rand is required"},
		{"bad level", Log{Actions: 2, Decisions: []Decision{ok}}, Options{Level: 1}, "Level 1"},
		{"bad reward range", Log{Actions: 2, Decisions: []Decision{ok}}, Options{RewardMin: 1, RewardMax: 1}, "reward range"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name != "no rng" {
				c.opt.Rand = rng
			}
			_, err := IPS(&c.log, c.opt)
			if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("IPS error %v, want ErrInput containing %q", err, c.want)
			}
			if _, err := Evaluate(&c.log, c.opt); !errors.Is(err, ErrInput) {
				t.Fatalf("Evaluate error %v, want ErrInput", err)
			}
		})
	}
	t.Run("DR without policy", func(t *testing.T) {
		_, err := DR(&Log{Actions: 2, Decisions: []Decision{ok, ok}}, Options{Rand: rng})
		if !errors.Is(err, ErrNoPolicy) {
			t.Fatalf("DR error %v, want ErrNoPolicy", err)
		}
	})
	t.Run("lower bound on too few decisions", func(t *testing.T) {
		_, err := LowerBound(&Log{Actions: 2, Decisions: []Decision{ok, ok}}, Options{Rand: rng})
		if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "too few") {
			t.Fatalf("LowerBound error %v, want too few", err)
		}
	})
}
