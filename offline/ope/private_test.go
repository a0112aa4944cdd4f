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
