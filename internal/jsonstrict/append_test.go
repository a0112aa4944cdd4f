package jsonstrict

import (
	"errors"
	"strconv"
	"testing"
)

// TestAppendString checks that every valid string is written as JSON the
// scanner reads back as the same string, spelt as strconv.Quote spells
// printable text, and that invalid UTF-8 is refused.
func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uo\te`, "é<&>", "tab\there\nnl\x00\x1f\x7f", "\u2028\u200b", "\U0001F600", "tag\U000E0001", "\uffff\U0010ffff"} {
		b, err := AppendString(nil, s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		var sc Scanner
		sc.Reset(b)
		got, err := sc.String()
		if err != nil || string(got) != s || sc.End() != nil {
			t.Errorf("%q written as %s, read back as %q (%v)", s, b, got, err)
		}
	}
	for _, s := range []string{"plain", `q"uo\te`, "é<&>", "\U0001F600"} {
		if b, _ := AppendString(nil, s); string(b) != strconv.Quote(s) {
			t.Errorf("%q: %s, strconv.Quote spells it %s", s, b, strconv.Quote(s))
		}
	}
	if _, err := AppendString(nil, "x\xffy"); !errors.Is(err, ErrInvalidUTF8) {
		t.Errorf("invalid UTF-8: %v", err)
	}
}
