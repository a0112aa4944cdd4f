package experiment

import (
	"context"
	"errors"
	"math"
	"reflect"
	"testing"
)

func smallLogLinear() LogLinear {
	return LogLinear{Env: "riverswim", P: 0.6, Episodes: 30, Seeds: 2, Seed: 1, Epsilons: []float64{5}, Delta: 1e-5, Regions: []string{"l2", "kl"}, Alpha: 1, K: 1, BaselineLR: 0.1, FisherRidge: 1e-3}
}

func TestLogLinearValidate(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(*LogLinear)
		fields []string
	}{
		{"ok", func(*LogLinear) {}, nil},
		{"episodes", func(c *LogLinear) { c.Episodes = 0 }, []string{"Episodes"}},
		{"seeds and delta", func(c *LogLinear) { c.Seeds, c.Delta = 0, 1 }, []string{"Seeds", "Delta", "Epsilons"}},
		{"nan init", func(c *LogLinear) { c.InitRight = math.NaN() }, []string{"InitRight"}},
		{"alpha", func(c *LogLinear) { c.Alpha = math.Inf(1) }, []string{"Alpha"}},
		{"clip", func(c *LogLinear) { c.Clip = -1 }, []string{"Clip"}},
		{"k", func(c *LogLinear) { c.K = 0 }, []string{"K"}},
		{"eta", func(c *LogLinear) { c.Eta = math.NaN() }, []string{"Eta"}},
		{"workers", func(c *LogLinear) { c.Workers = -1 }, []string{"Workers"}},
		{"ridge and lr", func(c *LogLinear) { c.FisherRidge, c.BaselineLR = -1, math.Inf(1) }, []string{"FisherRidge", "BaselineLR"}},
		{"region", func(c *LogLinear) { c.Regions = []string{"l1"} }, []string{"Regions"}},
		{"epsilon", func(c *LogLinear) { c.Epsilons = []float64{-1} }, []string{"Epsilons"}},
		{"p", func(c *LogLinear) { c.P = 0 }, []string{"P"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := smallLogLinear()
			tc.edit(&c)
			err := c.Validate()
			got := fieldsOf(err)
			if !reflect.DeepEqual(got, tc.fields) {
				t.Fatalf("Validate() fields = %v, want %v (%v)", got, tc.fields, err)
			}
			if err != nil {
				if _, rerr := RunLogLinear(context.Background(), c, nil); rerr == nil {
					t.Fatal("RunLogLinear accepted an invalid configuration")
				}
			}
		})
	}
}

// TestRunLogLinearDeterministic: the result does not depend on the number
// of workers, the curve ends at the mean final regret and the trace has one
// point per seed and curve point.
func TestRunLogLinearDeterministic(t *testing.T) {
	c := smallLogLinear()
	c.Workers, c.Trace = 1, true
	a, err := RunLogLinear(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Workers = 3
	b, err := RunLogLinear(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.Seconds, b.Seconds = 0, 0
	if !reflect.DeepEqual(a, b) {
		t.Fatal("result depends on the number of workers")
	}
	if len(a.Runs) != 2 || a.Runs[0].Region != "l2" || a.Runs[1].Region != "kl" {
		t.Fatalf("runs %+v", a.Runs)
	}
	for _, run := range a.Runs {
		if len(run.Mean) != 30 || run.CurveEpisodes[29] != 30 || len(run.Final) != 2 || !reflect.DeepEqual(run.Seeds, []uint64{1, 2}) {
			t.Fatalf("run %+v", run)
		}
		mean := (run.Final[0] + run.Final[1]) / 2
		if math.Abs(run.Mean[29]-mean) > 1e-9*math.Max(1, mean) {
			t.Fatalf("curve ends at %v, mean final regret %v", run.Mean[29], mean)
		}
		if !(run.Epsilon <= 5) || run.Epsilon < 4.9 {
			t.Fatalf("epsilon %v, want at most and near 5", run.Epsilon)
		}
	}
	if len(a.Trace) != 2*2*30 {
		t.Fatalf("%d trace points, want %d", len(a.Trace), 2*2*30)
	}
}

// TestRunLogLinearCancel: a cancelled context stops the experiment with its
// cause.
func TestRunLogLinearCancel(t *testing.T) {
	c := smallLogLinear()
	c.Episodes = 100000
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("stop")
	cancel(stop)
	if _, err := RunLogLinear(ctx, c, nil); !errors.Is(err, stop) {
		t.Fatalf("err = %v, want %v", err, stop)
	}
}

func TestCurvePoints(t *testing.T) {
	if got := curvePoints(3); !reflect.DeepEqual(got, []int{1, 2, 3}) {
		t.Fatalf("curvePoints(3) = %v", got)
	}
	got := curvePoints(2500)
	if len(got) != CurvePoints || got[0] != 2 || got[len(got)-1] != 2500 {
		t.Fatalf("curvePoints(2500): len %d, first %d, last %d", len(got), got[0], got[len(got)-1])
	}
}
