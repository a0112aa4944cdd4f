package primorl

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"dprl/sims"
)

// heldOutMSE is the worst model's mean squared error of the means on test.
func heldOutMSE(e *Ensemble, p []float64, test []Trajectory) float64 {
	var worst float64
	mean, lv := make([]float64, 4*200), make([]float64, 4*200)
	for m := range e.Models() {
		var se, cnt float64
		for _, d := range test {
			e.Predict(p, m, d.X, d.N, mean, lv)
			for i, y := range d.Y {
				se += (y - mean[i]) * (y - mean[i])
				cnt++
			}
		}
		worst = max(worst, se/cnt)
	}
	return worst
}

// TestTrainPlain: MOPO's model training (Adam on all transitions) learns
// Pendulum's dynamics: the worst model's held-out error falls tenfold.
func TestTrainPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	train, test := pendulumData(rng, 10), pendulumData(rng, 3)
	e, p := pendulumEnsemble(t, rng)
	before := heldOutMSE(e, p, test)
	var last, total int
	epochs := 20
	if raceEnabled {
		epochs = 2
	}
	if err := TrainPlain(context.Background(), e, p, train, PlainConfig{Epochs: epochs, Batch: 64, LR: 3e-3}, rng, func(d, n int) { last, total = d, n }); err != nil {
		t.Fatal(err)
	}
	after := heldOutMSE(e, p, test)
	t.Logf("held-out mse of the worst model: %.4g -> %.4g", before, after)
	if !raceEnabled && !(after < before/10) {
		t.Fatalf("mse %v -> %v, want a tenfold fall", before, after)
	}
	if steps := 3 * epochs * ((10*200 + 63) / 64); last != total || total != steps {
		t.Fatalf("progress ended at %d of %d, want %d of %d", last, total, steps, steps)
	}
	for _, c := range []PlainConfig{{Epochs: 0, Batch: 1, LR: 1}, {Epochs: 1, Batch: 0, LR: 1}, {Epochs: 1, Batch: 1, LR: math.NaN()}} {
		if err := TrainPlain(context.Background(), e, p, train, c, rng, nil); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if err := TrainPlain(context.Background(), e, p, nil, DefaultPlainConfig(), rng, nil); err == nil {
		t.Error("no data accepted")
	}
}

// TestModelEnvStartStates: with start states, Reset draws one of them
// (each, over many resets); a ragged set is refused.
func TestModelEnvStartStates(t *testing.T) {
	e, p := constEnsemble(t, [2][4]float64{})
	sc, _ := PublicScales("pendulum")
	m, err := NewModelEnv(sims.NewPendulum(), e, p, sc, MPD, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	states := []float64{1, 0, 0.5, 0, 1, -2}
	if err := m.SetStartStates(states[:4]); err == nil {
		t.Fatal("4 values for 3-dimensional observations accepted")
	}
	if err := m.SetStartStates(states); err != nil {
		t.Fatal(err)
	}
	seen := map[float64]int{}
	obs := make([]float64, 3)
	rng := rand.New(rand.NewPCG(1, 1))
	for range 200 {
		m.Reset(rng, obs)
		if !(obs[2] == 0.5 && obs[0] == 1) && !(obs[2] == -2 && obs[1] == 1) {
			t.Fatalf("start %v is not a given state", obs)
		}
		seen[obs[2]]++
	}
	if seen[0.5] < 70 || seen[-2] < 70 {
		t.Fatalf("starts drawn %v, want both about 100 times", seen)
	}
}

// TestLoggedReservoir: the reservoir keeps at most its capacity, and every
// offered transition is kept with the same probability (the kept share of
// the first and second halves of 1,000 offers, over 200 runs, within 10%).
func TestLoggedReservoir(t *testing.T) {
	var firstHalf, kept int
	for run := range 200 {
		l := newLoggedTransitions(1, 1, 50, rand.New(rand.NewPCG(uint64(run), 7)))
		for i := range 1000 {
			l.add([]float64{float64(i)}, []float64{0}, 0, []float64{0}, false)
		}
		if l.buf.Len() != 50 {
			t.Fatalf("%d kept, want 50", l.buf.Len())
		}
		for _, s := range l.buf.States() {
			kept++
			if s < 500 {
				firstHalf++
			}
		}
	}
	if share := float64(firstHalf) / float64(kept); math.Abs(share-0.5) > 0.05 {
		t.Fatalf("first half's share of kept transitions %.3f, want 0.5", share)
	}
}
