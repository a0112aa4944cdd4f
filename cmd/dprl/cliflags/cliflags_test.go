package cliflags

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"dprl/internal/fielderr"
)

type inner struct {
	Rate  float64
	Every time.Duration
}

type config struct {
	Name  string
	N     int
	Sizes []int
	Inner inner
	Other float64
}

// TestFlagsRecordFields: each flag records the field it fills, nested
// fields with their struct (the first flag in it), names given with Name
// too; the configuration's errors are rendered with the flags.
func TestFlagsRecordFields(t *testing.T) {
	var c config
	var outside string
	fl := New(pflag.NewFlagSet("t", pflag.ContinueOnError), &c)
	fl.StringVar(&c.Name, "name", "", "")
	fl.IntVar(&c.N, "count", 0, "")
	fl.IntSliceVar(&c.Sizes, "sizes", nil, "")
	fl.Float64Var(&c.Inner.Rate, "rate", 0, "")
	fl.DurationVar(&c.Inner.Every, "every", 0, "")
	fl.StringVar(&outside, "mode", "", "")
	fl.Name("Mode", "mode")
	for _, tc := range []struct{ field, flag string }{
		{"Name", "--name"}, {"N", "--count"}, {"Sizes", "--sizes"}, {"Inner", "--rate"}, {"Rate", "--rate"},
		{"Every", "--every"}, {"Mode", "--mode"}, {"Other", ""},
	} {
		if got := fl.Flag(tc.field); got != tc.flag {
			t.Errorf("Flag(%s) = %q, want %q", tc.field, got, tc.flag)
		}
	}
	if err := fl.Parse([]string{"--count", "3", "--every", "2s"}); err != nil {
		t.Fatal(err)
	}
	if c.N != 3 || c.Inner.Every != 2*time.Second {
		t.Errorf("parsed %+v", c)
	}
	for field, want := range map[string]bool{"N": true, "Every": true, "Name": false, "Other": false} {
		if fl.FieldChanged(field) != want {
			t.Errorf("FieldChanged(%s) = %v, want %v", field, !want, want)
		}
	}
	err := fielderr.Fields{"N", "Other"}.Errorf("{N} 3 with {Other}: want less")
	if got := fl.Rename(err).Error(); got != "--count 3 with Other: want less" || !errors.Is(fl.Rename(err), err) {
		t.Errorf("Rename: %q", got)
	}
}

// TestFlagsOrdered: messages follow the order the flags were defined in.
func TestFlagsOrdered(t *testing.T) {
	var c struct {
		Env      string
		Z        float64
		K        int
		Epsilons []float64
	}
	fl := New(pflag.NewFlagSet("t", pflag.ContinueOnError), &c)
	fl.StringVar(&c.Env, "env", "", "")
	fl.Float64Var(&c.Z, "z", 0, "")
	fl.IntVar(&c.K, "K", 0, "")
	fl.Float64SliceVar(&c.Epsilons, "eps", nil, "")
	fields := fielderr.Fields{"Env", "Z", "K", "Epsilons"}
	err := errors.Join(fields.Errorf("{K} 0: want >= 1"), errors.New("other problem"), fields.Errorf("{Z} -1: want > 0"))
	got, want := fl.Ordered(err), []string{"other problem", "--z -1: want > 0", "--K 0: want >= 1"}
	if !slices.Equal(got, want) || fl.Messages(nil) != nil {
		t.Errorf("Ordered = %q, want %q", got, want)
	}
}
