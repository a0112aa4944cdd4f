package jsonstrict

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// walk reads any value, generically (the tests' schema-free reader).
func walk(s *Scanner, depth int) error {
	if depth > 64 {
		return errors.New("too deep")
	}
	switch s.Peek() {
	case String:
		_, err := s.String()
		return err
	case Number:
		_, err := s.Float()
		return err
	case Bool:
		_, err := s.Bool()
		return err
	case Object:
		return s.Object(func([]byte) error { return walk(s, depth+1) })
	case Array:
		return s.Array(func(int) error { return walk(s, depth+1) })
	}
	if err := s.expect(Null); err != nil {
		return err
	}
	return &Error{Class: WrongType, Offset: s.pos, Msg: "want a value, got null"}
}

func scanAll(data string) error {
	var s Scanner
	s.Reset([]byte(data))
	if err := walk(&s, 0); err != nil {
		return err
	}
	return s.End()
}

func TestScanner(t *testing.T) {
	cases := []struct {
		in    string
		class Class // 0: accepted
		msg   string
	}{
		{`{"a":1,"b":[1,2.5e3,-0],"c":{"a":"x"},"d":true,"e":false}`, 0, ""},
		{` { } `, 0, ""},
		{`[]`, 0, ""},
		{`"\u00e9\ud83d\ude00"`, 0, ""},
		{`{"a":1,"a":2}`, Duplicate, `duplicate key "a"`},
		{`{"a":1,"\u0061":2}`, Duplicate, `duplicate key "a"`},
		{`{"a":{"b":1,"b":2}}`, Duplicate, `duplicate key "b"`},
		{`{"a":{"b":1},"b":{"b":1}}`, 0, ""}, // the same key in sibling objects
		{`{"a":1,"A":2}`, 0, ""},             // keys are exact, not case-folded
		{`{"a":null}`, WrongType, "got null"},
		{`1e400`, NonFinite, "overflows float64"},
		{`-1e400`, NonFinite, "overflows float64"},
		{`1e-400`, 0, ""}, // underflows to 0, as strconv and encoding/json read it
		{`01`, Syntax, "trailing data"},
		{`1.`, Syntax, "bad number"},
		{`-`, Syntax, "bad number"},
		{`+1`, Syntax, "expected a value"},
		{`.5`, Syntax, "expected a value"},
		{`NaN`, Syntax, "expected a value"},
		{`"a` + "\x01" + `"`, Syntax, "control character"},
		{"\"\xff\"", Syntax, "not valid UTF-8"},
		{"\"\\u00e9\xff\"", Syntax, "not valid UTF-8"},
		{`"\ud800"`, Syntax, "lone surrogate"},
		{`"\udc00"`, Syntax, "lone surrogate"},
		{`"\x"`, Syntax, "bad escape"},
		{`{"a" 1}`, Syntax, "expected ':'"},
		{`{1:1}`, Syntax, "expected a key"},
		{`{"a":1,}`, Syntax, "expected a key"},
		{`[1,]`, Syntax, "expected a value"},
		{`[1 2]`, Syntax, "expected ',' or ']'"},
		{`{"a":1`, Syntax, "unexpected end of input"},
		{`{} {}`, Syntax, "trailing data"},
		{`tru`, Syntax, "bad literal"},
		{``, Syntax, "unexpected end of input"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			err := scanAll(c.in)
			if c.class == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if !json.Valid([]byte(c.in)) {
					t.Fatalf("accepted what encoding/json calls invalid")
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Class != c.class || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want class %d containing %q", err, c.class, c.msg)
			}
		})
	}
}

// TestObjectKeysReleased checks that an object's keys are forgotten when it
// ends, also when it ends in an error, so that a reused scanner does not
// report a key of an earlier record as a duplicate.
func TestObjectKeysReleased(t *testing.T) {
	var s Scanner
	for i := range 3 {
		s.Reset([]byte(`{"a":{"x":1},"b":{"x":2}}`))
		if err := walk(&s, 0); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		s.Reset([]byte(`{"a":1,"b":`))
		if err := walk(&s, 0); err == nil {
			t.Fatal("truncated object accepted")
		}
	}
	if len(s.keys) != 0 || len(s.ends) != 0 {
		t.Errorf("keys left: %q %v", s.keys, s.ends)
	}
}

// FuzzScanner checks that everything the scanner accepts is JSON that
// encoding/json accepts, with no key repeated in an object.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"c"}],"d":true}`, `{"a":1,"a":1}`, `[1e400]`, `"\ud83d\ude00"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if scanAll(in) != nil {
			return
		}
		if !json.Valid([]byte(in)) {
			t.Fatalf("accepted invalid JSON %q", in)
		}
		var v any
		if err := json.Unmarshal([]byte(in), &v); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
	})
}

// FuzzFloat checks that Float reads every number as strconv.ParseFloat
// does, bit for bit (its fast path for short integers included).
func FuzzFloat(f *testing.F) {
	for _, s := range []string{"0", "-0", "1", "-1", "123456789012345", "-999999999999999", "9007199254740993",
		"1234567890123456", "12345678901234567890", "0.1", "1e5", "-2.5E-3", "1e400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var s Scanner
		s.Reset([]byte(in))
		got, err := s.Float()
		if err != nil || s.End() != nil {
			return
		}
		want, perr := strconv.ParseFloat(strings.Trim(in, " \t\r\n"), 64) // JSON white space around
		if perr != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%q: %v (%b), ParseFloat %v (%b, %v)", in, got, math.Float64bits(got), want, math.Float64bits(want), perr)
		}
	})
}

// FuzzUnescape checks the string decoder shared with the wire decoder
// against encoding/json: a string both accept decodes to the same bytes, and
// a string json.Unmarshal refuses is refused.
func FuzzUnescape(f *testing.F) {
	for _, s := range []string{`a"`, `\n\t\"x"`, `\u00e9\ud83d\ude00"`, `\ud83d"`, `\u12"`, "\x01\"", `abc`, `\q"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		out, next, msg := Unescape(nil, []byte(body), 0)
		var want string
		if msg != "" {
			return // refusing more than encoding/json (lone surrogates) is allowed
		}
		if next < 1 || body[next-1] != '"' {
			t.Fatalf("%q: next %d is not after a closing quote", body, next)
		}
		if err := json.Unmarshal([]byte(`"`+body[:next]), &want); err != nil {
			t.Fatalf("%q: accepted %q, encoding/json refuses: %v", body, body[:next], err)
		}
		if utf8.Valid(out) && string(out) != want {
			t.Fatalf("%q: %q, encoding/json %q", body, out, want)
		}
	})
}
