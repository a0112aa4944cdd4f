package jsonstrict

import (
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	for _, c := range []struct {
		in    string
		class Class // 0: accepted
	}{
		{`{"a": 1, "b": [true, null, "x", {"c": -1.5e3}]}`, 0},
		{`[]`, 0}, {`"s"`, 0}, {`null`, 0}, {ok, 0},
		{`{"user-epsilon": 1, "user-epsilon": 100}`, Duplicate},
		{`[{"a": {"b": 1, "b": 2}}]`, Duplicate},
		{`{"a": 1, "\u0061": 2}`, Duplicate}, // the same key escaped
		{`{"a": 1} {"b": 2}`, Syntax},
		{`{"a": 1e400}`, NonFinite},
		{"{\"a\": \"\xff\"}", Syntax},
		{`{"a": nul}`, Syntax},
		{``, Syntax}, {`{"a":}`, Syntax},
		{deep, Syntax},
	} {
		err := Check([]byte(c.in))
		var e *Error
		switch {
		case c.class == 0 && err != nil:
			t.Errorf("Check(%.40q): %v, want accepted", c.in, err)
		case c.class != 0 && (!errors.As(err, &e) || e.Class != c.class):
			t.Errorf("Check(%.40q): %v, want class %d", c.in, err, c.class)
		}
	}
}

func TestDecode(t *testing.T) {
	type cfg struct {
		Epsilon float64 `json:"epsilon"`
	}
	var v cfg
	if err := Decode([]byte(`{"epsilon": 2}`), &v); err != nil || v.Epsilon != 2 {
		t.Fatalf("Decode: %v, %+v", err, v)
	}
	for _, in := range []string{`{"epsilon": 1, "epsilon": 100}`, `{"epsilon": 1, "other": 2}`, `{"epsilon": 1} 2`} {
		if err := Decode([]byte(in), &v); err == nil {
			t.Errorf("Decode(%q) accepted", in)
		}
	}
}

func FuzzCheck(f *testing.F) {
	f.Add([]byte(`{"a": [1, {"b": null}], "c": "d"}`))
	f.Add([]byte(`{"a": 1, "a": 2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = Check(b) // must not panic, whatever the input
	})
}
