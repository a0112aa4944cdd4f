package sims

import (
	"errors"
	"strings"
	"testing"

	"dprl/internal/fielderr"
)

// braced renders the fields of err as {Field}.
func braced(err error) string {
	return fielderr.Rename(err, func(f string) string { return "{" + f + "}" }).Error()
}

// TestScriptArgs: the settings of a scripted episode are checked in
// order, each error naming its fields; a state out of the finite range
// is a *NonFiniteError with a hint at InitState.
func TestScriptArgs(t *testing.T) {
	set := func(fields ...string) func(string) bool {
		return func(f string) bool { return strings.Contains(" "+strings.Join(fields, " ")+" ", " "+f+" ") }
	}
	cases := []struct {
		name string
		args ScriptArgs
		set  []string
		want string
	}{
		{"no env", ScriptArgs{}, nil, "{Env} is required (one of: cartpole"},
		{"unknown env", ScriptArgs{Env: "nope"}, nil, `{Env}: sims: unknown environment "nope"`},
		{"neither", ScriptArgs{Env: "cartpole"}, nil, "give {Actions} or {Policy} random"},
		{"both", ScriptArgs{Env: "cartpole", Actions: "0", Policy: "random"}, []string{"Actions"}, "give either {Actions} or {Policy}, not both"},
		{"bad policy", ScriptArgs{Env: "cartpole", Policy: "x"}, nil, `{Policy} "x": want random`},
		{"bad action", ScriptArgs{Env: "cartpole", Actions: "0,7"}, []string{"Actions"}, "{Actions}: step 1: space: bad action"},
		{"no steps", ScriptArgs{Env: "cartpole", Policy: "random"}, []string{"Steps"}, "{Steps} 0: want at least 1"},
		{"bad state", ScriptArgs{Env: "cartpole", Policy: "random", InitState: "[1"}, []string{"InitState"}, `{InitState} "[1": want a JSON array`},
	}
	for _, c := range cases {
		_, _, err := c.args.Config(set(c.set...))
		var fe *fielderr.Error
		if !errors.As(err, &fe) || !strings.HasPrefix(braced(err), c.want) {
			t.Errorf("%s: %v, want a field error %q", c.name, err, c.want)
		}
	}
	a := ScriptArgs{Env: "cartpole", Policy: "random", InitState: "[0, 0, 1e308, 1e308]", Steps: 2}
	env, sc, err := a.Config(set("InitState", "Steps"))
	if err != nil || sc.Steps != 2 || len(sc.InitState) != 4 {
		t.Fatalf("Config: %+v, %v", sc, err)
	}
	_, err = a.Script(env, sc)
	var nf *NonFiniteError
	if !errors.As(err, &nf) || !strings.HasSuffix(braced(err), "; try a smaller {InitState}") {
		t.Errorf("non-finite run: %v", err)
	}
	b := ScriptArgs{Env: "bandit", Policy: "random", InitState: "[1]"}
	env, sc, _ = b.Config(set("InitState"))
	if _, err := b.Script(env, sc); braced(err) != "{InitState}: environment bandit cannot set its state" {
		t.Errorf("no state setter: %v", err)
	}
	c := ScriptArgs{Env: "cartpole", Actions: "0,1,0"}
	env, sc, _ = c.Config(set("Actions"))
	if steps, err := c.Script(env, sc); err != nil || len(steps) != 3 {
		t.Errorf("scripted run: %d steps, %v", len(steps), err)
	}
}
