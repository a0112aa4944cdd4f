package experiment

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

// TestTrainPlanRunSeeds: the runs use the seeds seed, seed+1, ... in order,
// each as TrainPlan.Run gives it, Done sees every run, and an error of
// Done stops the runs and is returned as it is.
func TestTrainPlanRunSeeds(t *testing.T) {
	tr := smallTrain()
	tr.Users, tr.EvalEpisodes = 8, 1
	p, err := tr.Plan()
	if err != nil {
		t.Fatal(err)
	}
	var seen []uint64
	runs, err := p.RunSeeds(context.Background(), 5, 2, SeedHooks{Done: func(r TrainResult) error { seen = append(seen, r.Seed); return nil }})
	if err != nil || len(runs) != 2 || runs[0].Seed != 5 || runs[1].Seed != 6 || !reflect.DeepEqual(seen, []uint64{5, 6}) {
		t.Fatalf("runs %d, seen %v (%v)", len(runs), seen, err)
	}
	one, err := p.Run(context.Background(), 6, nil)
	if err != nil || one.EvalMean != runs[1].EvalMean || !reflect.DeepEqual(one.Curve, runs[1].Curve) {
		t.Errorf("seed 6: RunSeeds gave %v, Run %v (%v)", runs[1].EvalMean, one.EvalMean, err)
	}
	stop, calls := errors.New("stop"), 0
	if _, err := p.RunSeeds(context.Background(), 1, 3, SeedHooks{Done: func(TrainResult) error { calls++; return stop }}); err != stop || calls != 1 {
		t.Errorf("Done's error: %v after %d runs", err, calls)
	}
}

// TestSeedRange: n consecutive seeds from seed, wrapping at 2^64; none
// for n <= 0.
func TestSeedRange(t *testing.T) {
	for _, c := range []struct {
		seed uint64
		n    int
		want []uint64
	}{
		{7, 3, []uint64{7, 8, 9}},
		{1<<64 - 1, 2, []uint64{1<<64 - 1, 0}},
		{5, 0, []uint64{}},
		{5, -1, []uint64{}},
	} {
		if got := SeedRange(c.seed, c.n); !reflect.DeepEqual(got, c.want) {
			t.Errorf("SeedRange(%d, %d) = %v, want %v", c.seed, c.n, got, c.want)
		}
	}
}
