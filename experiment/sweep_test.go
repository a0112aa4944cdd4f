package experiment

import (
	"context"
	"reflect"
	"testing"

	"dprl/policy"
)

// TestRunSweep: points come once per z in increasing z, epsilon falls as z
// grows, and each point's eval means are those of the single runs with the
// same seeds and z.
func TestRunSweep(t *testing.T) {
	c := smallControl()
	c.Average = 0
	ep, err := policy.TrainEpisodePrivacy(c.Config, policy.TrainOptions{Users: c.Users, ContinueEpisodes: true}, 500)
	if err != nil {
		t.Fatal(err)
	}
	s := Sweep{Control: c, Zs: []float64{4, 1, 4}, Seeds: []uint64{5, 6}, Delta: 1e-5, Episode: ep}
	var seen []float64
	var offsets [][2]int
	pts, err := RunSweep(context.Background(), s, SweepHooks{
		Progress: func(point, seed int, _ float64) func(policy.Progress) {
			offsets = append(offsets, [2]int{point, seed})
			return nil
		},
		Point: func(p SweepPoint) { seen = append(seen, p.Z) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(seen, []float64{1, 4}) || len(pts) != 2 || !reflect.DeepEqual(offsets, [][2]int{{0, 0}, {0, 1}, {1, 0}, {1, 1}}) {
		t.Fatalf("points %v, hooks %v and %v", pts, seen, offsets)
	}
	if !(pts[0].Epsilon > pts[1].Epsilon) || !(pts[0].EpsilonPerSegment > pts[1].EpsilonPerSegment) {
		t.Fatalf("epsilon does not fall with z: %+v", pts)
	}
	c.Config.DP.NoiseMultiplier = 4
	r, err := RunControl(context.Background(), c, 6, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pts[1].EvalMeans[1] != r.EvalMean {
		t.Fatalf("z 4 seed 6: sweep %v, single run %v", pts[1].EvalMeans[1], r.EvalMean)
	}
	if _, err := RunSweep(context.Background(), Sweep{Control: c, Zs: []float64{0}, Seeds: []uint64{1}, Delta: 1e-5, Episode: ep}, SweepHooks{}); err == nil {
		t.Fatal("RunSweep accepted z = 0")
	}
	if err := (Sweep{Delta: 2}).Validate(); !reflect.DeepEqual(fieldsOf(err), []string{"Zs", "Seeds", "Delta"}) || err.Error() != "Zs: give at least one noise multiplier\nSeeds: give at least one seed\nDelta 2: must be in (0, 1)" {
		t.Fatalf("Validate of an empty sweep: %v", err)
	}
}
