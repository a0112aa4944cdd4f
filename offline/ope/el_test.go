package ope

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// TestELMatchesVW checks the empirical-likelihood interval and estimate
// against values computed independently by Vowpal Wabbit's estimators
// library (its cressieread.Interval and cressieread.Estimator with wmin 0,
// alpha 0.05; testdata/el_vw_reference.json, 11 logs of 15 to 3,000
// decisions, mean weights from 0.63 to 4.97, three reward ranges): every
// end and estimate agrees to 1e-9.
func TestELMatchesVW(t *testing.T) {
	b, err := os.ReadFile("testdata/el_vw_reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		W, R             []float64
		Wmax, Rmin, Rmax float64
		Lo, Hi, Estimate float64
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 10 {
		t.Fatalf("%d reference cases", len(cases))
	}
	for k, c := range cases {
		var s Moments
		meanR := 0.0
		for i, w := range c.W {
			s.add(w, c.R[i])
			meanR += c.R[i]
		}
		meanR /= s.N
		e, err := elInterval(s, meanR, 0, c.Wmax, c.Rmin, c.Rmax, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		iv := e.Intervals[0]
		for _, g := range []struct {
			name      string
			got, want float64
		}{{"lo", iv.Lo, c.Lo}, {"hi", iv.Hi, c.Hi}, {"estimate", e.Value, c.Estimate}} {
			if math.Abs(g.got-g.want) > 1e-9 {
				t.Errorf("case %d (n %d, wmax %v): %s %.12f, VW's estimators %.12f", k, len(c.W), c.Wmax, g.name, g.got, g.want)
			}
		}
	}
}

// TestELDegenerate: logs the interval cannot use give the reward range
// (vacuous but valid) or an error, never NaN.
func TestELDegenerate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for name, l := range map[string]*Log{
		"one decision":   {Actions: 2, Decisions: []Decision{{X: []float64{0}, Action: 0, Reward: 1, Prob: 0.5, Target: 1}}},
		"on-policy":      {Actions: 2, Decisions: []Decision{{X: []float64{0}, Action: 0, Reward: 1, Prob: 0.5, Target: 0.5}, {X: []float64{0}, Action: 1, Reward: 0, Prob: 0.5, Target: 0.5}}},
		"all weights 0":  {Actions: 2, Decisions: []Decision{{X: []float64{0}, Action: 0, Reward: 1, Prob: 0.5}, {X: []float64{0}, Action: 1, Reward: 0, Prob: 0.5}}},
		"identical rows": {Actions: 2, Decisions: []Decision{{X: []float64{0}, Action: 0, Reward: 1, Prob: 0.5, Target: 1}, {X: []float64{0}, Action: 0, Reward: 1, Prob: 0.5, Target: 1}}},
	} {
		e, err := EL(l, Options{Rand: rng})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		iv := e.Intervals[0]
		if math.IsNaN(e.Value) || math.IsNaN(iv.Lo) || math.IsNaN(iv.Hi) || iv.Lo < 0 || iv.Hi > 1 || iv.Lo > iv.Hi || e.Value < iv.Lo || e.Value > iv.Hi {
			t.Errorf("%s: estimate %v interval [%v, %v]", name, e.Value, iv.Lo, iv.Hi)
		}
	}
}
