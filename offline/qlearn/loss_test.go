package qlearn

import (
	"math"
	"testing"
)

// TestCQLLossHand: two transitions, two actions, values worked by hand.
//
// Row 0: Q = (1, 2), a = 0, r = 1, not terminal, next = (0.5, 3): y = 1 +
// 0.9 x 3 = 3.7, td = -2.7, lse = 2 + log(1 + e^-1) = 2.313262.
// Row 1: Q = (0, 0), a = 1, r = -1, terminal: y = -1, td = 1, lse = log 2.
// L = 1/2 [0.5 x 7.29 + 0.5 (2.313262 - 1) + 0.5 + 0.5 (log 2 - 0)].
func TestCQLLossHand(t *testing.T) {
	q := []float64{1, 2, 0, 0}
	next := []float64{0.5, 3, 100, 100} // row 1 is terminal: ignored
	b := Batch{Actions: []int{0, 1}, Rewards: []float64{1, -1}, Terminal: []bool{false, true}}
	dq := make([]float64, 4)
	got := CQLLoss(dq, q, next, 2, b, 0.9, 0.5)
	lse0 := 2 + math.Log(1+math.Exp(-1))
	want := 0.5 * (0.5*2.7*2.7 + 0.5*(lse0-1) + 0.5 + 0.5*math.Log(2))
	if math.Abs(got-want) > 1e-12 {
		t.Fatalf("loss %v, want %v", got, want)
	}
	p0 := math.Exp(1 - lse0) // softmax of action 0 in row 0
	wantDq := []float64{0.5 * (-2.7 + 0.5*p0 - 0.5), 0.5 * 0.5 * (1 - p0), 0.5 * 0.5 * 0.5, 0.5 * (1 + 0.25 - 0.5)}
	for i := range dq {
		if math.Abs(dq[i]-wantDq[i]) > 1e-12 {
			t.Fatalf("dq %v, want %v", dq, wantDq)
		}
	}
}

// TestLossGradients: both losses' gradients agree with central finite
// differences on a random-looking batch.
func TestLossGradients(t *testing.T) {
	const A = 3
	q := []float64{0.3, -1.2, 2.0, 0.7, 0.1, -0.4}
	g := []float64{1.5, -0.3, 0.2, -2.0, 0.4, 0.9}
	next := []float64{1, 0, -1, 0.2, 0.3, 0.1}
	b := Batch{Actions: []int{2, 0}, Rewards: []float64{0.5, -0.2}, Terminal: []bool{false, false}}
	y := []float64{0.4, 3.5} // row 1's TD error is beyond the Huber threshold
	check := func(name string, f func(x []float64) float64, x, grad []float64) {
		for i := range x {
			v := x[i]
			x[i] = v + 1e-6
			up := f(x)
			x[i] = v - 1e-6
			down := f(x)
			x[i] = v
			if fd := (up - down) / 2e-6; math.Abs(fd-grad[i]) > 1e-6 {
				t.Errorf("%s: d/dx[%d] = %v, finite difference %v", name, i, grad[i], fd)
			}
		}
	}
	dq, dg := make([]float64, 6), make([]float64, 6)
	CQLLoss(dq, q, next, A, b, 0.99, 1.3)
	check("cql", func(x []float64) float64 { return CQLLoss(make([]float64, 6), x, next, A, b, 0.99, 1.3) }, q, append([]float64(nil), dq...))
	BCQLoss(dq, dg, q, g, y, A, b, 1e-2)
	dq0, dg0 := append([]float64(nil), dq...), append([]float64(nil), dg...)
	check("bcq q", func(x []float64) float64 { return BCQLoss(make([]float64, 6), make([]float64, 6), x, g, y, A, b, 1e-2) }, q, dq0)
	check("bcq g", func(x []float64) float64 { return BCQLoss(make([]float64, 6), make([]float64, 6), q, x, y, A, b, 1e-2) }, g, dg0)
}

// TestBCQTargetsHand: the imitation filter keeps actions whose probability
// is above tau times the most probable one's, and the target network values
// the online network's best kept action.
func TestBCQTargetsHand(t *testing.T) {
	const A = 3
	// Row 0: logits (0, log 0.5, log 0.2): with tau 0.3, actions 0 and 1
	// pass (ratios 1, 0.5), 2 does not (0.2). The online Q (1, 5, 9) picks
	// action 1 among them; the target network values it 4: y = 1 + 0.5 x 4.
	// Row 1: terminal, y = r. Row 2: tau filters all but action 2 (the most
	// probable); y = 0 + 0.5 x (-7).
	gNext := []float64{0, math.Log(0.5), math.Log(0.2), 0, 0, 0, -5, -5, 0}
	qNext := []float64{1, 5, 9, 0, 0, 0, 10, 10, -1}
	tNext := []float64{2, 4, 8, 0, 0, 0, 3, 3, -7}
	b := Batch{Actions: []int{0, 1, 2}, Rewards: []float64{1, 2, 0}, Terminal: []bool{false, true, false}}
	y := make([]float64, 3)
	BCQTargets(y, qNext, tNext, gNext, A, b, 0.5, 0.3)
	want := []float64{3, 2, -3.5}
	for i := range y {
		if math.Abs(y[i]-want[i]) > 1e-12 {
			t.Fatalf("targets %v, want %v", y, want)
		}
	}
	// tau near 1 keeps the most probable action only: row 0 takes action 0.
	BCQTargets(y, qNext, tNext, gNext, A, b, 0.5, 0.99)
	if y[0] != 1+0.5*2 {
		t.Fatalf("tau 0.99: y[0] = %v, want 2", y[0])
	}
}

// TestLossPanics: a batch that does not fit the outputs is a programming
// error.
func TestLossPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"short q": func() {
			CQLLoss(make([]float64, 4), make([]float64, 3), make([]float64, 4), 2, Batch{Actions: []int{0, 1}, Rewards: []float64{0, 0}, Terminal: []bool{false, false}}, 0.9, 1)
		},
		"action range": func() {
			CQLLoss(make([]float64, 2), make([]float64, 2), make([]float64, 2), 2, Batch{Actions: []int{2}, Rewards: []float64{0}, Terminal: []bool{false}}, 0.9, 1)
		},
		"ragged batch": func() {
			BCQTargets(make([]float64, 1), make([]float64, 2), make([]float64, 2), make([]float64, 2), 2, Batch{Actions: []int{0}}, 0.9, 0.3)
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
