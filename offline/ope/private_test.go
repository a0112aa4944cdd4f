package ope

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"dprl/ledger/accountant"
	"dprl/noise"
)

// TestPrivateCoverage measures the private empirical-likelihood
// interval's coverage and width at user-level epsilon 1 and 5 (delta
// 1e-5, one Gaussian mechanism, the analytic Gaussian accountant) on the
// bandit, against the non-private EL's: the noise's variance must be
// inside the interval (coverage holds at the nominal level), and the
// interval must still say something (narrower than the reward range at
// n = 2,000, epsilon 5).
func TestPrivateCoverage(t *testing.T) {
	w := newWorld(t)
	reps, sizes := 200, []int{500, 2000}
	if raceEnabled || testing.Short() {
		reps, sizes = 60, []int{2000}
	}
	c := w.weightBound()
	for _, eps := range []float64{1, 5} {
		z, err := accountant.Calibrate(accountant.Analytic{}, eps, 1e-5, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		sd := noise.Std(z * PrivateSensitivity)
		for _, n := range sizes {
			t.Run(fmt.Sprintf("eps%v/n%d", eps, n), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(n), uint64(eps)))
				g := noise.NewGaussian(rand.New(rand.NewPCG(uint64(n)+1, uint64(eps))))
				opt := Options{WeightBound: c, Bootstrap: -1, Rand: rng}
				covered, width, sum, sum2 := 0, 0.0, 0.0, 0.0
				for range reps {
					p, o, err := start(w.log(n, rng), opt)
					if err != nil {
						t.Fatal(err)
					}
					nm := NoisyMoments(ClippedMoments(p, c, o.RewardMin, o.RewardMax), z, g)
					e, err := PrivateEL(nm, sd, c, o.RewardMin, o.RewardMax, o.Level)
					if err != nil {
						t.Fatal(err)
					}
					iv := e.Intervals[0]
					if iv.Lo <= w.truth && w.truth <= iv.Hi {
						covered++
					}
					width += iv.Width()
					sum += e.Value
					sum2 += e.Value * e.Value
				}
				cov, wd := float64(covered)/float64(reps), width/float64(reps)
				m := sum / float64(reps)
				sdv := math.Sqrt(max(0, sum2/float64(reps)-m*m))
				oracle := 2 * zQuantile(0.95) * sdv
				t.Logf("epsilon %v n=%d z %.3f: coverage %.3f, mean width %.4f (%.2f x the oracle's %.4f), mean estimate %.4f (truth %.4f)", eps, n, z, cov, wd, wd/oracle, oracle, m, w.truth)
				if cov < 0.9 {
					t.Errorf("coverage %.3f, want >= 0.90 over %d logs", cov, reps)
				}
				if eps == 5 && n == 2000 && wd > 0.9 {
					t.Errorf("mean width %.3f at epsilon 5, n 2000: no information", wd)
				}
			})
		}
	}
}

// TestPrivateEpisodeCoverage is the private audit of whole episodes where
// the noise is neither negligible nor overwhelming: 20 steps, each step's
// ratio 1.25 (the target's 0.75 over the logger's 0.6 for the step the
// logger takes with probability 0.6) or 0.625, the episode's weight their
// product (public bound 1.25^20) and its return max(0, k - 16) for k the
// number of 1.25-steps, in [0, 20]. The true value, sum over k of
// Binomial(20, 0.75)(k) max(0, k - 16), is exact. Most returns are 0, so
// the noisy estimate often falls below the range: the noise's widening
// must be taken before the ends are clamped (it measured 0.885 at epsilon
// 1, n = 10,000 when it was taken after).
func TestPrivateEpisodeCoverage(t *testing.T) {
	const steps = 20
	truth := 0.0
	for k := range steps + 1 {
		truth += binomPMF(steps, k, 0.75) * max(0, float64(k-16))
	}
	reps := 300
	if raceEnabled || testing.Short() {
		reps = 100
	}
	n := 10000
	z, err := accountant.Calibrate(accountant.Analytic{}, 1, 1e-5, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(20, 26))
	g := noise.NewGaussian(rand.New(rand.NewPCG(11, 29)))
	opt := Options{WeightBound: math.Pow(1.25, steps), RewardMin: 0, RewardMax: steps, Bootstrap: -1, Rand: rng}
	w, r := make([]float64, n), make([]float64, n)
	covered := 0
	for range reps {
		for i := range w {
			k := 0
			for range steps {
				if rng.Float64() < 0.6 {
					k++
				}
			}
			w[i] = math.Pow(1.25, float64(k)) * math.Pow(0.625, float64(steps-k))
			r[i] = max(0, float64(k-16))
		}
		e, err := PrivateAuditRecords(w, r, opt, z, g)
		if err != nil {
			t.Fatal(err)
		}
		if iv := e.Intervals[0]; iv.Lo <= truth && truth <= iv.Hi {
			covered++
		}
	}
	cov := float64(covered) / float64(reps)
	t.Logf("truth %.4f, z %.3f, n %d: coverage %.3f over %d logs", truth, z, n, cov, reps)
	if cov < 0.92 {
		t.Errorf("coverage %.3f over %d logs, want >= 0.92", cov, reps)
	}
}

// binomPMF is the Binomial(n, p) probability of k.
func binomPMF(n, k int, p float64) float64 {
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x + 1)); return v }
	return math.Exp(lg(n) - lg(k) - lg(n-k) + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
}
