package ope_test

import (
	"fmt"
	"math/rand/v2"

	"dprl/offline/ope"
)

// A log of a two-item recommender: the logger shows item 1 with
// probability 0.8 to everyone; the candidate shows item 0 to users with
// x[0] > 0.5 and item 1 to the others. Evaluate reports the lower bound
// first, then every estimate with its labelled intervals.
func ExampleEvaluate() {
	rng := rand.New(rand.NewPCG(1, 2))
	candidate := func(dst, x []float64) {
		dst[0], dst[1] = 0, 1
		if x[0] > 0.5 {
			dst[0], dst[1] = 1, 0
		}
	}
	l := &ope.Log{Actions: 2, Policy: candidate}
	for range 5000 {
		x := []float64{rng.Float64()}
		a, p := 1, 0.8
		if rng.Float64() < 0.2 {
			a, p = 0, 0.2
		}
		click := 0.3 // item 1; item 0 suits users with large x[0]
		if a == 0 {
			click = x[0]
		}
		r := 0.0
		if rng.Float64() < click {
			r = 1
		}
		l.Decisions = append(l.Decisions, ope.Decision{X: x, Action: a, Reward: r, Prob: p})
	}
	rep, err := ope.Evaluate(l, ope.Options{Rand: rng, WeightBound: 5, Bootstrap: 500})
	if err != nil {
		fmt.Println(err)
		return
	}
	// True value: 0.5 * 0.3 + 0.5 * 0.75 = 0.525.
	fmt.Printf("non-private: %v\n", rep.NonPrivate)
	fmt.Printf("lower bound (%s, %.2f): %.3f\n", rep.LowerBound.Method, rep.LowerBound.Level, rep.LowerBound.Value)
	for _, e := range rep.Estimates {
		fmt.Printf("%-9s %.3f", e.Estimator, e.Value)
		for _, iv := range e.Intervals {
			fmt.Printf("  %s [%.3f, %.3f]", iv.Method, iv.Lo, iv.Hi)
		}
		fmt.Println()
	}
	fmt.Printf("effective sample size %.0f of %d\n", rep.ESS, rep.N)
	// Output:
	// non-private: true
	// lower bound (hcope-lower-bound, 0.95): 0.466
	// EL        0.534  empirical-likelihood [0.512, 0.557]
	// IPS       0.527  wald [0.490, 0.565]  percentile-bootstrap [0.493, 0.563]  empirical-bernstein [0.461, 0.594]
	// SNIPS     0.533  wald [0.509, 0.557]  percentile-bootstrap [0.508, 0.557]
	// DR        0.540  wald [0.519, 0.561]  percentile-bootstrap [0.515, 0.560]
	// DRos      0.540  wald [0.519, 0.561]  percentile-bootstrap [0.519, 0.558]
	// Switch-DR 0.540  wald [0.519, 0.561]  percentile-bootstrap [0.521, 0.559]
	// effective sample size 1594 of 5000
}
