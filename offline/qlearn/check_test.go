package qlearn

import (
	"strings"
	"testing"

	"dprl/internal/fielderr"
)

// TestLearnCheck: an unknown algorithm or unit, and a privacy setting
// given with NonPrivate, are refused naming their fields.
func TestLearnCheck(t *testing.T) {
	none := func(string) bool { return false }
	c := DefaultLearnConfig()
	if err := c.Check(none); err != nil {
		t.Fatalf("default: %v", err)
	}
	bad := func(f func(*LearnConfig)) LearnConfig { x := c; f(&x); return x }
	cases := []struct {
		name string
		c    LearnConfig
		set  func(string) bool
		want string
	}{
		{"algo", bad(func(x *LearnConfig) { x.Algo = "x" }), none, "{Algo}: qlearn: unknown algorithm"},
		{"unit", bad(func(x *LearnConfig) { x.Unit = "user" }), none, `{Unit} "user": want expert or trajectory`},
		{"non-private", bad(func(x *LearnConfig) { x.NonPrivate = true }), func(f string) bool { return f == "Sigma" || f == "P" },
			"{NonPrivate} trains without noise: {Sigma} does not apply"},
	}
	for _, tc := range cases {
		err := tc.c.Check(tc.set)
		if err == nil || !strings.HasPrefix(fielderr.Rename(err, func(f string) string { return "{" + f + "}" }).Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
