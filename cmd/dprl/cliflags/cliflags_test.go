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

type mode string

type taggedInner struct {
	Every time.Duration `flag:"every" default:"5m" usage:"how often"`
}

type tagged struct {
	Name    string   `flag:"name" default:"x" usage:"the name"`
	Mode    mode     `flag:"mode" usage:"a named string"`
	N       int      `flag:"count" usage:"how many"`
	Sizes   []int    `flag:"sizes" default:"1,2" usage:"the sizes"`
	Regions []string `flag:"regions" default:"a,b" usage:"the regions"`
	Low     float64  `flag:"low" default:"NaN" usage:"a sentinel"`
	Keep    float64  `flag:"keep" usage:"the value held"`
	Inner   taggedInner
	Plain   int // no flag
	hidden  int `flag:"hidden" usage:"unexported: never a flag"`
}

// TestTaggedFields: New defines the flag of every tagged field (nested
// structs too, unexported fields never), its default the tag's parsed as
// the command line would, else the value the field holds; a list default
// is replaced, not appended to, by the command line; the flags record
// their fields.
func TestTaggedFields(t *testing.T) {
	c := tagged{Keep: 0.5}
	fl := New(pflag.NewFlagSet("t", pflag.ContinueOnError), &c)
	for name, def := range map[string]string{"name": "x", "mode": "", "count": "0", "sizes": "[1,2]", "regions": "[a,b]",
		"low": "NaN", "keep": "0.5", "every": "5m0s"} {
		if f := fl.Lookup(name); f == nil || f.DefValue != def || f.Changed {
			t.Errorf("--%s: %+v, want default %q, unchanged", name, f, def)
		}
	}
	if fl.Lookup("hidden") != nil || fl.Lookup("plain") != nil {
		t.Error("an unexported or untagged field got a flag")
	}
	if err := fl.Parse([]string{"--mode", "m", "--sizes", "3", "--regions", "c"}); err != nil {
		t.Fatal(err)
	}
	if c.Name != "x" || c.Mode != "m" || !slices.Equal(c.Sizes, []int{3}) || !slices.Equal(c.Regions, []string{"c"}) ||
		c.Inner.Every != 5*time.Minute || c.Keep != 0.5 {
		t.Errorf("parsed %+v", c)
	}
	if fl.Flag("Every") != "--every" || fl.Flag("Inner") != "--every" || !fl.FieldChanged("Mode") || fl.FieldChanged("N") {
		t.Errorf("fields: Every %q, Inner %q, Mode changed %v, N changed %v", fl.Flag("Every"), fl.Flag("Inner"), fl.FieldChanged("Mode"), fl.FieldChanged("N"))
	}
}

// TestTaggedPanics: a tagged field of a type no flag takes, or a default
// its flag rejects, is a programming error found at once.
func TestTaggedPanics(t *testing.T) {
	for name, cfg := range map[string]any{
		"type": &struct {
			C complex128 `flag:"c" usage:""`
		}{},
		"default": &struct {
			N int `flag:"n" default:"many" usage:""`
		}{},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			New(pflag.NewFlagSet("t", pflag.ContinueOnError), cfg)
		}()
	}
}
