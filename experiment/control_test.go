package experiment

import (
	"context"
	"math"
	"reflect"
	"testing"

	"dprl/policy"
	"dprl/sims"
)

func smallControl() Control {
	cfg := policy.DefaultControlConfig()
	cfg.DP.UsersPerUpdate = 8
	return Control{NewEnv: func() sims.Env { return sims.NewCartPole() }, Config: cfg, Users: 32, EvalEpisodes: 3, Average: 0.5}
}

// TestRunControlSeeded: a run is a function of its seed (the same seed
// gives the same run whatever the number of workers, another seed another
// run), and Average evaluates both the average and the last iterate.
func TestRunControlSeeded(t *testing.T) {
	c := smallControl()
	c.Workers = 1
	a, err := RunControl(context.Background(), c, 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Workers = 2
	b, err := RunControl(context.Background(), c, 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.EvalMean != b.EvalMean || a.EvalStd != b.EvalStd || *a.LastMean != *b.LastMean || !reflect.DeepEqual(a.Curve, b.Curve) {
		t.Fatalf("seed 7 differs with 2 workers: %+v against %+v", a, b)
	}
	if a.Users != 32 || a.Updates != 4 || a.Steps <= 0 || a.LastMean == nil || a.LastStd == nil {
		t.Fatalf("run %+v", a)
	}
	other, err := RunControl(context.Background(), c, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	if other.EvalMean == a.EvalMean && reflect.DeepEqual(other.Curve, a.Curve) {
		t.Fatal("seeds 7 and 8 gave the same run")
	}
}

func TestControlValidate(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(*Control)
		fields []string
	}{
		{"ok", func(*Control) {}, nil},
		{"env", func(c *Control) { c.NewEnv = nil }, []string{"NewEnv"}},
		{"users and workers", func(c *Control) { c.Users, c.Workers = 0, -1 }, []string{"Users", "Workers"}},
		{"eval", func(c *Control) { c.EvalEpisodes = 0 }, []string{"EvalEpisodes"}},
		{"average", func(c *Control) { c.Average = 1 }, []string{"Average"}},
		{"nan average", func(c *Control) { c.Average = math.NaN() }, []string{"Average"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := smallControl()
			tc.edit(&c)
			err := c.Validate()
			got := fieldsOf(err)
			if !reflect.DeepEqual(got, tc.fields) {
				t.Fatalf("fields %v, want %v (%v)", got, tc.fields, err)
			}
			if err != nil {
				if _, err := RunControl(context.Background(), c, 1, nil); err == nil {
					t.Fatal("RunControl accepted an invalid configuration")
				}
			}
		})
	}
	c := smallControl()
	c.Config.DP.UsersPerUpdate = 0
	if c.Validate() == nil {
		t.Fatal("Validate accepted K = 0")
	}
}

func TestMeanStdAndCurve(t *testing.T) {
	if m, s := MeanStd([]float64{1, 3}); m != 2 || s != 1 {
		t.Fatalf("MeanStd(1, 3) = %v, %v", m, s)
	}
	curves := [][]policy.CurvePoint{
		{{Users: 8, Update: 1, Mean: 1}, {Users: 16, Update: 2, Mean: 5}},
		{{Users: 8, Update: 1, Mean: 3}},
	}
	want := []policy.CurvePoint{{Users: 8, Update: 1, Mean: 2, Std: 1}}
	if got := MeanCurve(curves); !reflect.DeepEqual(got, want) {
		t.Fatalf("MeanCurve = %v, want %v", got, want)
	}
	if MeanCurve(nil) != nil {
		t.Fatal("MeanCurve(nil) != nil")
	}
}
