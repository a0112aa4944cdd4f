package flagtable

import (
	"errors"
	"slices"
	"testing"

	"dprl/internal/fielderr"
)

var table = Table{{"env", "Env", ""}, {"z", "Z", "dppg"}, {"K", "K", "dppg ppo"}, {"eps", "Epsilons", "loglinear"}}

func TestInapplicable(t *testing.T) {
	changed := func(f string) bool { return f == "z" || f == "eps" || f == "env" }
	got := table.Inapplicable(changed, "algo", "ppo")
	want := []string{"--eps does not apply to --algo ppo (only to loglinear)", "--z does not apply to --algo ppo (only to dppg)"}
	if !slices.Equal(got, want) {
		t.Fatalf("Inapplicable = %q, want %q", got, want)
	}
}

func TestOrderedRendersFields(t *testing.T) {
	fields := fielderr.Fields{"Env", "Z", "K", "Epsilons"}
	err := errors.Join(fields.Errorf("{K} 0: want >= 1"), errors.New("other problem"), fields.Errorf("{Z} -1: want > 0"))
	got := table.Ordered(err)
	want := []string{"other problem", "--z -1: want > 0", "--K 0: want >= 1"}
	if !slices.Equal(got, want) {
		t.Fatalf("Ordered = %q, want %q", got, want)
	}
	if table.Flag("Nope") != "Nope" || table.Messages(nil) != nil {
		t.Fatal("unknown field or nil error")
	}
}
